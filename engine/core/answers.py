"""The operator's answer to an approval: approve, approve always, reject with a reason,
edit with new arguments, or abort (the shape of Inspect AI's `Approval`: a decision, the
edited call, an explanation).

Whoever answers builds an `Answer`: the cockpit's dialogs, the headless prompt, the
gateway's cockpit, a re-run of a recorded decision (`verify`), and `--approve all|none`
(`auto_answer`). One function applies it to a paused run, `Operator.answer`
(`engine.core.operator`): it checks the answer is for the approval pending, validates
an edit, records the `approval_decided` event and carries the answer out.

A frozen dataclass, not a pydantic model: an answer is made in-process, never read from
a file or the network (what is recorded is the `ApprovalDecided` event it becomes), so
there is nothing to validate but its own shape, which `__post_init__` checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from engine.core.events import ApprovalChoice, ApprovalDecided

ApproveMode = Literal["ask", "all", "none"]
"""How a run's approvals are answered: "ask" pauses for the operator, "all" and "none"
answer on their own (`auto_answer`); the answer is recorded as any other."""

OPERATOR = "operator"
ABORTED = "aborted by the operator"
NO_REASON = "no reason given"

_WHAT = {"approve": "approve", "approve_always": "approve always", "reject": "reject", "modify": "edit", "abort": "abort"}


@dataclass(frozen=True)
class Answer:
    """One answer to the pending approval. `reason` is a rejection's or an abort's (what the
    policy reads, what the run's end says), `args` an edit's new arguments (validated when
    applied), `by` who answered, as recorded. `automatic` answers (`--approve none`) word
    their rejection without naming the operator."""

    choice: ApprovalChoice
    reason: str | None = None
    args: dict[str, Any] | None = None
    by: str = OPERATOR
    automatic: bool = False

    def __post_init__(self) -> None:
        if self.choice not in _WHAT:
            raise ValueError(f"not an answer to an approval: {self.choice!r}")
        if self.choice == "reject":
            object.__setattr__(self, "reason", (self.reason or "").strip() or NO_REASON)
        elif self.choice == "abort" and self.reason is None:
            object.__setattr__(self, "reason", ABORTED)
        if self.choice != "modify" and self.args is not None:
            raise ValueError("only an edit carries new arguments")

    @classmethod
    def approve(cls, by: str = OPERATOR) -> Answer:
        return cls("approve", by=by)

    @classmethod
    def approve_always(cls, by: str = OPERATOR) -> Answer:
        """Approve, and allow this tool from now on (a rule the run records)."""
        return cls("approve_always", by=by)

    @classmethod
    def reject(cls, reason: str, by: str = OPERATOR) -> Answer:
        """Run nothing; the policy reads `reason` (blank: "no reason given")."""
        return cls("reject", reason=reason, by=by)

    @classmethod
    def edit(cls, args: dict[str, Any], by: str = OPERATOR) -> Answer:
        """Run the call with `args` instead (checked against the tool and the rules when applied)."""
        return cls("modify", args=args, by=by)

    @classmethod
    def abort(cls, reason: str = ABORTED, by: str = OPERATOR) -> Answer:
        """End the run here, outcome "aborted"."""
        return cls("abort", reason=reason, by=by)

    @classmethod
    def recorded(cls, event: ApprovalDecided) -> Answer:
        """The answer `event` records (a re-run gives the same answer again)."""
        args = dict(event.args or {}) if event.choice == "modify" else None
        reason = event.reason or ABORTED if event.choice == "abort" else event.reason
        return cls(event.choice, reason=reason, args=args, by=event.by)

    @property
    def what(self) -> str:
        """What the answer does, in the operator's words ("approve always", "edit")."""
        return _WHAT[self.choice]

    @property
    def rejection(self) -> str:
        """The observation a rejection leaves for the policy."""
        return f"REJECTED: {self.reason}" if self.automatic else f"REJECTED by the operator: {self.reason}"


AUTO_ANSWERS: dict[ApproveMode, Answer] = {
    "all": Answer.approve(by="auto (--approve all)"),
    "none": Answer("reject", reason="approvals are switched off for this run (--approve none)", by="auto (--approve none)", automatic=True),
}


def auto_answer(mode: ApproveMode) -> Answer | None:
    """The answer `--approve all|none` gives every approval; None for "ask" (the operator answers)."""
    return AUTO_ANSWERS.get(mode)
