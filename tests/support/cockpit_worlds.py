"""Small worlds and policies for the cockpit tests (pilot, snapshots, hostile text)."""


from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from textual.pilot import Pilot

from engine import Budget, Decision, Param, PolicyError, Scenario, ScriptedPolicy, Task, Tool
from engine.core.policy import RunView
from engine.sessions.run import Run, new_run
from tui.widgets.footer import CockpitFooter, FooterKeyLabel, key_width

FIXED_TIME = 1_790_000_000.0


def fixed_clock() -> float:
    return FIXED_TIME


class DeskWorld:
    """`note` (ordinary, string), `pay` (irreversible, integer amount), `leave` (exit)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.tools = [
            Tool("note", "Write a note.", (Param("text", description="What to write."),), self._note, timeout=None),
            Tool(
                "pay",
                "Pay an amount to a customer. Money leaves the shop.",
                (Param("amount", "integer", description="Whole euros."), Param("to", required=False)),
                self._pay,
                kind="irreversible",
                timeout=None,
            ),
            Tool("leave", "Hand the case to a colleague.", (Param("reason"),), kind="exit", outcome="handed_off", answer_param="reason"),
        ]

    def _note(self, text: str) -> str:
        self.calls.append(("note", {"text": text}))
        return f"noted: {text}"

    def _pay(self, amount: int, to: str = "customer") -> str:
        self.calls.append(("pay", {"amount": amount, "to": to}))
        return f"paid {amount} to {to}"


def by_step(name: str, *decisions: Decision) -> ScriptedPolicy:
    """Plays `decisions` by step number, then answers "done"."""

    def decide(view: RunView) -> Decision:
        index = view.step - 1
        if index < len(decisions):
            return decisions[index]
        return Decision.final(f"{name} has nothing left", "done")

    return ScriptedPolicy(name, decide)


def noter(name: str) -> ScriptedPolicy:
    """Writes a different note every step and never stops on its own."""

    def decide(view: RunView) -> Decision:
        return Decision.act(f"{name} writes note {view.step}", "note", text=f"{name}-{view.step}")

    return ScriptedPolicy(name, decide)


def pay_twice() -> ScriptedPolicy:
    return by_step(
        "pay-twice",
        Decision.act("First payment.", "pay", amount=5),
        Decision.act("Second payment.", "pay", amount=7),
        Decision.final("Both paid.", "paid twice"),
    )


def reads_rejection() -> ScriptedPolicy:
    """Pays once; then answers with whatever the last observation said (a rejection reason, say)."""

    def decide(view: RunView) -> Decision:
        seen = view.observations()
        if not seen:
            return Decision.act("I pay 5.", "pay", amount=5)
        return Decision.final("I read the outcome.", f"last: {seen[-1].text}")

    return ScriptedPolicy("reads-rejection", decide)


class FailingOnce:
    """Raises a PolicyError on its first call, then notes."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    def decide(self, view: RunView) -> Decision:
        self.calls += 1
        if self.calls == 1:
            raise PolicyError("the endpoint answered 503 [bold]busy[/]")
        return Decision.act("Second try works.", "note", text="retry")


class Gate:
    """A policy that waits for the test at every decision (deterministic interrupts)."""

    name = "gated"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.decisions = 0

    def decide(self, view: RunView) -> Decision:
        self.entered.set()
        if not self.release.wait(timeout=30):
            raise PolicyError("the test never released the gate")
        self.release.clear()
        self.decisions += 1
        return Decision.act(f"gated step {view.step}", "note", text=f"gate-{view.step}")


POLICIES: dict[str, Callable[[], Any]] = {
    "alpha": lambda: noter("alpha"),
    "beta": lambda: noter("beta"),
    "pay-twice": pay_twice,
    "reads-rejection": reads_rejection,
}


def desk_scenario(budget: Budget | None = None) -> Scenario:
    return Scenario(
        name="desk",
        description="cockpit test desk",
        tasks={"t": Task("t", "Settle the customer's case.")},
        policies={name: (lambda w, t, make=make: make()) for name, make in POLICIES.items()},
        make_world=lambda task, options: DeskWorld(),
        budget=budget or Budget(max_steps=20, max_tokens=5000),
    )


def support_run(tmp_path: Path, **kwargs: Any) -> Run:
    """The support desk's return task with the scripted policy, saved under `tmp_path`."""
    import scenarios

    return new_run(
        scenarios.get("support"),
        "return-1187",
        "scripted",
        save=True,
        out=tmp_path / "support.jsonl",
        interactive=True,
        clock=fixed_clock,
        **kwargs,
    )


def desk_run(policy: Any, tmp_path: Path, *, budget: Budget | None = None, **kwargs: Any) -> Run:
    return new_run(
        desk_scenario(budget),
        "t",
        policy,
        save=True,
        out=tmp_path / "run.jsonl",
        interactive=True,
        clock=fixed_clock,
        **kwargs,
    )


async def wait_until(pilot: Pilot, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    """Let the app process messages until `predicate()` holds (a deadline, not a fixed sleep)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.01)


async def settle(pilot: Pilot) -> None:
    """Wait for the engine worker and every message it posted."""
    app = pilot.app
    await app.workers.wait_for_complete()
    await wait_until(pilot, lambda: not app.busy, what="the engine operation to finish")
    await pilot.pause()


async def pick_policy(pilot: Pilot, name: str) -> None:
    """Open the policy picker with `p` and choose `name` with the arrow keys and enter, as an operator does."""
    from tui.screens.dialogs import PolicyPicker

    await pilot.press("p")
    picker = pilot.app.screen
    assert isinstance(picker, PolicyPicker), "p opens the policy picker"
    start = picker.names.index(picker.current) if picker.current in picker.names else 0
    moves = picker.names.index(name) - start
    for _ in range(abs(moves)):
        await pilot.press("down" if moves > 0 else "up")
    await pilot.press("enter")


def screen_text(app: Any) -> list[str]:
    """The terminal's text as the app draws it now, one string per row (the top screen
    over the ones under it, as a terminal shows them)."""
    import io

    from rich.console import Console

    console = Console(
        width=app.size.width, height=app.size.height, file=io.StringIO(), force_terminal=True, record=True, legacy_windows=False
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text().splitlines()


def shown_keys(app) -> list[FooterKeyLabel]:
    """The footer's own keys (not the always-shown ones), after checking each is drawn whole
    left of the always-shown keys."""
    footer = app.query_one(CockpitFooter)
    always = footer.query_one("#always-keys")
    keys = [key for key in footer.children if isinstance(key, FooterKeyLabel) and key.display]
    for key in keys:
        words = f"{key.key_display} {key.description}"
        assert key.region.width == key_width(key.key_display, key.description), words
        assert key.region.right <= always.region.x, f"{words!r} runs under the help and quit keys"
        assert key.region.x >= 0 and key.region.right <= app.size.width, words
    return keys


def actions(app) -> list[str]:
    return [key.action for key in shown_keys(app)]


def _keys_drawn_whole(app) -> bool:
    footer = app.query_one(CockpitFooter)
    keys = [key for key in footer.children if isinstance(key, FooterKeyLabel) and key.display]
    return bool(keys) and all(key.region.width == key_width(key.key_display, key.description) for key in keys)


async def footer_actions(pilot: Pilot) -> list[str]:
    """`actions` once the footer has laid out the keys it chose (a key cut for good times out)."""
    await wait_until(pilot, lambda: _keys_drawn_whole(pilot.app), what="the footer's keys drawn whole")
    return actions(pilot.app)
