"""The engine's state machine: approvals, rules, budgets, brakes, failures as observations."""

from __future__ import annotations

import threading

import pytest

import scenarios
from engine import Budget, Decision, EngineError, HumanPolicy, PolicyError, RuleInfo, ScriptedPolicy
from engine.core.approvals import RulesError, load_rules
from engine.core.events import Action, Usage
from engine.sessions.run import new_run
from engine.core.state import fold
from tests.support.helpers import counting_run, types


def test_ordinary_tool_runs_without_approval():
    run = counting_run(Decision.act("t", "echo", text="hi"))
    assert run.engine.step() == "ready"
    assert run.world.calls == [("echo", {"text": "hi"})]
    assert types(run.engine.events) == ["decision", "observation"]


def test_irreversible_tool_waits_and_nothing_runs_before_approval():
    run = counting_run(Decision.act("t", "pay", amount=5))
    assert run.engine.step() == "awaiting_approval"
    assert run.world.calls == []
    assert run.engine.step() == "awaiting_approval"  # stepping again does not run it
    assert run.world.calls == []
    run.engine.approve()
    assert run.world.calls == [("pay", {"amount": 5})]
    assert types(run.engine.events) == ["decision", "approval_requested", "approval_decided", "observation"]


def test_approve_without_pending_is_an_engine_error():
    run = counting_run()
    with pytest.raises(EngineError):
        run.engine.approve()


def test_reject_feeds_the_reason_to_the_policy_and_runs_nothing():
    seen = []

    def policy(view):
        if view.step == 1:
            return Decision.act("pay", "pay", amount=5)
        seen.append(view.observations()[-1].text)
        return Decision.final("ok", "done")

    run = new_run(counting_run().scenario, "t", ScriptedPolicy("p", policy), save=False)
    run.engine.step()
    run.engine.reject("too expensive")
    run.engine.step()
    assert run.world.calls == []
    assert seen == ["REJECTED by the operator: too expensive"]


def test_modify_validates_then_runs_with_new_arguments():
    run = counting_run(Decision.act("t", "pay", amount=5))
    run.engine.step()
    with pytest.raises(ValueError, match="amount"):
        run.engine.modify({"amount": "lots"})
    assert run.engine.status == "awaiting_approval"
    run.engine.modify({"amount": "3"})
    assert run.world.calls == [("pay", {"amount": 3})]
    decided = [e for e in run.engine.events if e.type == "approval_decided"]
    assert decided[0].choice == "modify" and decided[0].args == {"amount": 3}


def test_approve_always_records_a_rule_and_stops_asking_for_that_tool():
    run = counting_run(
        Decision.act("t", "pay", amount=1), Decision.act("t", "pay", amount=2), Decision.act("t", "pay", amount=3)
    )
    run.engine.step()
    run.engine.approve(always=True)
    assert run.engine.step() == "ready"
    assert run.engine.step() == "ready"
    assert [c[1]["amount"] for c in run.world.calls] == [1, 2, 3]
    assert types(run.engine.events).count("approval_requested") == 1
    rules = fold(run.engine.header, run.engine.events).rules
    assert any(r.tool == "pay" and r.effect == "allow" for r in rules)


def test_abort_ends_the_run_and_runs_nothing():
    run = counting_run(Decision.act("t", "pay", amount=5))
    run.engine.step()
    run.engine.abort()
    assert run.engine.state.ended.outcome == "aborted"
    assert run.world.calls == []


def test_rules_deny_beats_ask_beats_allow():
    rules = [
        RuleInfo(tool="*", effect="allow"),
        RuleInfo(tool="echo", effect="ask"),
        RuleInfo(tool="echo", effect="deny", args={"text": "secret*"}),
    ]
    run = counting_run(Decision.act("t", "echo", text="secret plan"), Decision.act("t", "echo", text="fine"), rules=rules)
    run.engine.step()
    first = run.engine.state.history[0].observations[0]
    assert first.error and first.text.startswith("DENIED") and not first.executed
    assert run.engine.step() == "awaiting_approval"
    assert run.world.calls == []


def test_an_allow_rule_lets_an_irreversible_tool_run(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text('[[rule]]\ntool = "pay"\neffect = "allow"\nargs = { amount = "1*" }\n')
    rules = load_rules(path)
    run = counting_run(Decision.act("t", "pay", amount=12), Decision.act("t", "pay", amount=99), rules=rules)
    assert run.engine.step() == "ready"
    assert run.engine.step() == "awaiting_approval"
    assert run.world.calls == [("pay", {"amount": 12})]


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[rule]]\ntool = 'x'\neffect = 'maybe'\n", "effect"),
        ("[[rule]]\neffect = 'allow'\n", "tool"),
        ("rule = 3\n", "array"),
        ("[[rule\n", "TOML"),
    ],
)
def test_bad_rules_files_give_clear_errors(tmp_path, text, message):
    path = tmp_path / "r.toml"
    path.write_text(text)
    with pytest.raises(RulesError, match=message):
        load_rules(path)


def test_unknown_tool_lists_the_real_tools():
    run = counting_run(Decision.act("t", "teleport", where="moon"))
    run.engine.step()
    obs = run.engine.state.history[0].observations[0]
    assert obs.error and not obs.executed
    assert obs.text == "ERROR: tool 'teleport' does not exist, available: echo, pay, stop"


def test_missing_and_bad_arguments_become_observations():
    run = counting_run(Decision.act("t", "echo"), Decision.act("t", "pay", amount="x", extra=1))
    run.engine.step()
    run.engine.step()
    texts = [o.text for o in run.engine.state.history[0].observations + run.engine.state.history[1].observations]
    assert "missing argument 'text'" in texts[0]
    assert "unknown argument 'extra'" in texts[1] and "'amount': expected an integer" in texts[1]
    assert run.world.calls == []


@pytest.mark.parametrize(
    ("kind", "given", "got"),
    [
        ("integer", 3, 3), ("integer", 3.0, 3), ("integer", " 7 ", 7), ("integer", True, "expected an integer"),
        ("integer", 2.5, "expected an integer"), ("integer", "2.5", "expected an integer"),
        ("integer", float("inf"), "expected an integer"), ("integer", [1], "expected an integer"),
        ("number", 3, 3), ("number", 2.5, 2.5), ("number", " 2.5 ", 2.5), ("number", "4", 4.0),
        ("number", False, "expected a number"), ("number", "two", "expected a number"), ("number", None, "ok"),
    ],
)
def test_a_numeric_argument_is_read_from_a_number_or_its_text(kind, given, got):
    """An integer is an int, a whole float or an integer's text; a number is an int, a float or its
    text; a boolean is neither. The value keeps its type where it already has one (3 stays an int)."""
    from engine import Param, Tool
    from engine.core.tools import validate_args

    tool = Tool("t", "", (Param("n", kind, required=False),))
    if got == "ok":
        assert validate_args(tool, {"n": given}) == {}
    elif isinstance(got, str):
        with pytest.raises(ValueError, match=f"argument 'n': {got}"):
            validate_args(tool, {"n": given})
    else:
        value = validate_args(tool, {"n": given})["n"]
        assert value == got and type(value) is type(got)


def test_unparseable_text_becomes_an_invalid_format_observation():
    run = counting_run("I think I will just chat instead.")
    run.engine.step()
    step = run.engine.state.history[0]
    assert step.parse_error is not None
    assert step.observations[0].text.startswith("ERROR: invalid format")
    assert "Action: tool[argument]" in step.observations[0].text


@pytest.mark.parametrize(
    "text, tool, args",
    [
        ("Thought: a\nAction: echo[hello world]", "echo", {"text": "hello world"}),
        ('Thought: a\nAction: echo(text="hi")', "echo", {"text": "hi"}),
        ("Thought: a\nAction: pay(5)", "pay", {"amount": 5}),
        ('Thought: a\nAction: echo({"text": "json"})', "echo", {"text": "json"}),
        ("Action: echo(Il Gattopardo)", "echo", {"text": "Il Gattopardo"}),
    ],
)
def test_action_text_formats(text, tool, args):
    run = counting_run(text, approve="all")
    run.engine.step()
    assert run.engine.state.history[0].actions[0].tool == tool
    assert run.world.calls == [(tool, args)]


def test_final_answer_and_answer_lines_end_the_run():
    for text in ("Thought: done\nFinal Answer: 42", "Thought: done\nAnswer: 42"):
        run = counting_run(text)
        run.engine.step()
        assert run.engine.state.ended.answer == "42"


def test_a_tool_that_raises_becomes_an_error_observation():
    run = counting_run(Decision.act("t", "echo", text="x"))
    run.engine.tools["echo"] = run.engine.tools["echo"].__class__(
        "echo", "boom", run.engine.tools["echo"].params, lambda text: 1 / 0, timeout=None
    )
    run.engine.step()
    obs = run.engine.state.history[0].observations[0]
    assert obs.error and obs.executed and obs.text.startswith("ERROR: ZeroDivisionError")


def test_a_tool_past_its_timeout_becomes_an_error_observation():
    from engine import Param, Tool

    release = threading.Event()
    run = counting_run(Decision.act("t", "echo", text="x"))
    run.engine.tools["echo"] = Tool("echo", "slow", (Param("text"),), lambda text: release.wait(5), timeout=0.05)
    run.engine.step()
    release.set()
    obs = run.engine.state.history[0].observations[0]
    assert obs.error and "timed out after 0.05 s" in obs.text


def test_long_observations_are_capped_with_a_marker():
    run = counting_run(Decision.act("t", "echo", text="x" * 10_000))
    run.engine.step()
    obs = run.engine.state.history[0].observations[0]
    assert len(obs.text) < 4100
    assert obs.text.endswith("more characters]")
    assert "truncated" in obs.text


def test_exit_tool_ends_the_run_and_is_never_executed():
    run = counting_run(Decision.act("t", "stop", reason="needs a person"))
    run.engine.step()
    assert run.engine.state.ended.outcome == "handed_off"
    assert types(run.engine.events) == ["decision", "run_ended"]


def test_several_actions_in_one_decision_each_get_their_own_approval():
    decision = Decision(thought="both", actions=[Action(tool="pay", args={"amount": 1}), Action(tool="pay", args={"amount": 2})])
    run = counting_run(decision)
    assert run.engine.step() == "awaiting_approval"
    run.engine.approve()
    assert run.engine.status == "awaiting_approval"
    assert run.engine.state.pending.args == {"amount": 2}
    run.engine.reject("no")
    assert run.world.calls == [("pay", {"amount": 1})]
    assert run.engine.status == "ready"


def test_token_estimate_is_words_times_1_3_over_the_whole_history():
    run = counting_run(Decision.act("one two three", "echo", text="a b"), Decision.final("x", "y"))
    run.engine.run()
    first, second = [e for e in run.engine.events if e.type == "decision"]
    task_words = len("do the thing".split())
    assert first.usage.input_tokens == round(task_words * 1.3 + 0.49)
    assert first.usage.estimated
    assert second.usage.input_tokens > first.usage.input_tokens
    state = run.engine.state
    assert state.input_tokens == first.usage.input_tokens + second.usage.input_tokens
    assert state.input_tokens_per_step == [first.usage.input_tokens, second.usage.input_tokens]


def test_cost_uses_the_price_table():
    usage = Usage(input_tokens=1000, output_tokens=500, estimated=False)
    budget = Budget(max_steps=10, price_in_per_1k=0.01, price_out_per_1k=0.03)
    run = counting_run(Decision(thought="x", answer="y", usage=usage), budget=budget)
    run.engine.step()
    assert run.engine.state.cost == pytest.approx(0.01 + 0.015)


def test_budget_warning_at_80_percent_then_stop_at_the_limit():
    decisions = [Decision.act("t", "echo", text=str(i)) for i in range(10)]
    run = counting_run(*decisions, budget=Budget(max_steps=5))
    run.engine.run()
    warnings = [e for e in run.engine.events if e.type == "budget_warning"]
    assert [(w.kind, w.used, w.limit) for w in warnings] == [("steps", 4, 5)]
    assert run.engine.state.ended.reason == "steps budget reached: 5 of 5"


def test_token_budget_ends_the_run():
    decisions = [Decision.act("many words " * 20, "echo", text=str(i)) for i in range(10)]
    run = counting_run(*decisions, budget=Budget(max_steps=50, max_tokens=200))
    run.engine.run()
    assert run.engine.state.ended.reason.startswith("tokens budget reached")
    assert run.engine.state.tokens >= 200


def test_interactive_run_pauses_at_the_limit_and_can_be_extended():
    decisions = [Decision.act("t", "echo", text=str(i)) for i in range(10)]
    run = counting_run(*decisions, budget=Budget(max_steps=2), interactive=True)
    assert run.engine.run() == "awaiting_budget"
    assert run.engine.state.exhausted.kind == "steps"
    with pytest.raises(ValueError):
        run.engine.extend_budget("steps", 2)
    run.engine.extend_budget("steps", 4)
    assert run.engine.run() == "awaiting_budget"
    assert run.engine.state.step == 4
    run.engine.end_at_budget()
    assert run.engine.state.ended.outcome == "stopped"


def test_seconds_budget_counts_policy_and_tool_time():
    from tests.conftest import FakeClock

    clock = FakeClock(tick=1.0)
    decisions = [Decision.act("t", "echo", text=str(i)) for i in range(20)]
    run = counting_run(*decisions, budget=Budget(max_steps=100, max_seconds=10), clock=clock)
    run.engine.run()
    assert run.engine.state.ended.reason.startswith("seconds budget reached")


def test_repetition_threshold_setting_and_off():
    same = [Decision.act("t", "echo", text="x") for _ in range(6)]
    run = counting_run(*same, repetition_threshold=3)
    run.engine.run()
    assert run.engine.state.ended.step == 3 and "3 times" in run.engine.state.ended.reason
    run = counting_run(*same, repetition_threshold=None)
    run.engine.run()
    assert run.engine.state.ended.answer == "done"
    assert len(run.world.calls) == 6


def test_a_policy_that_raises_stops_a_headless_run_with_the_reason():
    def broken(view):
        raise RuntimeError("model exploded")

    run = new_run(counting_run().scenario, "t", ScriptedPolicy("broken", broken), save=False)
    run.engine.run()
    assert run.engine.state.ended.outcome == "stopped"
    assert "policy raised RuntimeError: model exploded" in run.engine.state.ended.reason


def test_a_policy_error_pauses_an_interactive_run_and_retry_works():
    attempts = []

    def flaky(view):
        attempts.append(1)
        if len(attempts) == 1:
            raise PolicyError("connection refused")
        return Decision.final("ok", "fine")

    run = new_run(counting_run().scenario, "t", ScriptedPolicy("flaky", flaky), save=False, interactive=True)
    assert run.engine.step() == "policy_failed"
    assert run.engine.state.last_policy_error == "connection refused"
    assert run.engine.step() == "ended"
    assert run.engine.state.ended.answer == "fine"


def test_a_policy_returning_garbage_is_a_policy_error():
    run = new_run(counting_run().scenario, "t", ScriptedPolicy("bad", lambda v: 42), save=False)
    run.engine.step()
    assert "not a Decision" in run.engine.state.ended.reason


@pytest.mark.parametrize(
    "decision, words",
    [
        (Decision(thought=123), "thought is int"),
        (Decision(thought=None, answer="a"), "thought is NoneType"),
        (Decision(thought="t", answer=42), "answer is int"),
        (Decision(text=5), "text is int"),
        (Decision(thought="t", answer="a", usage="lots"), "usage is str"),
        (Decision(thought="t", answer="a", cost=-0.5), "cost is -0.5, not a number of dollars"),
        (Decision(thought="t", answer="a", cost=float("nan")), "cost is nan, not a number of dollars"),
        (Decision(thought="t", actions=None), "actions is NoneType"),
        (Decision(thought="t", actions=["echo"]), "actions[0] is str"),
        (Decision(thought="t", actions=[{"tool": "echo", "args": {"text": "x"}}]), "actions[0] is dict"),
        (Decision(thought="t", actions=[Action(tool="echo", args={"text": object()})]), "cannot be written as JSON"),
    ],
)
def test_a_decision_with_garbage_fields_is_a_policy_error_not_an_exception(tmp_path, decision, words):
    run = new_run(
        counting_run().scenario, "t", ScriptedPolicy("bad", lambda v: decision), out=tmp_path / "t.jsonl", interactive=True
    )
    assert run.engine.step() == "policy_failed"
    assert types(run.engine.events) == ["policy_error"]
    assert words in run.engine.state.last_policy_error
    assert run.world.calls == []
    assert '"policy_error"' in (tmp_path / "t.jsonl").read_text().splitlines()[-1]


def test_swap_takes_effect_at_the_next_decision_and_is_recorded():
    run = counting_run(Decision.act("t", "echo", text="1"), Decision.act("t", "echo", text="2"))
    run.engine.step()
    run.engine.swap_policy(ScriptedPolicy("newer", lambda view: Decision.act("x", "echo", text="from new")))
    run.engine.step()
    swap = [e for e in run.engine.events if e.type == "policy_swapped"]
    assert [(s.old, s.new, s.step) for s in swap] == [("script", "newer", 2)]
    assert run.engine.state.history[1].policy == "newer"
    assert run.world.calls[1] == ("echo", {"text": "from new"})


def test_human_policy_waits_for_the_operator():
    run = counting_run()
    human = HumanPolicy()
    run.engine.swap_policy(human)
    assert run.engine.step() == "awaiting_input"
    assert run.engine.state.step == 0
    human.supply(Decision.act("my turn", "echo", text="typed"))
    assert run.engine.step() == "awaiting_input"  # ran the typed step, now waits for the next one
    assert run.world.calls == [("echo", {"text": "typed"})]
    assert run.engine.state.history[0].policy == "human"


def test_state_is_the_fold_of_the_events():
    run = new_run(scenarios.get("support"), "return-1187", save=False, approve="all")
    run.engine.run()
    folded = fold(run.engine.header, run.engine.events)
    live = run.engine.state
    for name in ("step", "status", "input_tokens", "output_tokens", "tool_calls", "ended", "input_tokens_per_step"):
        assert getattr(folded, name) == getattr(live, name), name


@pytest.mark.parametrize("interactive", [False, True])
def test_a_long_headless_run_freezes_its_history_out_of_full_collections_and_hands_it_back(interactive):
    import gc

    from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool
    from engine.core.collector import FREEZE_EVERY

    frozen: list[int] = []

    def lookup(key: str) -> str:
        frozen.append(gc.get_freeze_count())
        return key

    class World:
        tools = [Tool("lookup", "Look a key up.", (Param("key"),), lookup)]

    steps = FREEZE_EVERY // 2 + 100  # two events a step: past one freeze
    scenario = Scenario(
        name="long", description="", tasks={"t": Task("t", "Look up.")},
        policies={"p": lambda w, t: ScriptedPolicy("p", lambda view: Decision.act("look", "lookup", key=str(view.step)))},
        make_world=lambda task, options: World(), budget=Budget(max_steps=steps), repetition_threshold=None,
    )
    run = new_run(scenario, "t", "p", save=False, interactive=interactive)
    assert gc.get_freeze_count() == 0
    run.engine.run()
    assert len(frozen) == steps
    assert frozen[0] == 0 and (frozen[-1] == 0 if interactive else frozen[-1] > 0)
    assert gc.get_freeze_count() == 0
