"""The cockpit driven by keys: every operator path, checked against the engine's state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, RadioButton, Select

from engine import Budget, Decision, Param, Scenario, Task, Tool
from engine.core.tools import ToolFault
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import FailingOnce, Gate, desk_run, fixed_clock, settle, support_run, wait_until
from tui.app import CockpitApp
from tui.bridge import EngineEvent, WorkDone
from tui.screens.approval import ApprovalScreen
from tui.screens.dialogs import BudgetScreen, ConfirmScreen, HelpScreen, PolicyPicker, SaveScreen
from tui.screens.forms import EditArgsScreen, ReasonScreen, TakeOverScreen
from tui.widgets.gauges import Gauge
from tui.widgets.tools import ToolRow

SIZE = (120, 40)
pytestmark = pytest.mark.anyio


def shown_keys(app: CockpitApp) -> set[str]:
    """The actions the footer offers right now."""
    return {b.binding.action for b in app.screen.active_bindings.values() if b.enabled and b.binding.show}


def tool_row(app: CockpitApp, name: str) -> ToolRow:
    return next(r for r in app.query(ToolRow) if r.info.name == name)


async def step_to_approval(app: CockpitApp, pilot) -> None:
    await pilot.press("n")
    await settle(pilot)
    await pilot.press("n")
    await settle(pilot)
    assert app.run_status == "awaiting_approval"
    assert isinstance(app.screen, ApprovalScreen)


async def test_step_to_approval_enter_does_not_approve_then_a_does(tmp_path: Path) -> None:
    run = support_run(tmp_path)
    app = CockpitApp(run)
    messages: list = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        assert "step" in shown_keys(app) and "approve" not in shown_keys(app)
        await step_to_approval(app, pilot)
        assert tool_row(app, "open_return_request").has_class("-pending")
        assert "awaiting approval" in str(app.query_one("#header").content)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen), "Enter must not approve"
        assert run.engine.status == "awaiting_approval"
        await pilot.press("a")
        await settle(pilot)
        assert run.world.requests == ["R-1 for 1187"]
        assert not tool_row(app, "open_return_request").has_class("-pending")
        assert tool_row(app, "open_return_request").calls == 1
        await pilot.press("n")
        await settle(pilot)
        assert run.engine.state.ended is not None and "R-1" in run.engine.state.ended.answer
        assert "ended: answer" in str(app.query_one("#header").content)
        assert shown_keys(app).isdisjoint({"step", "continue_run", "approve", "abort"})
    posted = [m.event.type for m in messages if isinstance(m, EngineEvent)]
    assert posted == [e.type for e in run.engine.events]
    assert any(isinstance(m, WorkDone) for m in messages)
    lines = (tmp_path / "support.jsonl").read_text().splitlines()
    assert len([line for line in lines if '"tool_started"' not in line]) == 1 + len(run.engine.events)


async def test_dismissed_modal_keys_work_on_the_main_screen(tmp_path: Path) -> None:
    run = support_run(tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await step_to_approval(app, pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ApprovalScreen)
        assert {"approve", "approve_always", "reject", "edit", "review"} <= shown_keys(app)
        assert "step" not in shown_keys(app)
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("escape", "a")
        await settle(pilot)
        assert run.world.requests == ["R-1 for 1187"]


async def test_reject_with_a_reason_the_policy_reads(tmp_path: Path) -> None:
    run = support_run(tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await step_to_approval(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ReasonScreen)
        app.screen.query_one("#reason", Input).value = "the customer wants a repair"
        await pilot.press("enter")
        await settle(pilot)
        assert run.world.requests == []
        last = run.engine.state.history[-1].observations[-1]
        assert last.error and "the customer wants a repair" in last.text
        await pilot.press("n")
        await settle(pilot)
        assert "the customer wants a repair" in run.engine.state.ended.answer


async def test_reject_cancelled_keeps_the_action_pending(tmp_path: Path) -> None:
    run = support_run(tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await step_to_approval(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert run.engine.status == "awaiting_approval"


async def test_edit_refuses_invalid_arguments_then_runs_valid_ones(tmp_path: Path) -> None:
    run = desk_run("pay-twice", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("e")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, EditArgsScreen)
        amount = form.query_one("#arg-0", Input)
        assert amount.value == "5"
        amount.value = "five"
        amount.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is form, "the form stays open on invalid input"
        error = str(form.query_one("#edit-error").content)
        assert "amount" in error and "integer" in error
        amount.value = ""
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is form
        assert "missing argument 'amount'" in str(form.query_one("#edit-error").content)
        assert run.world.calls == []
        amount.value = "9"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is form and run.world.calls == [], "enter never runs the action"
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert run.world.calls == [("pay", {"amount": 9, "to": "customer"})]
        decided = [e for e in run.engine.events if e.type == "approval_decided"]
        assert decided[-1].choice == "modify" and decided[-1].args == {"amount": 9}


async def test_approve_always_asks_once_per_tool(tmp_path: Path) -> None:
    run = desk_run("pay-twice", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("A")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert [c[1]["amount"] for c in run.world.calls] == [5, 7]
        assert [e.type for e in run.engine.events].count("approval_requested") == 1


async def test_swap_policy_mid_run(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, PolicyPicker)
        options = picker.query_one(OptionList)
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        assert ids == ["alpha", "beta", "pay-twice", "reads-rejection", "human"]
        await pilot.press("down", "enter")
        await settle(pilot)
        assert run.engine.policy.name == "beta"
        swaps = [e for e in run.engine.events if e.type == "policy_swapped"]
        assert [(s.old, s.new, s.step) for s in swaps] == [("alpha", "beta", 2)]
        assert "policy: beta" in str(app.query_one("#header").content)
        await pilot.press("n")
        await settle(pilot)
        decisions = [e for e in run.engine.events if e.type == "decision"]
        assert [d.policy for d in decisions] == ["alpha", "beta"]
        assert decisions[-1].actions[0].args == {"text": "beta-2"}


async def test_model_policy_hook_is_offered(tmp_path: Path) -> None:
    from tests.support.cockpit_worlds import noter

    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run, model_policy_factory=lambda: noter("model"))
    async with app.run_test(size=SIZE) as pilot:
        assert app.policy_names()[-1] == "model"
        await pilot.press("p")
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        options.highlighted = options.option_count - 1
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert run.engine.events[-2].type == "decision" and run.engine.events[-2].policy == "model"


async def fill_take_over(app: CockpitApp, pilot, *, thought: str, tool: str | None, args: list[str] = (), answer: str = "", stay: bool = False) -> None:
    screen = app.screen
    assert isinstance(screen, TakeOverScreen)
    screen.query_one("#thought", Input).value = thought
    if tool is not None:
        screen.query_one("#tool", Select).value = tool
        await wait_until(pilot, lambda: len(screen.query(".param-input")) > 0, what="the argument fields")
        for n, value in enumerate(args):
            screen.query_one(f"#arg-{n}", Input).value = value
    screen.query_one("#answer", Input).value = answer
    if stay:
        screen.query_one("#stay", RadioButton).value = True
    await pilot.pause()  # laid out again: the fields just mounted moved the buttons a click aims at


async def test_take_over_for_one_step(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await pilot.pause()
        await fill_take_over(app, pilot, thought="I write it myself.", tool="note", args=["by hand"])
        await pilot.click("#do-step")
        await settle(pilot)
        decision = next(e for e in run.engine.events if e.type == "decision")
        assert decision.policy == "human" and decision.thought == "I write it myself."
        assert run.world.calls == [("note", {"text": "by hand"})]
        assert run.engine.policy.name == "alpha", "one step, then the policy is back"
        await pilot.press("n")
        await settle(pilot)
        assert run.engine.events[-2].policy == "alpha"


async def test_take_over_refuses_an_empty_step(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await pilot.pause()
        form = app.screen
        await fill_take_over(app, pilot, thought="hmm", tool="pay", args=["lots"])
        await pilot.click("#do-step")
        await pilot.pause()
        assert app.screen is form
        assert "integer" in str(form.query_one("#takeover-error").content)
        assert run.engine.events == []


async def test_take_over_and_stay_in_control_then_hand_back(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await pilot.pause()
        await fill_take_over(app, pilot, thought="mine", tool="note", args=["first"], stay=True)
        await pilot.click("#do-step")
        await settle(pilot)
        assert run.engine.policy is run.human
        assert app.run_status == "awaiting_input"
        assert "your turn" in str(app.query_one("#header").content)
        assert {"step", "hand_back"} <= shown_keys(app) and "take_over" not in shown_keys(app)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, TakeOverScreen)
        await fill_take_over(app, pilot, thought="still mine", tool=None, answer="all done", stay=True)
        await pilot.click("#do-step")
        await settle(pilot)
        assert run.engine.state.ended.answer == "all done"


async def test_hand_back_with_h(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await pilot.pause()
        await fill_take_over(app, pilot, thought="mine", tool="note", args=["first"], stay=True)
        await pilot.click("#do-step")
        await settle(pilot)
        assert run.engine.policy is run.human
        await pilot.press("h")
        await settle(pilot)
        assert run.engine.policy.name == "alpha"
        await pilot.press("n")
        await settle(pilot)
        assert [e.policy for e in run.engine.events if e.type == "decision"] == ["human", "alpha"]
        assert [(e.old, e.new) for e in run.engine.events if e.type == "policy_swapped"] == [("alpha", "human"), ("human", "alpha")]


async def test_pick_human_then_type_a_step(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        options.highlighted = 4
        await pilot.press("enter")
        await settle(pilot)
        assert app.run_status == "awaiting_input"
        assert "continue_run" not in shown_keys(app)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, TakeOverScreen)


async def test_abort_asks_then_ends_the_run(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert not run.engine.ended
        await pilot.press("x", "y")
        await settle(pilot)
        assert run.engine.state.ended.outcome == "aborted"
        await pilot.press("q")
    assert app.return_code == 5


class _GatedPayer(Gate):
    """Waits for the test at each decision; a note at step 1, a payment (irreversible) after."""

    def decide(self, view):
        decision = super().decide(view)
        return decision if view.step == 1 else Decision.act("pay now", "pay", amount=5)


async def test_n_while_a_step_runs_queues_steps_that_a_pause_drops(tmp_path: Path) -> None:
    """n pressed while a step runs asks for one more each (they were dropped without a word); the
    queue starts each when the last ends ready, and the payment's approval drops the rest: no
    queued key ever answers an approval."""
    gate = _GatedPayer()
    run = desk_run(gate, tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await wait_until(pilot, gate.entered.is_set, what="the first decision")
        assert "step" in shown_keys(app), "n still does something while a step runs"
        await pilot.press("n", "n", "n")
        await pilot.pause()
        assert app.steps_queued == 3
        gate.entered.clear()
        gate.release.set()
        await wait_until(pilot, gate.entered.is_set, what="the queued second step")
        gate.release.set()
        await settle(pilot)
        assert run.engine.state.step == 2 and app.run_status == "awaiting_approval"
        assert app.steps_queued == 0 and isinstance(app.screen, ApprovalScreen)
        assert [name for name, _ in run.world.calls] == ["note"], "the payment waits for the operator"
        assert [e.type for e in run.engine.events].count("approval_decided") == 0


class _FaultyWorld:
    """`probe`, whose server dies (a ToolFault: the run pauses for the operator to see it), and `note`."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.tools = [Tool("probe", "A tool whose server dies.", (Param("what"),), self._probe, timeout=None),
                      Tool("note", "Write a note.", (Param("text"),), self._note, timeout=None)]

    def _probe(self, what: str) -> str:
        self.calls.append("probe")
        raise ToolFault("the server died")

    def _note(self, text: str) -> str:
        self.calls.append("note")
        return "noted"


class _GatedProber(Gate):
    def decide(self, view):
        super().decide(view)
        return Decision.act("probe", "probe", what="x") if view.step == 1 else Decision.act("note", "note", text="n")


async def test_a_tool_fault_drops_the_queued_steps(tmp_path: Path) -> None:
    """A tool server's fault pauses the run for the operator (as `continue` stops there): the steps
    queued behind it are dropped, not run past it."""
    gate = _GatedProber()
    scenario = Scenario(name="faulty", description="d", tasks={"t": Task("t", "do")}, policies={},
                        make_world=lambda task, options: _FaultyWorld(), budget=Budget(max_steps=10))
    run = new_run(scenario, "t", gate, save=True, out=tmp_path / "r.jsonl", interactive=True, clock=fixed_clock)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await wait_until(pilot, gate.entered.is_set, what="the first decision")
        await pilot.press("n", "n")
        await pilot.pause()
        assert app.steps_queued == 2
        gate.release.set()
        await settle(pilot)
        await wait_until(pilot, lambda: not app.busy and app.steps_queued == 0, what="the queue dropped")
        assert run.world.calls == ["probe"] and run.engine.state.step == 1 and app.fault is not None


async def test_escape_drops_the_queued_steps(tmp_path: Path) -> None:
    gate = Gate()
    run = desk_run(gate, tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await wait_until(pilot, gate.entered.is_set, what="the first decision")
        await pilot.press("n", "n", "escape")
        await pilot.pause()
        assert app.steps_queued == 0
        gate.release.set()
        await settle(pilot)
        assert gate.decisions == 1 and run.engine.state.step == 1 and app.run_status == "ready"


async def test_continue_then_interrupt(tmp_path: Path) -> None:
    gate = Gate()
    run = desk_run(gate, tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await wait_until(pilot, gate.entered.is_set, what="the policy to start deciding")
        assert app.busy and app.run_status == "running"
        assert "running" in str(app.query_one("#header").content)
        assert shown_keys(app) >= {"interrupt", "abort"}
        assert "step" not in shown_keys(app)
        # The UI answers while the policy blocks.
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        gate.entered.clear()
        gate.release.set()
        await wait_until(pilot, gate.entered.is_set, what="the second decision")
        await pilot.press("escape")
        await pilot.pause()
        assert "stopping" in str(app.query_one("#header").content)
        gate.release.set()
        await settle(pilot)
        assert gate.decisions == 2
        assert run.engine.state.step == 2
        assert app.run_status == "ready"
        assert not run.engine.ended


async def test_abort_while_running(tmp_path: Path) -> None:
    gate = Gate()
    run = desk_run(gate, tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await wait_until(pilot, gate.entered.is_set, what="the policy to start deciding")
        await pilot.press("x")
        await pilot.pause()
        gate.release.set()
        await settle(pilot)
        assert run.engine.state.ended.outcome == "aborted"
        assert gate.decisions == 1


async def test_picking_the_current_policy_changes_nothing_and_says_so(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PolicyPicker)
        await pilot.press("enter")  # the current one is highlighted
        await settle(pilot)
        assert not isinstance(app.screen, PolicyPicker) and run.engine.policy.name == "alpha"
        assert not [e for e in run.engine.events if e.type == "policy_swapped"]
        assert any("alpha is the policy already: nothing changed" in str(n.message) for n in app._notifications)


async def test_budget_pause_and_extend(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path, budget=Budget(max_steps=2))
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        assert app.query_one("#gauge-steps", Gauge).has_class("-warning") is False
        await pilot.press("c")
        await settle(pilot)
        assert run.engine.status == "awaiting_budget"
        assert isinstance(app.screen, BudgetScreen)
        assert app.query_one("#gauge-steps", Gauge).has_class("-alarm")
        new_limit = app.screen.query_one("#new-limit", Input)
        assert new_limit.value == "7"
        await pilot.press("l")
        assert new_limit.has_focus
        new_limit.value = "1"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BudgetScreen), "a limit below what is used is refused"
        new_limit.value = "4"
        await pilot.press("enter")
        await settle(pilot)
        assert run.engine.state.budget.max_steps == 4
        assert run.engine.status == "ready"
        assert not app.query_one("#gauge-steps", Gauge).has_class("-alarm")
        await pilot.press("c")
        await settle(pilot)
        assert run.engine.state.step == 4
        assert isinstance(app.screen, BudgetScreen)
        await pilot.click("#end")
        await settle(pilot)
        assert run.engine.state.ended.outcome == "stopped"


async def test_the_limit_offered_at_a_token_limit_is_above_what_the_step_used(tmp_path: Path) -> None:
    """A step's tokens are counted when it is done, so a run stops past its token limit: the
    limit offered is over what was used (+50 % of it), and `e` takes it at once."""
    run = desk_run("alpha", tmp_path, budget=Budget(max_tokens=1))
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, BudgetScreen)
        used = app.screen.exhausted.used
        assert used > 1 and float(app.screen.query_one("#new-limit", Input).value) == int(used * 1.5)
        await pilot.press("e")
        await settle(pilot)
        assert run.engine.state.budget.max_tokens == int(used * 1.5)
        assert run.engine.status != "awaiting_budget"


async def test_budget_pause_can_wait(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path, budget=Budget(max_steps=1))
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, BudgetScreen)
        assert {"budget", "abort"} <= shown_keys(app) and "step" not in shown_keys(app)
        await pilot.press("b")
        await pilot.pause()
        assert isinstance(app.screen, BudgetScreen)


async def test_budget_warning_look(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path, budget=Budget(max_steps=5))
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(4):
            await pilot.press("n")
            await settle(pilot)
        gauge = app.query_one("#gauge-steps", Gauge)
        assert gauge.has_class("-warning") and not gauge.has_class("-alarm")
        assert "4/5" in str(gauge.content)
        assert "no limit" in str(app.query_one("#gauge-cost", Gauge).content)


async def test_policy_error_then_retry(tmp_path: Path) -> None:
    run = desk_run(FailingOnce(), tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        assert run.engine.status == "policy_failed"
        assert "policy failed" in str(app.query_one("#header").content)
        notes = [n.message for n in app._notifications]
        assert any("503 [bold]busy[/]" in m for m in notes), notes
        assert {"step", "pick_policy", "abort"} <= shown_keys(app)
        await pilot.press("n")
        await settle(pilot)
        assert run.world.calls == [("note", {"text": "retry"})]


async def test_an_engine_call_that_raises_does_not_kill_the_app(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:

        def broken(engine):
            raise RuntimeError("boom [red]x[/]")

        app.start("broken", broken)
        await settle(pilot)
        assert app.is_running
        assert app.last_error == "RuntimeError: boom [red]x[/]"
        await pilot.press("n")
        await settle(pilot)
        assert run.engine.state.step == 1


async def test_save_a_copy(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SaveScreen)
        target = tmp_path / "copies" / "saved.jsonl"
        app.screen.query_one("#save-path", Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, SaveScreen)
    saved = target.read_text().splitlines()
    live = (tmp_path / "run.jsonl").read_text().splitlines()
    written = [json.loads(line) for line in live]
    assert [json.loads(line) for line in saved] == [d for d in written if d["type"] != "tool_started"]


async def test_help_and_command_palette_follow_the_state(tmp_path: Path) -> None:
    run = support_run(tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Step", "Continue", "Pick policy", "Take over", "Abort", "Save a copy", "Help"} <= titles
        assert "Approve" not in titles
        await step_to_approval(app, pilot)
        await pilot.press("escape")
        await pilot.pause()
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Approve", "Approve always", "Reject", "Edit arguments"} <= titles
        assert "Step" not in titles
        approve = next(c for c in app.get_system_commands(app.screen) if c.title == "Approve")
        await approve.callback()
        await settle(pilot)
        assert run.world.requests == ["R-1 for 1187"]
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("key", ["n", "space"])
async def test_step_keys(tmp_path: Path, key: str) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key)
        await settle(pilot)
        assert run.engine.state.step == 1


@pytest.mark.parametrize(
    "used, limit, shown",
    [(17_875_325_000, None, "17.9G · no limit"), (206_750_570, 500_000_000, "206.8M/500.0M"), (3_400, None, "3400 · no limit")],
)
async def test_a_long_count_in_a_narrow_gauge_is_written_short_never_cut(used, limit, shown) -> None:
    from textual.app import App

    class One(App[None]):
        def compose(self):
            yield Gauge("tokens")

    app = One()
    async with app.run_test(size=(28, 3)) as pilot:  # the budget panel's room in an 80-column terminal
        gauge = app.query_one(Gauge)
        gauge.set_value(used, limit)
        await pilot.pause()
        line = gauge.line().plain
        assert line.endswith(shown) and len(line) <= gauge.size.width
