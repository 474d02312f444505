"""The real Claude Code (.agents, pinned; .ci/run installs it) steered through the gateway, offline:
its Bash call to write a file is held; rejected with a reason, the model (tests/support/fake_anthropic.py)
reads the reason and the command never runs; approved, the file exists; edited, the edited command
runs and the transcript shows both the command asked for and the one run."""

from __future__ import annotations

import json
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from engine.core.answers import Answer
from engine.gateway import Gateway
from engine.stored.transcript import read_transcript
from tests.support import cli_agents
from tests.support.fake_anthropic import FakeAnthropic, Turn, _tool_results
from tests.support.gateway_harness import gateway
from tests.support.waiting import wait_for

CLAUDE = Path(__file__).resolve().parent.parent / ".agents" / "node_modules" / ".bin" / "claude"
TOKEN = "gateway-token-for-claude-0123"
ASKED = {"command": "echo hello > note.txt", "description": "Write hello to note.txt"}
TASK = "Write hello to note.txt"
SETTINGS = {
    "ANTHROPIC_API_KEY": TOKEN, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
}


@pytest.fixture(autouse=True)
def _installed() -> None:
    if not CLAUDE.exists():
        pytest.skip(f"{CLAUDE} is not installed (.ci/run installs it: npm install --prefix .agents @anthropic-ai/claude-code@2.1.197)")


@contextmanager
def claude_through_gateway(tmp_path: Path, answer: Callable[[Gateway], None]) -> Iterator[tuple[FakeAnthropic, Gateway, Path, subprocess.CompletedProcess[str]]]:
    """Run `claude -p` against the gateway in front of the fake model; `answer` decides the held Bash call."""
    turns = [Turn(text="I'll write the note.", tool_uses=[("Bash", ASKED)]), Turn(text="Finished.")]
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path, wire="anthropic", rules=[], out=tmp_path / "claude.jsonl", mode="continue", token=TOKEN) as (gw, server):
        operator = threading.Thread(target=_answer_bash, args=(gw, answer), daemon=True)
        operator.start()
        env = {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.port}", **SETTINGS}
        done = cli_agents.run([str(CLAUDE), "-p", TASK, "--allowedTools", "Bash"], home, work, env)
        operator.join(30)
        yield fake, gw, work, done


def _answer_bash(gw: Gateway, answer: Callable[[Gateway], None]) -> None:
    wait_for(lambda: _bash_held(gw), "Claude Code's Bash call to be held", timeout=120)
    answer(gw)


def _bash_held(gw: Gateway) -> bool:
    engine = gw.engine
    return engine is not None and engine.status == "awaiting_approval" and engine.state.pending.tool == "Bash"


def _main_requests(fake: FakeAnthropic) -> list[dict[str, Any]]:
    return [body for path, _, body in fake.requests if path == "/v1/messages" and body.get("tools")]


def test_a_rejected_bash_call_never_runs_and_the_model_reads_the_reason(tmp_path: Path) -> None:
    with claude_through_gateway(tmp_path, lambda g: g.answer(Answer.reject("not today: write nothing"))) as (fake, gw, work, done):
        assert done.returncode == 0, done.stderr
        assert not (work / "note.txt").exists()
        asked_again = next(b for b in _main_requests(fake) if _tool_results(b))
        results = [block for m in asked_again["messages"] if isinstance(m["content"], list) for block in m["content"] if block.get("type") == "tool_result"]
        assert results[-1]["is_error"] is True and "not today: write nothing" in str(results[-1]["content"])
        assert "Finished." in done.stdout


def test_an_approved_bash_call_writes_the_file(tmp_path: Path) -> None:
    with claude_through_gateway(tmp_path, lambda g: g.answer(Answer.approve())) as (fake, gw, work, done):
        assert done.returncode == 0, done.stderr
        assert (work / "note.txt").read_text() == "hello\n"
        assert "Finished." in done.stdout


def test_an_edited_bash_call_runs_as_edited_and_the_transcript_shows_both(tmp_path: Path) -> None:
    edited = {**ASKED, "command": "echo edited > note.txt"}
    with claude_through_gateway(tmp_path, lambda g: g.answer(Answer.edit(edited))) as (fake, gw, work, done):
        assert done.returncode == 0, done.stderr
        assert (work / "note.txt").read_text() == "edited\n"
        events = [e for run in gw.runs if run.path is not None for e in read_transcript(run.path).events]
        decision = next(e for e in events if e.type == "decision" and e.actions)
        assert decision.actions[0].args["command"] == "echo hello > note.txt"
        ran = next(e for e in events if e.type == "observation" and e.index == 0 and e.executed)
        assert ran.args["command"] == "echo edited > note.txt"


def _streamed_json(output: Path) -> list[dict[str, Any]]:
    """The JSON lines Claude Code has printed so far (`--output-format stream-json`)."""
    lines = output.read_text(errors="replace").splitlines() if output.exists() else []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _text_deltas(printed: list[dict[str, Any]]) -> str:
    """The text Claude Code received as it streamed (its `stream_event` lines' text deltas)."""
    deltas = [e["event"]["delta"] for e in printed if e.get("type") == "stream_event" and e["event"].get("type") == "content_block_delta"]
    return "".join(d.get("text", "") for d in deltas if d.get("type") == "text_delta")


@pytest.mark.parametrize("answer", ["reject", "approve"])
def test_claude_code_shows_the_text_before_its_held_call_is_decided_then_the_answer(tmp_path: Path, answer: str) -> None:
    """The text (and thinking) before the Bash call reaches Claude Code while the call is still held;
    rejected, the model's answer asked again follows in the same message; either way Claude Code
    ends with the final answer."""
    turns = [Turn(text="I'll write the note.", tool_uses=[("Bash", ASKED)], thinking="Plan: one echo."), Turn(text="Finished.")]
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    output = tmp_path / "claude.out"
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path, wire="anthropic", rules=[], out=tmp_path / "claude.jsonl", mode="continue", token=TOKEN) as (gw, server):
        env = {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.port}", **SETTINGS}
        argv = [str(CLAUDE), "-p", TASK, "--allowedTools", "Bash", "--output-format", "stream-json", "--verbose", "--include-partial-messages"]
        with cli_agents.started(argv, home, work, env, output) as agent:
            shown = lambda: "I'll write the note." in _text_deltas(_streamed_json(output))  # noqa: E731
            wait_for(lambda: _bash_held(gw) and shown(), "the Bash call held and Claude Code showing the text before it", timeout=120)
            gw.answer(Answer.reject("not today: write nothing") if answer == "reject" else Answer.approve())
            agent.wait(120)
    printed = _streamed_json(output)
    assert agent.returncode == 0, output.read_text(errors="replace")
    assert (work / "note.txt").exists() == (answer == "approve")
    result = next(e for e in printed if e.get("type") == "result")
    assert result.get("is_error") is False and "Finished." in result["result"], result
    shown = _text_deltas(printed)
    assert shown.count("I'll write the note.") == 1 and shown.count("Finished.") == 1, shown
    uses = [b for e in printed if e.get("type") == "assistant" for b in e["message"]["content"] if b.get("type") == "tool_use"]
    assert len(uses) == (1 if answer == "approve" else 0), uses
