"""The operator's calls on a paused run: approve, reject, edit, abort, swap, budgets.

A mixin of `Engine` (engine.core.engine): each call checks that it fits the run's
state, records its event and lets the run go on to the next pause point. Every
call is a pause point, so what it wrote reaches the transcript before it returns.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from engine.core.amounts import amount
from engine.core.approvals import always_rule, decide_effect
from engine.core.events import ApprovalDecided, BudgetExtended, BudgetKind, PolicySwapped
from engine.core.policy import Policy
from engine.core.jsonvalues import jsonable
from engine.core.tools import validate_args

def _flushed(method: Callable[..., Any]) -> Callable[..., Any]:
    """An operator call is a pause point: what it wrote goes to the sink before it returns."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        finally:
            self._flush()

    return call


class EngineError(Exception):
    """An operator call that does not fit the run's state (approve with nothing pending)."""


class OperatorCalls:
    """What the operator can do to an `Engine`; the engine supplies the state and `_emit`
    (`self` is that engine: typed Any so this module never imports the engine back)."""

    def _require_pending(self: Any):
        if self.halted is not None:
            self._halt_again()  # RecordError: nothing runs once the transcript stopped taking events
        pending = self.state.pending
        if pending is None or self.state.status != "awaiting_approval":
            raise EngineError("no action is waiting for approval")
        return pending

    def _after_operator(self: Any) -> None:
        if self.fault is not None:
            return
        self._run_queue()
        if not self.ended and self.state.status == "ready" and not self.state.queue:
            self._check_limits()

    @_flushed
    def approve(self: Any, always: bool = False, by: str = "operator") -> str:
        pending = self._require_pending()
        rule = always_rule(pending.tool) if always else None
        self.fault = None
        decided = ApprovalDecided(
            at=self.clock(),
            step=pending.step,
            index=pending.index,
            choice="approve_always" if always else "approve",
            rule=rule,
            by=by,
        )
        if rule is not None and self.seal_approval is not None:
            decided = self.seal_approval(decided)
        self._emit(decided)
        self._execute(pending.index, self.tools[pending.tool], pending.args)
        self._after_operator()
        return self.status

    @_flushed
    def reject(self: Any, reason: str, by: str = "operator") -> str:
        pending = self._require_pending()
        reason = reason.strip() or "no reason given"
        self._emit(
            ApprovalDecided(at=self.clock(), step=pending.step, index=pending.index, choice="reject", reason=reason, by=by)
        )
        self._observe(pending.index, pending.tool, pending.args, f"REJECTED by the operator: {reason}", error=True)
        self._after_operator()
        return self.status

    def check_edit(self: Any, args: dict[str, Any]) -> dict[str, Any]:
        """Validate edited arguments for the pending action; raises ValueError."""
        pending = self._require_pending()
        tool = self.tools[pending.tool]
        if isinstance(args, dict) and (problem := jsonable(args)) is not None:
            raise ValueError(f"the arguments cannot be written as JSON ({problem})")
        clean = validate_args(tool, args)
        effect, why = decide_effect(self.state.rules, tool, clean, args)
        if effect == "deny":
            raise ValueError(f"these arguments are denied ({why})")
        return clean

    @_flushed
    def modify(self: Any, args: dict[str, Any], by: str = "operator") -> str:
        """Run the pending action with edited arguments (validated first; ValueError if not valid)."""
        pending = self._require_pending()
        clean = self.check_edit(args)
        self.fault = None
        self._emit(
            ApprovalDecided(at=self.clock(), step=pending.step, index=pending.index, choice="modify", args=clean, by=by)
        )
        self._execute(pending.index, self.tools[pending.tool], clean)
        self._after_operator()
        return self.status

    @_flushed
    def abort(self: Any, reason: str = "aborted by the operator") -> str:
        if self.ended or self.halted is not None:
            return self.status
        pending = self.state.pending
        if pending is not None:
            self._emit(
                ApprovalDecided(at=self.clock(), step=pending.step, index=pending.index, choice="abort", reason=reason)
            )
        self._end("aborted", reason)
        return self.status

    @_flushed
    def swap_policy(self: Any, policy: Policy) -> None:
        """Use `policy` from the next decision on (recorded as an event)."""
        old = self.policy.name
        self.policy = policy
        if not self.ended:
            self._emit(PolicySwapped(at=self.clock(), step=self.state.step + 1, old=old, new=policy.name))

    @_flushed
    def extend_budget(self: Any, kind: BudgetKind, limit: float) -> str:
        """Raise a limit (the cockpit's answer to a budget pause)."""
        if self.ended:
            raise EngineError("the run has ended")
        if limit <= self.state.used(kind):
            raise ValueError(f"the new {kind} limit must be above what is used ({amount(kind, self.state.used(kind))})")
        self._emit(BudgetExtended(at=self.clock(), kind=kind, limit=limit))
        return self.status

    @_flushed
    def end_answered(self: Any) -> str:
        """End a run whose last decision answered but whose end was never recorded
        (the file was cut between the two lines): the answer stands, nobody decides again."""
        last = self.state.history[-1] if self.state.history else None
        if self.ended or last is None or last.answer is None:
            raise EngineError("the run's last decision is not an answer waiting for its end")
        self._end("answer", "final answer", answer=last.answer)
        return self.status

    @_flushed
    def end_if_braked(self: Any) -> bool:
        """End a run whose last event is a decision that reached the repetition brake,
        when the brake's end was never recorded (the file was cut between the two
        lines): the brake holds and the repeated action never runs. True when it ended."""
        count = len(self.events)
        if self.ended or not count or self.events[count - 1].type != "decision":
            return False
        return self._braked(self.state.history[-1].actions)

    @_flushed
    def end_at_budget(self: Any) -> str:
        """Accept a budget pause as the end of the run."""
        exhausted = self.state.exhausted
        if exhausted is None:
            raise EngineError("the run is not paused at a budget limit")
        self._end(
            "stopped",
            f"{exhausted.kind} budget reached: {amount(exhausted.kind, exhausted.used)} of {amount(exhausted.kind, exhausted.limit)}",
        )
        return self.status
