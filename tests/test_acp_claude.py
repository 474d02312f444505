"""claude-agent-acp 0.23.1 (Claude Code 2.1.197 under it) as an ACP run against a loopback fake
model. It writes files itself, after its permission request: that request is the approval."""

from __future__ import annotations

import json

from engine.acp.tools import CALL, permission_tool
from tests.support.acp_harness import approving, claude_agent, drive, open_run
from tests.support.fake_anthropic import Turn

WRITE_NOTE = [Turn(text="I'll write the note.", tool_uses=[("Write", {"file_path": "note.txt", "content": "hello\n"})]),
              Turn(text="Done.")]


def test_a_write_waits_for_its_permission_and_is_written_once_approved():
    seen = []
    with claude_agent(WRITE_NOTE) as agent:
        run = open_run(agent, "Write hello to note.txt")
        asked = drive(run, approving(agent.work / "note.txt", seen))
        assert [tool for tool, _ in asked] == [permission_tool("edit")]
        assert asked[0][1]["title"] == "Write note.txt" and asked[0][1]["input"]["content"] == "hello\n"
        assert seen == [False]
        assert (agent.work / "note.txt").read_text() == "hello\n"
        observed = [e for e in run.engine.events if e.type == "observation"]
        assert observed[0].text == "allowed: answered 'Allow' (allow_once)"
        assert observed[1].tool == CALL and not observed[1].error
        assert run.engine.state.ended.answer == "Done."


def test_a_refused_write_is_not_written_and_the_model_reads_the_reason():
    with claude_agent(WRITE_NOTE) as agent:
        run = open_run(agent, "Write hello to note.txt")
        drive(run, lambda engine: engine.reject("call it notes.txt"))
        assert not (agent.work / "note.txt").exists()
        assert "call it notes.txt" in json.dumps([r for r in agent.fake.requests], default=str)
        failed = [e for e in run.engine.events if e.type == "observation" and e.tool == CALL]
        assert failed and failed[0].error and "after its permission was refused" not in failed[0].text
