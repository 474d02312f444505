"""The operator's calls on a paused run: answer an approval, abort, swap, budgets.

`Operator` is an object the engine holds (`Engine.operator`), over `OperatedRun`: the
part of the engine it drives (its state, and how it records an event, runs a call and
goes on), a protocol so that this module never imports the engine back. Each call
checks that it fits the run's state, records its event and lets the run go on to the
next pause point. Every call is a pause point, so what it wrote reaches the transcript
before it returns. `answer` is the one way an approval is answered, whoever answers
(`engine.core.answers`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Concatenate, Mapping, ParamSpec, Protocol, Sequence, TypeVar

from engine.core.amounts import amount
from engine.core.answers import Answer
from engine.core.approvals import always_rule, decide_effect
from engine.core.events import Action, ApprovalDecided, BudgetExtended, BudgetKind, Event, Header, Outcome, PolicySwapped
from engine.core.jsonvalues import jsonable
from engine.core.policy import Policy
from engine.core.state import PendingApproval, RunState, RunStatus
from engine.core.tools import Tool, validate_args

_P = ParamSpec("_P")
_R = TypeVar("_R")


class EngineError(Exception):
    """An operator call that does not fit the run's state (approve with nothing pending)."""


class StaleApproval(EngineError, ValueError):
    """An answer to an approval that is no longer the pending one: nothing ran."""

    def __init__(self, expected: PendingApproval, why: str = "") -> None:
        said = f"the call you answered ({expected.tool}, step {expected.step}) is no longer waiting"
        super().__init__(f"{said}: {why}" if why else said)
        self.expected = expected


class OperatedRun(Protocol):
    """What the operator reads and drives of a run (`engine.core.engine.Engine` is one)."""

    header: Header
    state: RunState
    tools: Mapping[str, Tool]
    policy: Policy
    clock: Callable[[], float]
    fault: str | None
    halted: str | None
    seal_approval: Callable[[ApprovalDecided], ApprovalDecided] | None
    events: Sequence[Event]

    @property
    def status(self) -> RunStatus: ...
    @property
    def ended(self) -> bool: ...
    def _emit(self, event: Event) -> None: ...
    def _execute(self, index: int, tool: Tool, args: dict[str, Any]) -> None: ...
    def _observe(self, index: int, tool: str | None, args: dict[str, Any], text: str, **flags: Any) -> None: ...
    def _end(self, outcome: Outcome, reason: str, answer: str | None = None) -> None: ...
    def _run_queue(self) -> None: ...
    def _check_limits(self) -> bool: ...
    def _braked(self, actions: Sequence[Action]) -> bool: ...
    def _flush(self) -> None: ...
    def _halt_again(self) -> None: ...


def _flushed(method: Callable[Concatenate[Operator, _P], _R]) -> Callable[Concatenate[Operator, _P], _R]:
    """An operator call is a pause point: what it wrote goes to the sink before it returns."""

    @functools.wraps(method)
    def call(self: Operator, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        finally:
            self.run._flush()

    return call


class Operator:
    """What the operator can do to `run`."""

    def __init__(self, run: OperatedRun) -> None:
        self.run = run

    def _require_pending(self, expected: PendingApproval | None = None) -> PendingApproval:
        run = self.run
        pending = run.state.pending
        if expected is not None and pending != expected:  # by value: the cockpit holds its own folded copy
            raise StaleApproval(expected)
        if run.halted is not None:
            run._halt_again()  # RecordError: nothing runs once the transcript stopped taking events
        if pending is None or run.state.status != "awaiting_approval":
            raise EngineError("no action is waiting for approval")
        return pending

    def _go_on(self) -> None:
        run = self.run
        if run.fault is not None:
            return
        run._run_queue()
        if not run.ended and run.state.status == "ready" and not run.state.queue:
            run._check_limits()

    @_flushed
    def answer(self, answer: Answer, expected: PendingApproval | None = None) -> RunStatus:
        """Apply `answer` to the pending approval (with `expected`, only if that is the one
        pending: `StaleApproval` otherwise), then let the run go on to its next pause."""
        self.apply(answer, expected)
        if answer.choice != "abort":
            self._go_on()
        return self.run.status

    def apply(self, answer: Answer, expected: PendingApproval | None = None) -> None:
        """The one place an approval is answered: check that `answer` fits the approval pending
        (an edit's arguments are validated first), record it and carry it out, stopping there.
        `answer` goes on from it; the engine's own `--approve` answerers call this mid-queue."""
        run = self.run
        pending = self._require_pending(expected)
        step, index = pending.step, pending.index
        if answer.choice in ("reject", "abort"):
            run._emit(ApprovalDecided(at=run.clock(), step=step, index=index, choice=answer.choice, reason=answer.reason, by=answer.by))
            if answer.choice == "abort":
                run._end("aborted", answer.reason or "")
            else:
                run._observe(index, pending.tool, pending.args, answer.rejection, error=True)
            return
        args = self.check_edit(answer.args) if answer.choice == "modify" else pending.args  # type: ignore[arg-type]
        rule = always_rule(pending.tool) if answer.choice == "approve_always" else None
        run.fault = None
        decided = ApprovalDecided(
            at=run.clock(),
            step=step,
            index=index,
            choice=answer.choice,
            args=args if answer.choice == "modify" else None,
            rule=rule,
            by=answer.by,
        )
        if rule is not None and run.seal_approval is not None:
            decided = run.seal_approval(decided)
        run._emit(decided)
        run._execute(index, run.tools[pending.tool], args)

    def check_edit(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validate edited arguments for the pending action; raises ValueError."""
        pending = self._require_pending()
        tool = self.run.tools[pending.tool]
        if isinstance(args, dict) and (problem := jsonable(args)) is not None:
            raise ValueError(f"the arguments cannot be written as JSON ({problem})")
        clean = validate_args(tool, args)
        effect, why = decide_effect(self.run.state.rules, tool, clean, args)
        if effect == "deny":
            raise ValueError(f"these arguments are denied ({why})")
        return clean

    @_flushed
    def abort(self, reason: str = "aborted by the operator") -> RunStatus:
        """End the run now, outcome "aborted" (an approval pending is answered "abort")."""
        run = self.run
        if run.ended or run.halted is not None:
            return run.status
        if run.state.pending is not None:
            self.apply(Answer.abort(reason))
        else:
            run._end("aborted", reason)
        return run.status

    @_flushed
    def swap_policy(self, policy: Policy) -> None:
        """Use `policy` from the next decision on (recorded as an event)."""
        run = self.run
        old = run.policy.name
        run.policy = policy
        if not run.ended:
            run._emit(PolicySwapped(at=run.clock(), step=run.state.step + 1, old=old, new=policy.name))

    @_flushed
    def extend_budget(self, kind: BudgetKind, limit: float) -> RunStatus:
        """Raise a limit (the cockpit's answer to a budget pause)."""
        run = self.run
        if run.ended:
            raise EngineError("the run has ended")
        if limit <= run.state.used(kind):
            raise ValueError(f"the new {kind} limit must be above what is used ({amount(kind, run.state.used(kind))})")
        run._emit(BudgetExtended(at=run.clock(), kind=kind, limit=limit))
        return run.status

    @_flushed
    def end_answered(self) -> RunStatus:
        """End a run whose last decision answered but whose end was never recorded
        (the file was cut between the two lines): the answer stands, nobody decides again."""
        run = self.run
        last = run.state.history[-1] if run.state.history else None
        if run.ended or last is None or last.answer is None:
            raise EngineError("the run's last decision is not an answer waiting for its end")
        run._end("answer", "final answer", answer=last.answer)
        return run.status

    @_flushed
    def end_if_braked(self) -> bool:
        """End a run whose last event is a decision that reached the repetition brake,
        when the brake's end was never recorded (the file was cut between the two
        lines): the brake holds and the repeated action never runs. True when it ended."""
        run = self.run
        count = len(run.events)
        if run.ended or not count or run.events[count - 1].type != "decision":
            return False
        return run._braked(run.state.history[-1].actions)

    @_flushed
    def end_at_budget(self) -> RunStatus:
        """Accept a budget pause as the end of the run."""
        run = self.run
        exhausted = run.state.exhausted
        if exhausted is None:
            raise EngineError("the run is not paused at a budget limit")
        run._end(
            "stopped",
            f"{exhausted.kind} budget reached: {amount(exhausted.kind, exhausted.used)} of {amount(exhausted.kind, exhausted.limit)}",
        )
        return run.status
