"""Codex CLI (the real binary, .agents) steered through the gateway's Responses wire, offline.

Codex sends `POST /v1/responses` streamed, with `store: false` and its whole `input`
every turn; the gateway's upstream is tests/support/fake_responses.py. Its shell call
(`exec_command`) is held: rejected with a reason, the model reads the reason and the
command never runs; approved, the file exists; edited, the edited command runs and the
transcript shows both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.answers import Answer
from engine.gateway import Gateway
from tests.support import cli_agents
from tests.support.fake_responses import FakeResponses, Turn, function_outputs
from tests.support.gateway_harness import Operator, gateway
from tests.support.waiting import wait_for


@pytest.fixture(autouse=True)
def _installed() -> None:
    if not (cli_agents.AGENTS / "codex").exists():
        pytest.fail(f"Codex CLI is not installed: {cli_agents.INSTALL} (.ci/run does)")

KEY = "codex-agent-key-0123456789"
WRITE = {"cmd": "echo hello > note.txt"}
TURNS = [Turn(text="I'll write the note.", calls=[("exec_command", WRITE)]), Turn(text="Done with the note.")]


def steer(tmp_path: Path, *answers) -> tuple[FakeResponses, Gateway, Path, str]:
    """Codex on one task through a gateway in front of the fake; `answers` answer its held calls."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with FakeResponses(TURNS) as fake, gateway(fake, tmp_path, wire="responses", url=fake.url + "/v1", rules=[]) as (gw, server):
        operator = Operator(gw, *answers)
        env = cli_agents.codex_home(home, server.url, KEY)
        done = cli_agents.run(cli_agents.codex_argv("Write hello to note.txt"), home, work, env)
        operator.join()
    assert done.returncode == 0, done.stdout + done.stderr
    assert operator.seen == ["exec_command"] * len(answers)
    return fake, gw, work, done.stdout


def test_a_rejected_shell_call_never_runs_and_the_model_reads_why(tmp_path):
    fake, gw, work, out = steer(tmp_path, lambda gw: gw.answer(Answer.reject("not in this folder")))
    assert not (work / "note.txt").exists()
    last = fake.requests[-1][2]
    (answer,) = function_outputs(last)
    assert "not in this folder" in answer["output"]
    assert last["store"] is False
    assert "Done with the note." in out


def test_an_approved_shell_call_runs(tmp_path):
    fake, gw, work, out = steer(tmp_path, lambda gw: gw.answer(Answer.approve()))
    assert (work / "note.txt").read_text() == "hello\n"
    (answer,) = function_outputs(fake.requests[-1][2])
    assert "exited with code 0" in answer["output"]


def test_an_edited_shell_call_runs_as_edited_and_the_transcript_shows_both(tmp_path):
    fake, gw, work, out = steer(tmp_path, lambda gw: gw.answer(Answer.edit({"cmd": "echo edited > note.txt"})))
    assert (work / "note.txt").read_text() == "edited\n"
    (call,) = [i for i in fake.requests[-1][2]["input"] if i.get("type") == "function_call"]
    assert json.loads(call["arguments"]) == {"cmd": "echo edited > note.txt"}
    transcript = (tmp_path / "gateway.jsonl").read_text()
    assert "echo hello > note.txt" in transcript and "echo edited > note.txt" in transcript


def test_the_runs_open_in_show_replay_and_export(tmp_path):
    steer(tmp_path, lambda gw: gw.answer(Answer.approve()))
    out = cli_agents.shown_everywhere(sorted(tmp_path.glob("gateway*.jsonl")))
    assert "exec_command" in out and "echo hello > note.txt" in out


@pytest.mark.parametrize("answer", ["reject", "approve"])
def test_codex_shows_the_text_before_its_held_call_is_decided(tmp_path, answer):
    """The message before the shell call reaches Codex while the call is still held (the stream
    is taken up after the decision); rejected, the model's answer follows in the same response."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    output = tmp_path / "codex.out"
    with FakeResponses(TURNS) as fake, gateway(fake, tmp_path, wire="responses", url=fake.url + "/v1", rules=[]) as (gw, server):
        env = cli_agents.codex_home(home, server.url, KEY)
        with cli_agents.started(cli_agents.codex_argv("Write hello to note.txt"), home, work, env, output) as agent:
            held = lambda: gw.engine is not None and gw.engine.status == "awaiting_approval"  # noqa: E731
            shown = lambda: "I'll write the note." in output.read_text(errors="replace")  # noqa: E731
            wait_for(lambda: held() and shown(), "the shell call held and Codex showing the text before it", timeout=120)
            gw.answer(Answer.reject("not in this folder") if answer == "reject" else Answer.approve())
            agent.wait(120)
    shown = output.read_text(errors="replace")
    assert agent.returncode == 0, shown
    assert (work / "note.txt").exists() == (answer == "approve")
    assert shown.count("I'll write the note.") == 1 and "Done with the note." in shown, shown
