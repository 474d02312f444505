"""Gemini CLI (the real program, .agents) steered through the gateway's Gemini wire, offline.

Gemini CLI first asks its model router (`:generateContent`, JSON output, no tools), then
streams its turns (`:streamGenerateContent?alt=sse`) with `functionCall` and
`functionResponse` parts and its key as `x-goog-api-key`; the gateway's upstream is
tests/support/fake_gemini.py. Its shell call (`run_shell_command`) is held: rejected with a reason,
the model reads the reason and the command never runs; approved, the file exists; edited,
the edited command runs and the transcript shows both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.answers import Answer
from tests.support import cli_agents
from tests.support.fake_gemini import FakeGemini, Turn
from tests.support.gateway_harness import Operator, gateway


@pytest.fixture(autouse=True)
def _installed() -> None:
    if not (cli_agents.AGENTS / "gemini").exists():
        pytest.fail(f"Gemini CLI is not installed: {cli_agents.INSTALL} (.ci/run does)")

KEY = "gemini-agent-key-0123456789"
WRITE = {"command": "echo hello > note.txt", "description": "Write hello to note.txt"}
TURNS = [Turn(text="I'll write the note.", calls=[("run_shell_command", WRITE)]), Turn(text="Done with the note.")]


def _responses(body) -> list[dict]:
    return [p["functionResponse"] for c in body["contents"] for p in c.get("parts", []) if "functionResponse" in p]


def steer(tmp_path: Path, *answers) -> tuple[FakeGemini, Path, str]:
    """Gemini CLI on one task through a gateway in front of the fake; `answers` answer its held calls."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with FakeGemini(TURNS) as fake, gateway(fake, tmp_path, wire="gemini", rules=[]) as (gw, server):
        operator = Operator(gw, *answers)
        env = cli_agents.gemini_home(home, f"http://127.0.0.1:{server.port}", KEY)
        done = cli_agents.run(cli_agents.gemini_argv("Write hello to note.txt"), home, work, env)
        operator.join()
    assert done.returncode == 0, done.stdout + done.stderr
    assert operator.seen == ["run_shell_command"] * len(answers)
    router = [r for r in fake.requests if r[0].endswith(":generateContent")]
    assert router and "tools" not in router[0][2], "the model router's request passed"
    return fake, work, done.stdout


def test_a_rejected_shell_call_never_runs_and_the_model_reads_why(tmp_path):
    fake, work, out = steer(tmp_path, lambda gw: gw.answer(Answer.reject("not in this folder")))
    assert not (work / "note.txt").exists()
    (answer,) = _responses(fake.requests[-1][2])
    assert "not in this folder" in str(answer["response"])
    assert "Done with the note." in out


def test_an_approved_shell_call_runs(tmp_path):
    fake, work, out = steer(tmp_path, lambda gw: gw.answer(Answer.approve()))
    assert (work / "note.txt").read_text() == "hello\n"
    assert len(_responses(fake.requests[-1][2])) == 1


def test_an_edited_shell_call_runs_as_edited_and_the_transcript_shows_both(tmp_path):
    fake, work, out = steer(tmp_path, lambda gw: gw.answer(Answer.edit({**WRITE, "command": "echo edited > note.txt"})))
    assert (work / "note.txt").read_text() == "edited\n"
    (call,) = [p["functionCall"] for c in fake.requests[-1][2]["contents"] for p in c.get("parts", []) if "functionCall" in p]
    assert call["args"]["command"] == "echo edited > note.txt"
    transcripts = "".join(p.read_text() for p in tmp_path.glob("gateway*.jsonl"))
    assert "echo hello > note.txt" in transcripts and "echo edited > note.txt" in transcripts


def test_the_runs_open_in_show_replay_and_export(tmp_path):
    steer(tmp_path, lambda gw: gw.answer(Answer.approve()))
    out = cli_agents.shown_everywhere(sorted(tmp_path.glob("gateway*.jsonl")))
    assert "run_shell_command" in out and "echo hello > note.txt" in out
