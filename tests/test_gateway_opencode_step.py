"""The real opencode (pinned in .agents, as .ci/run installs it), started for the operator by the
gateway in step mode against the fake model: its title request, sent without tools beside the
held main request, is passed through and noted; the held run is never aborted; each model turn
waits for the operator's step and the shell call for the approval; the call runs once. (A
title request sent before the main one has no run beside it: it is a run of its own, answered.)"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from engine.core.answers import Answer
from engine.gateway.agents import AgentChild, agent_launch
from engine.stored.transcript import read_transcript
from tests.support.fake_openai import FakeOpenAI, call, say
from tests.support.gateway_harness import gateway
from tests.support.waiting import wait_for

OPENCODE = Path(__file__).resolve().parent.parent / ".agents" / "node_modules" / ".bin" / "opencode"
SHELL = {"command": "echo hello > note.txt", "description": "Write hello to note.txt"}


def turn(request):
    if not request.body.get("tools"):
        return say("Write a note")
    if not any(m.get("role") == "tool" for m in request.messages):
        return call("bash", content="I'll write the note.", **SHELL)
    return say("I wrote hello to note.txt.")


def test_opencode_in_step_mode_with_its_title_requests_runs_to_its_answer(tmp_path: Path) -> None:
    if not OPENCODE.exists():
        pytest.fail(f"{OPENCODE} is not installed (.ci/run installs it)")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "opencode.json").write_text(json.dumps({"permission": {"bash": "allow", "edit": "allow"}}))
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step", token="run-token", rules=[]) as (gw, server):
        fake.add(*[turn] * 20)
        environ = {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"}
        launch = agent_launch(
            [str(OPENCODE), "run", "Write hello to note.txt", "-m", "agent-tui/m"],
            host=server.host, port=server.port, token="run-token", folder=tmp_path / "config", environ=environ, model="m",
        )
        output: list[str] = []
        child = AgentChild(launch, output.append, cwd=work)
        answered: list[str] = []
        stop = threading.Event()

        def operator() -> None:  # steps each held request, approves each held call
            while not stop.is_set():
                for run in gw.open_runs():
                    status = gw.status(run)
                    if status == "request held":
                        gw.step(run)
                    elif status == "awaiting_approval":
                        answered.append(run.engine.state.pending.tool)
                        gw.answer(Answer.approve(), run=run)
                time.sleep(0.02)

        thread = threading.Thread(target=operator, daemon=True)
        thread.start()
        child.start()
        try:
            wait_for(child.exited.is_set, "opencode to finish", timeout=150)
        finally:
            stop.set()
            child.stop()
        assert child.returncode == 0, "\n".join(output)
        assert (work / "note.txt").read_text() == "hello\n"
        assert answered == ["bash"]
        titles = [r for r in fake.requests if not r.body.get("tools")]
        assert titles, "opencode sent no title request"
        assert [r.ended.outcome if r.ended else None for r in gw.runs] == ["answer"] * len(gw.runs), "a run was aborted"
    transcripts = [read_transcript(r.path) for r in gw.runs]
    main = [t for t in transcripts if t.header.tools]
    assert len(main) == 1, "the main conversation is one run"
    side = [t for t in transcripts if not t.header.tools]
    notes = [e.text for e in main[0].events if e.type == "observation" and e.index == -1]
    noted = sum("a side request without tools" in n for n in notes)
    assert noted + len(side) == len(titles), "each title request is a side note, or (sent before the main one) a run of its own"
