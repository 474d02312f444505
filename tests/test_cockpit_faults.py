"""Tool and policy faults in the cockpit: a tool that hangs past its timeout, a policy
that raises, a policy that returns garbage. The UI answers keys while the step is
outstanding, the fault is shown (transcript pane, tool panel, notification, header),
and the operator can retry, swap or abort afterwards."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import pytest
from textual.widgets import OptionList

from engine import Budget, Decision, Param, Scenario, Task, Tool
from engine.core.events import Action
from engine.core.policy import RunView
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import by_step, desk_run, fixed_clock, settle, wait_until
from tui.app import CockpitApp
from tui.bridge import EngineEvent, WorkDone
from tui.screens.dialogs import ConfirmScreen, HelpScreen, PolicyPicker
from tui.widgets.tools import ToolRow

SIZE = (120, 40)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pane_text(app: CockpitApp) -> str:
    """What the transcript pane draws right now (its visible rows), runs of spaces
    and row ends as one space (so text soft-wrapped at spaces reads as written)."""
    pane = app.pane
    return " ".join(" ".join(pane.render_line(y).text.split()) for y in range(pane.size.height))


def header_text(app: CockpitApp) -> str:
    return str(app.query_one("#header").content)


def tool_row(app: CockpitApp, name: str) -> ToolRow:
    return next(r for r in app.query(ToolRow) if r.info.name == name)


# -- a tool that hangs past its timeout ------------------------------------------


class HangingWorld:
    """`wait` blocks until the test releases it (far past its 5 s timeout, time enough for a
    loaded machine to answer a key first); `note` returns."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.tools = [
            Tool("wait", "Waits for a reply that never comes.", (Param("what"),), self._wait, timeout=5.0),
            Tool("note", "Write a note.", (Param("text"),), lambda text: f"noted: {text}", timeout=None),
        ]

    def _wait(self, what: str) -> str:
        self.entered.set()
        self.release.wait(timeout=60)
        return f"the reply to {what} came too late"


def hanging_run(tmp_path: Path):
    policy = lambda world, task: by_step(  # noqa: E731
        "waiter",
        Decision.act("I wait for the reply.", "wait", what="order 1187"),
        Decision.act("It timed out; I note it.", "note", text="no reply"),
    )
    scenario = Scenario(
        name="hanging",
        description="a tool that hangs past its timeout",
        tasks={"t": Task("t", "Wait for the courier's reply.")},
        policies={"waiter": policy},
        make_world=lambda task, options: HangingWorld(),
        budget=Budget(max_steps=10),
    )
    return new_run(scenario, "t", "waiter", save=True, out=tmp_path / "hang.jsonl", interactive=True, clock=fixed_clock)


async def test_a_tool_past_its_timeout_keeps_the_ui_answering_and_shows_the_error(tmp_path: Path) -> None:
    run = hanging_run(tmp_path)
    world: HangingWorld = run.world
    app = CockpitApp(run)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("n")
            await wait_until(pilot, world.entered.is_set, what="the tool to start")
            # The step is outstanding: the tool blocks (until its 5 s timeout).
            assert app.busy and app.run_status == "running"
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen), "the UI must answer a key while a tool hangs"
            assert app.busy, "the step ended before the key was answered; the check proves nothing"
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)

            await settle(pilot)
            assert app.run_status == "ready" and app.is_running
            observation = run.engine.events[-1]
            assert observation.type == "observation" and observation.error and observation.executed
            assert observation.text == "ERROR: tool 'wait' timed out after 5 s"
            shown = pane_text(app)
            assert "Error" in shown and "ERROR: tool 'wait' timed out after 5 s" in shown, shown
            row = tool_row(app, "wait")
            assert row.has_class("-error") and row.erred
            assert "err" in row.line().plain
            assert not tool_row(app, "note").has_class("-error")

            await pilot.press("n")
            await settle(pilot)
            assert run.engine.state.tool_calls == {"wait": 1, "note": 1}
            assert "noted: no reply" in pane_text(app)
            assert row.has_class("-error"), "the wait tool's last call still erred"
    finally:
        world.release.set()
    lines = (tmp_path / "hang.jsonl").read_text()
    assert "timed out after 5 s" in lines


# -- a policy that raises or returns garbage --------------------------------------


class FaultyOnce:
    """Commits `fault` on its first decision; notes afterwards (so a retry works)."""

    name = "faulty"

    def __init__(self, fault: Callable[[], Any]) -> None:
        self.fault = fault
        self.calls = 0

    def decide(self, view: RunView) -> Any:
        self.calls += 1
        if self.calls == 1:
            return self.fault()
        return Decision.act("The retry works.", "note", text=f"retry-{self.calls}")


def _raise() -> Any:
    raise RuntimeError("the model client fell over [bold]hard[/]")


FAULTS: dict[str, tuple[Callable[[], Any], str]] = {
    "raises": (_raise, "policy raised RuntimeError: the model client fell over [bold]hard[/]"),
    "returns None": (lambda: None, "policy returned NoneType, not a Decision"),
    "returns a dict": (lambda: {"thought": "x", "action": "note"}, "policy returned dict, not a Decision"),
    "thought is a number": (lambda: Decision(thought=123, answer="x"), "thought is int, not str"),
    "actions are dicts": (
        lambda: Decision(thought="t", actions=[{"tool": "note", "args": {"text": "x"}}]),
        "actions[0] is dict, not Action",
    ),
    "arguments JSON cannot write": (
        lambda: Decision(thought="t", actions=[Action(tool="note", args={"text": object()})]),
        "cannot be written as JSON",
    ),
}


async def fail_once(app: CockpitApp, pilot, words: str) -> None:
    """Step into the fault and check every place it shows."""
    await pilot.press("n")
    await settle(pilot)
    assert app.is_running
    assert app.run_status == "policy_failed"
    assert app.engine.events[-1].type == "policy_error"
    assert words in app.engine.events[-1].message
    assert "policy failed" in header_text(app)
    shown = pane_text(app)
    assert "Failed" in shown and words in shown, shown
    notes = [(n.title, n.message) for n in app._notifications]
    assert any(words in message and "policy failed" in (title or "") for title, message in notes), notes


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_policy_fault_is_shown_then_retry_swap_and_abort_work(tmp_path: Path, fault: str) -> None:
    make_fault, words = FAULTS[fault]
    policy = FaultyOnce(make_fault)
    run = desk_run(policy, tmp_path)
    app = CockpitApp(run)
    messages: list[Any] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await fail_once(app, pilot, words)
        errors = [m.error for m in messages if isinstance(m, WorkDone) and m.error]
        assert errors == [], f"the fault escaped the engine as an exception: {errors}"

        # retry: the same policy decides again
        await pilot.press("n")
        await settle(pilot)
        assert policy.calls == 2
        assert run.world.calls == [("note", {"text": "retry-2"})]
        assert app.run_status == "ready"

        # swap: another policy from the next decision on
        await pilot.press("p")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, PolicyPicker)
        options = picker.query_one(OptionList)
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        options.highlighted = ids.index("beta")
        await pilot.press("enter")
        await settle(pilot)
        assert run.engine.policy.name == "beta"
        await pilot.press("n")
        await settle(pilot)
        assert run.world.calls[-1] == ("note", {"text": "beta-2"})

        # abort
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert run.engine.state.ended is not None and run.engine.state.ended.outcome == "aborted"
        assert "ended: aborted" in header_text(app)
    posted = [m.event.type for m in messages if isinstance(m, EngineEvent)]
    assert posted == [e.type for e in run.engine.events]
    assert posted.count("policy_error") == 1 and "run_ended" == posted[-1]


async def test_a_policy_that_keeps_failing_can_be_swapped_away(tmp_path: Path) -> None:
    """Retrying a policy that always raises fails again (shown again); swapping recovers."""

    class AlwaysRaises:
        name = "broken"

        def decide(self, view: RunView) -> Decision:
            raise ValueError("still broken")

    run = desk_run(AlwaysRaises(), tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await fail_once(app, pilot, "policy raised ValueError: still broken")
        await fail_once(app, pilot, "policy raised ValueError: still broken")
        assert [e.type for e in run.engine.events] == ["policy_error", "policy_error"]
        await pilot.press("p")
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        options.highlighted = 0
        await pilot.press("enter")
        await settle(pilot)
        assert run.engine.policy.name == "alpha"
        await pilot.press("n")
        await settle(pilot)
        assert run.world.calls == [("note", {"text": "alpha-1"})]
        assert app.run_status == "ready"
