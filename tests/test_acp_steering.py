"""Steering an ACP run between the agent's turns (tests/support/fake_acp_agent.py): the operator's
take-over is the agent's next prompt, recorded as the operator's step."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from engine.acp.run import new_acp_run
from engine.acp.tools import ANSWER, PROMPT
from engine.core.policy import Decision

FAKE = Path(__file__).parent / "support" / "fake_acp_agent.py"


def _run(tmp_path, behaviour, env=None, **kwargs):
    work = tmp_path / "work"
    work.mkdir()
    return new_acp_run([sys.executable, str(FAKE), behaviour], "do it", cwd=work, out=tmp_path / "run.jsonl",
                       log_path=tmp_path / "agent.log", env=env, **kwargs)


def cancelled_turn(run) -> None:
    """Run until the agent's first turn is cancelled by the operator (the run is between turns)."""
    policy = run.engine.policy
    worker = threading.Thread(target=run.engine.run)
    worker.start()
    deadline = time.monotonic() + 30
    while not policy._calls and time.monotonic() < deadline:  # the agent's call has started
        time.sleep(0.02)
    policy.cancel()
    worker.join(30)
    assert run.engine.status == "policy_failed"


def test_the_operators_take_over_between_turns_is_the_agents_next_prompt(tmp_path):
    run = _run(tmp_path, "wait,echo", interactive=True)
    try:
        cancelled_turn(run)
        agent = run.engine.policy
        run.human.supply(Decision.act("", PROMPT, text="now say hello"))
        run.engine.swap_policy(run.human)
        run.engine.step()
        run.engine.swap_policy(agent)
        assert run.engine.run() == "awaiting_approval" and run.engine.state.pending.tool == ANSWER  # its answer, held
        run.engine.approve()
        assert run.engine.run() == "ended"
    finally:
        run.close()
    assert run.engine.state.ended.answer == "you said: now say hello"
    mine = [e for e in run.engine.events if e.type == "decision" and e.policy == "human"]
    assert [(a.tool, a.args) for a in mine[0].actions] == [(PROMPT, {"text": "now say hello"})]
    sent = [e for e in run.engine.events if e.type == "observation" and e.tool == PROMPT]
    assert sent and not sent[0].error


def test_a_prompt_while_the_agents_turn_is_open_is_refused(tmp_path):
    run = _run(tmp_path, "wait", interactive=True)
    try:
        tool = run.engine.tools[PROMPT]
        agent = run.engine.policy
        agent._turn_open = True  # as while the agent works
        from engine.core.tools import ToolError

        try:
            tool.fn(text="again")
        except ToolError as exc:
            assert "turn is still open" in str(exc)
        else:
            raise AssertionError("a prompt was sent in the middle of the agent's turn")
    finally:
        run.close()


def test_the_agents_modes_and_models_are_policies_to_swap_to(tmp_path):
    run = _run(tmp_path, "echo", env={"FAKE_ACP_MODES": "ask,code", "FAKE_ACP_MODELS": "small,big"})
    try:
        names = run.policy_names()
        assert [n for n in names if n.startswith(("mode:", "model:"))] == ["mode:ask", "mode:code", "model:small", "model:big"]
        run.engine.swap_policy(run.make_policy("mode:code"))
        run.engine.swap_policy(run.make_policy("model:big"))
        assert run.engine.run() == "ended"
    finally:
        run.close()
    assert run.engine.state.ended.answer == "you said: do it (mode code) (model big)"
    swaps = [(e.old, e.new) for e in run.engine.events if e.type == "policy_swapped"]
    assert swaps == [("acp", "acp mode:code"), ("acp mode:code", "acp mode:code model:big")]


def test_an_agent_that_offers_no_modes_or_models_offers_no_swap(tmp_path):
    run = _run(tmp_path, "echo")
    try:
        assert not [n for n in run.policy_names() if n.startswith(("mode:", "model:"))]
    finally:
        run.close()


def test_a_mode_the_agent_refuses_is_one_line(tmp_path):
    import pytest

    run = _run(tmp_path, "echo", env={"FAKE_ACP_MODES": "ask,broken"})
    try:
        with pytest.raises(ValueError, match="^the agent refused session/set_mode broken: Invalid params"):
            run.make_policy("mode:broken")
        assert run.engine.policy.name == "acp"
    finally:
        run.close()


def _stopped_between_turns(tmp_path, monkeypatch, load: str):
    """An interactive run left between turns (its first turn cancelled, then the cockpit quit)."""
    monkeypatch.setenv("FAKE_ACP_LOAD", load)
    monkeypatch.chdir(tmp_path)
    run = _run(tmp_path, "wait,echo", interactive=True)
    cancelled_turn(run)
    run.close()
    return tmp_path / "run.jsonl"


def test_the_session_id_is_in_the_transcript_and_resume_loads_the_session(tmp_path, monkeypatch, capsys):
    import json

    from tui.cli import main

    out = _stopped_between_turns(tmp_path, monkeypatch, load="1")
    header = json.loads(out.read_text().splitlines()[0])
    assert header["options"]["session"] == "s1"
    code = main(["run", "--resume", str(out), "--headless"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    ended = [json.loads(line) for line in out.read_text().splitlines() if '"run_ended"' in line]
    assert ended and ended[-1]["answer"].endswith("(loaded s1)") and "Continue with the task" in ended[-1]["answer"]
    assert "an old message of the session" not in out.read_text()  # the replayed history is the agent's, not a new turn


def test_resume_of_an_agent_without_session_load_is_refused_plainly(tmp_path, monkeypatch, capsys):
    from tui.cli import main

    out = _stopped_between_turns(tmp_path, monkeypatch, load="0")
    code = main(["run", "--resume", str(out), "--headless"])
    err = capsys.readouterr().err
    assert code == 2 and "does not offer session/load" in err.strip().splitlines()[-1] and "Traceback" not in err


def test_a_session_the_agent_cannot_load_says_the_agents_words(tmp_path, monkeypatch, capsys):
    from tui.cli import main

    out = _stopped_between_turns(tmp_path, monkeypatch, load="lost")
    code = main(["run", "--resume", str(out), "--headless"])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "the agent refused session/load: Internal error (No previous sessions found for this project.)" in last


def test_a_policy_flag_with_the_resume_of_an_acp_run_is_refused(tmp_path, monkeypatch, capsys):
    from tui.cli import main

    out = _stopped_between_turns(tmp_path, monkeypatch, load="1")
    code = main(["run", "--resume", str(out), "--policy", "human", "--headless"])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "--policy does not go with the resume of an ACP run" in last
