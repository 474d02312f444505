"""A misbehaving ACP agent (tests/support/fake_acp_agent.py, on the SDK's agent side): each fault is a
clear note or error in the transcript, nothing the agent said is lost; a command runs through
agent-tui's terminal only once approved; cancel ends the agent's turn."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from engine.acp.run import new_acp_run
from engine.acp.tools import CALL, TERMINAL, permission_tool
from tests.support.acp_harness import drive

FAKE = Path(__file__).parent / "support" / "fake_acp_agent.py"


def _run(tmp_path, behaviour, **kwargs):
    work = tmp_path / "work"
    work.mkdir()
    return new_acp_run([sys.executable, str(FAKE), behaviour], "do it", cwd=work, out=tmp_path / "run.jsonl",
                       log_path=tmp_path / "agent.log", **kwargs), work


def _thoughts(run):
    return "\n".join(e.thought for e in run.engine.events if e.type == "decision")


def test_a_command_runs_through_agent_tui_terminal_once_approved(tmp_path):
    run, work = _run(tmp_path, "terminal")
    seen = []

    def approve(engine):
        seen.append((work / "made.txt").exists())
        engine.approve()

    asked = drive(run, approve)
    assert [tool for tool, _ in asked] == [TERMINAL]
    assert asked[0][1] == {"command": "sh", "args": ["-c", "echo made > made.txt; echo done"]}
    assert seen == [False] and (work / "made.txt").read_text() == "made\n"
    assert run.engine.state.ended.answer == "exit 0: done"


def test_an_edited_command_runs_as_edited_and_a_rejected_one_not_at_all(tmp_path):
    run, work = _run(tmp_path, "terminal")
    drive(run, lambda engine: engine.modify({"command": "sh", "args": ["-c", "echo edited"]}))
    assert not (work / "made.txt").exists() and run.engine.state.ended.answer == "exit 0: edited"
    run, work = _run(tmp_path / "again" if (tmp_path / "again").mkdir() is None else tmp_path, "terminal")
    drive(run, lambda engine: engine.reject("no shell today"))
    assert not (work / "made.txt").exists()
    assert any(e.text == "REJECTED by the operator: no shell today" for e in run.engine.events if e.type == "observation")


def test_unknown_methods_are_noted_and_answered_method_not_found(tmp_path):
    run, _ = _run(tmp_path, "unknown")
    drive(run, lambda engine: engine.approve())
    thoughts = _thoughts(run)
    assert "the agent sent an unknown request 'made/up' (answered: method not found)" in thoughts
    assert "the agent sent an unknown notification 'made/up/note' (ignored)" in thoughts
    assert run.engine.state.ended.answer.startswith("refused:") and run.engine.state.ended.answer.endswith("still here")


def test_lines_that_are_not_json_rpc_are_noted_and_the_rest_kept(tmp_path, capfd):
    run, _ = _run(tmp_path, "malformed")
    drive(run, lambda engine: engine.approve())
    thoughts = _thoughts(run)
    assert "the agent sent a line that is not JSON (not passed on)" in thoughts  # starts like JSON: to the SDK
    assert "the agent printed text that is not JSON-RPC on stdout; it went to its log" in thoughts  # its guard's
    assert "the agent sent a message that is not JSON-RPC (ignored)" in thoughts
    assert run.engine.state.ended.answer == "before after"
    assert "Traceback" not in capfd.readouterr().err


def test_a_flood_of_updates_loses_nothing(tmp_path):
    run, _ = _run(tmp_path, "flood")
    drive(run, lambda engine: engine.approve())
    decisions = [e for e in run.engine.events if e.type == "decision"]
    said = decisions[0].thought
    assert said.split() == [str(n) for n in range(5000)]
    observed = [e for e in run.engine.events if e.type == "observation" and e.tool == CALL]
    assert len(observed) == 1 and '"last"' in observed[0].text


def test_a_crash_mid_call_says_the_outcome_is_unknown_and_the_run_stops(tmp_path):
    run, _ = _run(tmp_path, "crash")
    drive(run, lambda engine: engine.approve())
    unknown = [e for e in run.engine.events if e.type == "observation" and e.tool == CALL]
    assert len(unknown) == 1 and unknown[0].text.startswith("ERROR: UNKNOWN OUTCOME") and unknown[0].args["title"] == "delete the cache"
    ended = run.engine.state.ended
    assert ended.outcome == "stopped" and "exited with code 3" in ended.reason and "cannot be restored" in ended.reason
    from engine.stored.transcript import read_transcript

    assert read_transcript(run.path).events[-1].type == "run_ended"


def test_a_call_run_after_its_permission_was_refused_is_recorded_and_said(tmp_path):
    run, _ = _run(tmp_path, "anyway")
    answers = iter([lambda engine: engine.reject("keep build/"), lambda engine: engine.abort("enough")])
    asked = drive(run, lambda engine: next(answers)(engine))
    assert [tool for tool, _ in asked] == [permission_tool("execute")] * 2  # asked again after the reason was sent
    call = [e for e in run.engine.events if e.type == "observation" and e.tool == CALL]
    assert "the agent ran this call after its permission was refused" in call[0].text and "removed build/" in call[0].text
    assert "the agent ran this call after its permission was refused (rm -rf build)" in _thoughts(run)


def test_a_permission_is_answered_once_with_the_option_the_operator_chose(tmp_path):
    run, _ = _run(tmp_path, "anyway")
    drive(run, lambda engine: engine.approve())
    assert run.engine.state.ended.answer.startswith("answered selected")


def test_cancel_while_the_agent_works_ends_its_turn_and_the_run_can_go_on(tmp_path):
    run, _ = _run(tmp_path, "wait", interactive=True)
    policy = run.engine.policy
    done = threading.Event()

    def step():
        run.engine.run()
        done.set()

    worker = threading.Thread(target=step)
    worker.start()
    deadline = time.monotonic() + 30
    while not policy._calls and time.monotonic() < deadline:  # the agent's call has started
        time.sleep(0.02)
    policy.cancel()
    assert done.wait(30)
    worker.join()
    failed = [e for e in run.engine.events if e.type == "policy_error"]
    assert failed and "cancelled (session/cancel)" in failed[0].message
    assert run.engine.status == "policy_failed"
    interrupted = [e for e in run.engine.events if e.type == "observation" and e.tool == CALL]
    assert interrupted and interrupted[0].error and "cancelled" in interrupted[0].text
    run.close()


def test_a_rule_allows_a_permission_once_and_approve_always_answers_allow_always(tmp_path):
    from engine.core.events import RuleInfo

    run, _ = _run(tmp_path, "ask", rules=[RuleInfo(tool="agent.permission.*", effect="allow")])
    assert drive(run, lambda engine: engine.approve()) == []
    assert run.engine.state.ended.answer == "once"
    run, _ = _run(tmp_path / "always" if (tmp_path / "always").mkdir() is None else tmp_path, "ask")
    drive(run, lambda engine: engine.approve(always=True))
    assert run.engine.state.ended.answer == "always"


def test_the_plan_is_shown_and_the_usage_update_is_the_step_usage(tmp_path):
    run, _ = _run(tmp_path, "ask")
    drive(run, lambda engine: engine.approve())
    first = next(e for e in run.engine.events if e.type == "decision")
    assert "Plan:\n  [completed] look around\n  [pending] clean up" in first.thought
    assert first.usage.input_tokens == 1234 and not first.usage.estimated


def test_approve_always_allows_that_kind_of_the_agent_tools_only(tmp_path):
    run, _ = _run(tmp_path, "ask")
    drive(run, lambda engine: engine.approve(always=True))
    rules = [r.tool for r in run.engine.state.rules if r.source == "approve always"]
    assert rules == [permission_tool("delete")]
    from engine.core.approvals import decide_effect

    tools = run.engine.tools
    assert decide_effect(run.engine.state.rules, tools[permission_tool("delete")], {}, {})[0] == "allow"
    assert decide_effect(run.engine.state.rules, tools[permission_tool("execute")], {}, {})[0] == "ask"


def test_the_time_budget_cancels_an_agent_turn_that_outlasts_it(tmp_path):
    from engine.core.events import Budget

    run, _ = _run(tmp_path, "wait", budget=Budget(max_seconds=1.0))
    drive(run, lambda engine: engine.approve())
    assert "the time budget ran out while the agent worked: session/cancel sent" in _thoughts(run)
    assert run.engine.state.ended.outcome == "stopped"


def test_an_edited_permission_is_refused_and_its_arguments_go_to_the_agent(tmp_path):
    run, _ = _run(tmp_path, "ask")
    answers = iter([lambda engine: engine.modify({**engine.state.pending.args, "input": {"path": "tmp/old/"}}),
                    lambda engine: engine.abort("enough")])
    asked = drive(run, lambda engine: next(answers)(engine))
    assert [tool for tool, _ in asked] == [permission_tool("delete")] * 2  # asked again, after the edit was sent
    refused = next(e for e in run.engine.events if e.type == "observation")
    assert refused.error and "cannot carry edited arguments" in refused.text
    assert "the operator edited its arguments to" in "\n".join(run.engine.policy._reasons_sent)
