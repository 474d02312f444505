"""The built-in scenarios reproduce the seeds' outcomes through the engine."""

from __future__ import annotations

import os

import pytest

import scenarios
from engine import Decision, Param, ScriptedPolicy, Tool
from engine.sessions.run import new_run


def run_to_end(scenario: str, policy: str | None = None, task: str | None = None, **kwargs):
    run = new_run(scenarios.get(scenario), task, policy, save=False, **kwargs)
    run.engine.run()
    return run


def test_an_exit_tool_names_its_answer_parameter_once():
    reason = Param("reason", description="Why.")
    tool = Tool.exit("hand_to_human", "Hands over.", reason, outcome="handed_off")
    assert tool == Tool("hand_to_human", "Hands over.", (reason,), kind="exit", outcome="handed_off", answer_param="reason")
    assert Tool.exit("finish", "Ends.", Param("answer")).outcome == "answer"


def test_library_good_answers_2_after_4_steps():
    run = run_to_end("library", "good")
    end = run.engine.state.ended
    assert (end.outcome, end.answer, end.step) == ("answer", "2", 4)
    assert [o.text for o in run.engine.state.history[2].observations] == ["2"]


def test_library_hallucinating_recovers_in_5_steps():
    run = run_to_end("library", "hallucinating")
    end = run.engine.state.ended
    assert (end.outcome, end.answer, end.step) == ("answer", "2", 5)
    first = run.engine.state.history[0].observations[0]
    assert first.error and not first.executed
    assert "web_search" in first.text
    for tool in ("catalog", "loans", "calc"):
        assert tool in first.text


def test_library_stuck_is_stopped_for_repetition_at_step_2():
    run = run_to_end("library", "stuck")
    end = run.engine.state.ended
    assert (end.outcome, end.step) == ("stopped", 2)
    assert "repetition" in end.reason
    assert run.engine.state.tool_calls == {"catalog": 1}


@pytest.mark.parametrize(
    "action, expected",
    [
        ('calc[__import__("os").getcwd()]', "ValueError"),
        ("calc[1/0]", "ZeroDivisionError"),
        ("catalog[Missing Book]", "KeyError"),
    ],
)
def test_library_hostile_arguments_give_error_observations(monkeypatch, action, expected):
    touched = []
    monkeypatch.setattr(os, "getcwd", lambda: touched.append("getcwd") or "/")
    policy = ScriptedPolicy("hostile", lambda view: f"Thought: try\nAction: {action}" if view.step == 1 else "Final Answer: x")
    run = new_run(scenarios.get("library"), None, policy, save=False)
    run.engine.step()
    observation = run.engine.state.history[0].observations[0]
    assert observation.error
    assert observation.text.startswith("ERROR: " + expected)
    assert touched == []


def test_support_return_approved_opens_r1_in_3_steps():
    run = run_to_end("support", task="return-1187", approve="all")
    end = run.engine.state.ended
    assert (end.outcome, end.step) == ("answer", 3)
    assert "R-1" in end.answer
    assert run.world.requests == ["R-1 for 1187"]


def test_support_return_approved_by_the_operator():
    run = new_run(scenarios.get("support"), "return-1187", save=False)
    assert run.engine.run() == "awaiting_approval"
    pending = run.engine.state.pending
    assert (pending.tool, pending.args, pending.reason) == ("open_return_request", {"order_id": "1187"}, "irreversible tool")
    assert run.world.requests == []
    run.engine.approve()
    assert run.engine.run() == "ended"
    assert "R-1" in run.engine.state.ended.answer


def test_support_return_rejected_opens_nothing_and_the_policy_reads_why():
    run = new_run(scenarios.get("support"), "return-1187", save=False)
    run.engine.run()
    run.engine.reject("the customer already got a replacement")
    run.engine.run()
    end = run.engine.state.ended
    assert run.world.requests == []
    assert run.engine.state.tool_calls.get("open_return_request") is None
    assert "the customer already got a replacement" in run.engine.state.history[1].observations[0].text
    assert "the customer already got a replacement" in end.answer


def test_support_return_whose_status_check_was_rejected_says_so_instead_of_not_delivered():
    from engine.core.events import RuleInfo

    run = new_run(scenarios.get("support"), "return-1187", save=False, rules=[RuleInfo(tool="get_order_status", effect="ask")])
    assert run.engine.run() == "awaiting_approval"
    run.engine.reject("it was delivered, but do not look it up")
    run.engine.run()
    end = run.engine.state.ended
    assert end.outcome == "answer"
    assert "not delivered" not in end.answer
    assert "could not check order 1187" in end.answer and "do not look it up" in end.answer
    assert run.world.requests == []


def test_support_return_answers_only_from_the_request_it_opened():
    """Another policy's step in between (here a look at order 1042) is not a request number."""
    run = new_run(scenarios.get("support"), "return-1187", save=False, approve="all")
    scripted = run.engine.policy
    run.engine.step()
    run.engine.swap_policy(ScriptedPolicy("other", lambda view: Decision.act("a look", "get_order_status", order_id="1042")))
    run.engine.step()
    run.engine.swap_policy(scripted)
    run.engine.run()
    end = run.engine.state.ended
    assert "1042" not in end.answer, end.answer
    assert end.answer.startswith("I opened request R-1 to return 1187")
    assert run.world.requests == ["R-1 for 1187"]


def test_support_courier_is_stopped_for_repetition_at_step_2():
    run = run_to_end("support", task="courier-1042")
    end = run.engine.state.ended
    assert (end.outcome, end.step) == ("stopped", 2)
    assert "repetition" in end.reason
    assert run.engine.state.tool_calls == {"estimate_delivery": 1}


def test_support_courier_without_the_brake_hits_the_5_step_cap():
    run = run_to_end("support", task="courier-1042", repetition_threshold=None)
    end = run.engine.state.ended
    assert (end.outcome, end.step) == ("stopped", 5)
    assert "steps budget reached: 5 of 5" in end.reason
    assert run.engine.state.tool_calls == {"estimate_delivery": 5}


def test_support_compensation_hands_off_at_step_2_without_executing():
    run = run_to_end("support", task="compensation-1042")
    end = run.engine.state.ended
    assert (end.outcome, end.step) == ("handed_off", 2)
    assert "compensation for 1042" in end.reason
    assert "hand_to_human" not in run.engine.state.tool_calls
    assert all(e.tool != "hand_to_human" for e in run.engine.events if e.type == "observation")


@pytest.mark.parametrize("policy", ["arithmetic", "reader"])
def test_calculator_gives_291(policy):
    run = run_to_end("calculator", policy)
    assert run.engine.state.ended.answer == "291"


def test_every_builtin_scenario_and_policy_ends_with_a_reason():
    for name in scenarios.names():
        scenario = scenarios.get(name)
        for policy in scenario.policies:
            for task in list(scenario.tasks)[:3]:
                run = run_to_end(name, policy, task, approve="all")
                assert run.engine.ended, (name, policy, task)
                assert run.engine.state.ended.reason


def test_scenario_from_a_file_path(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "from engine import Scenario, Task, ScriptedPolicy, Decision\n"
        "class W:\n    tools = []\n"
        "SCENARIO = Scenario(name='mine', description='d', tasks={'t': Task('t', 'hi')},\n"
        "    policies={'p': lambda w, t: ScriptedPolicy('p', lambda v: Decision.final('', 'ok'))},\n"
        "    make_world=lambda task, options: W())\n"
    )
    scenario = scenarios.get(str(path))
    run = new_run(scenario, None, None, save=False)
    run.engine.run()
    assert run.engine.state.ended.answer == "ok"


def test_unknown_scenario_names_the_real_ones():
    with pytest.raises(scenarios.ScenarioError, match="support"):
        scenarios.get("nope")
