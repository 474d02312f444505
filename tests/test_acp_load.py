"""Resume of an ACP run with a real agent's session/load: claude-agent-acp 0.23.1 and codex-acp 0.16.0
(each advertises loadSession) start again, load the session the header names, and the operator's
follow-up reaches the model with the conversation before it. The run is left with the agent's
answer held in the cockpit (`agent.answer`), then resumed as `run --resume` does (`resume_acp_run`).
Gemini CLI 0.61.0 advertises loadSession too, and loads or refuses ("No previous sessions found for
this project.") depending on the machine, its chat file on disk either way: a refusal is one line."""

from __future__ import annotations

import json
from pathlib import Path

from engine.acp.run import resume_acp_run
from engine.acp.tools import ANSWER
from engine.stored.transcript import read_transcript
from tests.support.acp_harness import claude_agent, codex_agent, gemini_agent, open_run


def _left_with_its_answer_held(agent):
    run = open_run(agent, "Say something", interactive=True)
    try:
        assert run.engine.run() == "awaiting_approval" and run.engine.state.pending.tool == ANSWER
        assert run.engine.policy.agent.capabilities.load_session
    finally:
        run.close()
    return run.path


def _resumed_with_a_follow_up(agent, path):
    """The run resumed; the held answer rejected with a follow-up; the requests the model got since."""
    served = len(agent.fake.requests)
    again = resume_acp_run(read_transcript(path), env=agent.env, log_path=agent.work.parent / "again.log", interactive=True)
    engine = again.engine
    try:
        assert engine.status == "awaiting_approval" and engine.state.pending.tool == ANSWER
        engine.reject("Say more")
        assert engine.run() == "awaiting_approval" and engine.state.pending.tool == ANSWER
        engine.approve()
        assert engine.run() == "ended"
    finally:
        again.close()
    saved = read_transcript(path)
    assert saved.events[-1].type == "run_ended" and saved.events[-1].outcome == "answer"
    assert saved.header.options["session"] == again.engine.policy.agent.session_id
    return agent.fake.requests[served:]


def test_claude_agent_acp_loads_its_session_on_resume():
    from tests.support.fake_anthropic import Turn

    with claude_agent([Turn(text="First answer.")]) as agent:
        path = _left_with_its_answer_held(agent)
        requests = _resumed_with_a_follow_up(agent, path)
    conversation = [m for m in [r for r in requests if "messages" in r[2]][-1][2]["messages"]]
    texts = [(m["role"], json.dumps(m["content"])) for m in conversation]
    assert any(role == "user" and "Say something" in text for role, text in texts)
    assert any(role == "assistant" and "First answer." in text for role, text in texts)
    assert texts[-1][0] == "user" and "Say more" in texts[-1][1]


def test_codex_acp_loads_its_session_on_resume():
    from tests.support.fake_responses import Turn

    with codex_agent([Turn(text="First answer.")]) as agent:
        path = _left_with_its_answer_held(agent)
        requests = _resumed_with_a_follow_up(agent, path)
    said = [(item.get("role"), json.dumps(item.get("content"))) for item in requests[-1][2]["input"] if item.get("type") == "message"]
    assert [role for role, _ in said][-3:] == ["user", "assistant", "user"]
    assert "Say something" in said[-3][1] and "First answer." in said[-2][1] and "Say more" in said[-1][1]


def test_gemini_cli_loads_its_session_or_refuses_the_load_in_one_line():
    """Gemini CLI 0.61.0 loads its session on some machines and refuses it on others ("No previous
    sessions found for this project.") with the same chat file on disk: either way the resume says
    what happened, and a session loaded takes the follow-up with the conversation before it."""
    from engine.acp.connection import AgentStartError
    from tests.support.fake_gemini import Turn

    with gemini_agent([Turn(text="First answer.")]) as agent:
        path = _left_with_its_answer_held(agent)
        chats = [f.read_text() for f in Path(agent.env["HOME"]).glob(".gemini/tmp/*/chats/session-*")]
        assert any("Say something" in text and "First answer." in text for text in chats)  # kept on disk
        try:  # one resume: the agent has loaded a session and refused the next load of it
            requests = _resumed_with_a_follow_up(agent, path)
        except AgentStartError as exc:
            assert str(exc).startswith("the agent refused session/load: ") and "\n" not in str(exc)
            return
    said = json.dumps(requests[-1][2].get("contents"))
    assert said.index("Say something") < said.index("First answer.") < said.index("Say more")
