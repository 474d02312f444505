"""Where the engine meets Textual: engine calls off the UI thread, events as messages.

The cockpit never calls a policy or a tool on the UI thread. Every operator call
that may run one (step, continue, an answer to an approval, abort, swap, budget)
goes through `EngineBridge.perform`, which the app runs in a thread worker, on
the run's `engine.core.operating.Operating`: `EngineOperating` for a local
engine here, the `Gateway` itself for a gateway's runs (`tui.gateway_cockpit`).
The engine's listeners fire on that thread; the bridge turns each event and
each streamed thought delta into a Textual message posted to the app
(`post_message` is thread-safe and keeps the order), and posts `WorkDone` last,
so the app sees every event of an operation before it learns the operation
ended. Nothing here touches a widget.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from textual.message import Message
from textual.message_pump import MessagePump

from engine.core.answers import ABORTED, Answer
from engine.core.engine import Engine
from engine.core.events import BudgetKind, Event
from engine.core.operating import Operating
from engine.core.policy import Policy
from engine.core.state import PendingApproval, RunState

EngineOp = Callable[[Operating], object]
"""An operator call the bridge makes off the UI thread, on the run's `Operating`."""


class EngineOperating:
    """A local engine run as `Operating`: the engine's own calls; a policy swapped in by name
    comes from `policy_named` (the cockpit's `make_policy`)."""

    def __init__(self, engine: Engine, policy_named: Callable[[str], Policy]) -> None:
        self.engine = engine
        self.policy_named = policy_named

    def step(self) -> None:
        self.engine.step()

    def go_on(self, should_stop: Callable[[], bool]) -> None:
        self.engine.run(should_stop=should_stop)

    def pause(self) -> None:
        """A local run stops where `go_on`'s `should_stop` says so (the cockpit's escape)."""

    def answer(self, answer: Answer, expected: PendingApproval | None = None) -> None:
        self.engine.answer(answer, expected)

    def abort(self, reason: str = ABORTED) -> None:
        self.engine.abort(reason)

    def swap_policy(self, name: str) -> None:
        self.engine.swap_policy(self.policy_named(name))

    def extend_budget(self, kind: BudgetKind, limit: float) -> None:
        self.engine.extend_budget(kind, limit)

    def end_at_budget(self) -> None:
        self.engine.end_at_budget()

    def status(self) -> str:
        return self.engine.status

    def folded_state(self) -> RunState:
        return self.engine.state.copy()


class LeavingExecutor(ThreadPoolExecutor):
    """The event loop's executor for thread workers, which does not wait at shutdown.

    A policy or tool that ignores interruption (a hung call without `cancel`)
    must not keep the cockpit from closing: asyncio joins its default
    executor when the app's loop ends, so this one declines to wait. The
    transcript is already written event by event; the console script then
    leaves without joining the abandoned thread.
    """

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=cancel_futures)


@dataclass
class EngineEvent(Message):
    """One engine event, delivered on the UI thread in the order it happened."""

    event: Event


@dataclass
class ThoughtStreamed(Message):
    """A piece of the thought a model policy is streaming right now."""

    delta: str


@dataclass
class WorkDone(Message):
    """An engine operation finished (after all of its events were posted).

    `status` is the engine's status afterwards; `error` is set when the
    operation raised (an operator call that did not fit the state, or a bug):
    the cockpit shows it and stays up. `halted` (the transcript could not be
    written) and `fault` (a tool server failed) are the local engine's, read on
    the worker thread when the operation ended, so the UI never reads them from
    the live engine.
    """

    label: str
    status: str
    error: str | None = None
    halted: str | None = None
    fault: str | None = None


class EngineBridge:
    """Runs operator calls for the app and forwards what the engine emits."""

    def __init__(self, operating: Operating, target: MessagePump, engine: Engine | None = None) -> None:
        self.operating = operating
        self.engine = engine
        """The local engine whose listeners the bridge forwards (None: a subclass listens elsewhere)."""
        self.target = target
        self.interrupt = threading.Event()
        """Set by the operator (escape) to stop a `continue` after the current step."""
        self.abort_requested = threading.Event()
        """Set by the operator to abort as soon as the current operation returns."""
        self._attached = False

    def attach(self) -> None:
        if not self._attached and self.engine is not None:
            self.engine.listeners.append(self._forward_event)
            self.engine.stream_listeners.append(self._forward_delta)
            self._attached = True

    def detach(self) -> None:
        if self._attached:
            self.engine.listeners.remove(self._forward_event)
            self.engine.stream_listeners.remove(self._forward_delta)
            self._attached = False

    def _forward_event(self, event: Event) -> None:
        self.target.post_message(EngineEvent(event))

    def _forward_delta(self, delta: str) -> None:
        self.target.post_message(ThoughtStreamed(delta))

    def should_stop(self) -> bool:
        return self.interrupt.is_set() or self.abort_requested.is_set()

    def perform(self, label: str, op: EngineOp) -> None:
        """Run `op(operating)` on the calling (worker) thread; never raises."""
        error: str | None = None
        try:
            op(self.operating)
        except Exception as exc:  # the cockpit must outlive any failure
            detail = str(exc)
            error = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        if self.abort_requested.is_set():
            self.abort_requested.clear()
            try:
                self.operating.abort()
            except Exception as exc:
                error = f"abort failed: {type(exc).__name__}: {exc}"
        try:
            status = self.operating.status()
        except Exception:
            status = "ready"
        halted = fault = None
        if self.engine is not None:
            halted, fault = self.engine.halted, self.engine.fault
        self.target.post_message(WorkDone(label, status, error, halted, fault))
