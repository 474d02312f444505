"""What an operator steers a run through: one interface for every kind of run.

The cockpit drives a local run (`tui.bridge.EngineOperating` around an
`Engine`) and a gateway's runs (`engine.gateway.controller.Gateway`) through
the same `Operating` calls. Each call may run a policy or a tool (a model's
reply, an agent's request), so the cockpit makes them off its UI thread; on
the UI thread it reads only the folded copy of the state it keeps itself.

An approval is answered with one call, `answer`, given an `Answer`
(`engine.core.answers`) and the approval the operator saw (`expected`): the
engine's `Operator.apply` refuses it with `StaleApproval` when another has
taken its place since (a gateway's agent can start a new run meanwhile), so
no call runs unseen. `abort` is a call of its own: a run is aborted with no
approval pending too.
"""

from __future__ import annotations

from typing import Callable, Protocol

from engine.core.answers import ABORTED, Answer
from engine.core.events import BudgetKind
from engine.core.state import PendingApproval, RunState


class Operating(Protocol):
    """A run as the operator steers it; every call but `status` and `folded_state` may take long."""

    def step(self) -> None:
        """Let the policy decide once (a gateway: one model turn, now or for the next request)."""

    def go_on(self, should_stop: Callable[[], bool]) -> None:
        """Go on without the operator's `step` until a pause, the end, or `should_stop()`."""

    def pause(self) -> None:
        """Stop going on by itself after the current step."""

    def answer(self, answer: Answer, expected: PendingApproval | None = None) -> None:
        """Answer the pending approval, only if it is `expected` (the one the operator saw)."""

    def abort(self, reason: str = ABORTED) -> None:
        """End the run now, outcome "aborted" (an approval pending or not)."""

    def swap_policy(self, name: str) -> None:
        """Let the policy (a gateway: the upstream) named `name` take the next steps."""

    def extend_budget(self, kind: BudgetKind, limit: float) -> None: ...

    def end_at_budget(self) -> None: ...

    def status(self) -> str:
        """The run's status now (a `RunStatus`, or a gateway's words for where its request is)."""

    def folded_state(self) -> RunState | None:
        """A copy of the run's folded state, the caller's to keep (None: no run yet, as a
        gateway before the agent's first request)."""
