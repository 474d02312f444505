"""A real agent's shell command in an ACP run (Gemini CLI 0.61.0, Claude Code through
claude-agent-acp 0.23.1, Codex through codex-acp 0.16.0, on loopback fake models): it waits for
the agent's permission request, runs once approved, and the agent's own call is recorded with
its result; an abort mid-turn cancels the agent and the command never runs."""

from __future__ import annotations

import pytest

from engine.acp.tools import CALL, permission_tool
from tests.support import fake_anthropic, fake_gemini, fake_responses
from tests.support.acp_harness import approving, claude_agent, codex_agent, drive, gemini_agent, open_run

AGENTS = {
    "gemini": (gemini_agent, [fake_gemini.Turn(text="I'll run it.", calls=[("run_shell_command", {"command": "echo hi > made.txt", "description": "make"})]),
                              fake_gemini.Turn(text="Done.")]),
    "claude": (claude_agent, [fake_anthropic.Turn(text="I'll run it.", tool_uses=[("Bash", {"command": "echo hi > made.txt", "description": "make"})]),
                              fake_anthropic.Turn(text="Done.")]),
    "codex": (codex_agent, [fake_responses.Turn(text="I'll run it.", calls=[("shell_command", {"command": "echo hi > made.txt"})]),
                            fake_responses.Turn(text="Done.")]),
}


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_command_waits_for_its_permission_and_runs_once_approved(name):
    agent_of, turns = AGENTS[name]
    seen = []
    with agent_of(turns) as agent:
        run = open_run(agent, "Make made.txt")
        asked = drive(run, approving(agent.work / "made.txt", seen))
        assert [(tool, args["kind"]) for tool, args in asked] == [(permission_tool("execute"), "execute")]
        assert "echo hi > made.txt" in asked[0][1]["title"]
        assert seen == [False] and (agent.work / "made.txt").read_text() == "hi\n"
        assert any(e.tool == CALL and not e.error for e in run.engine.events if e.type == "observation")
        assert run.engine.state.ended.answer == "Done."


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_abort_mid_turn_cancels_the_agent_and_the_command_never_runs(name):
    agent_of, turns = AGENTS[name]
    with agent_of(turns) as agent:
        run = open_run(agent, "Make made.txt")
        drive(run, lambda engine: engine.abort("not now"))
        assert not (agent.work / "made.txt").exists()
        assert run.engine.state.ended.outcome == "aborted"
        assert run.engine.policy.agent.returncode is not None  # the agent process is gone
