"""Places worth jumping to in a run (markers), labelled in the one description of an
event (engine/core/describe.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.core.describe import event_blocks, outcome_detail, outcome_words
from engine.core.events import Event
from engine.core.text import one_line

MarkerKind = Literal["approval", "rejection", "error", "policy_swap", "budget", "end"]
MARKER_KINDS: tuple[MarkerKind, ...] = ("approval", "rejection", "error", "policy_swap", "budget", "end")


@dataclass(frozen=True)
class Marker:
    """A place worth jumping to. `index` is the event's index; seeking to
    `position` (index + 1) shows the run just after that event."""

    index: int
    kind: MarkerKind
    label: str

    @property
    def position(self) -> int:
        return self.index + 1


_MARKER_KINDS: dict[str, MarkerKind] = {
    "approval_requested": "approval",
    "policy_error": "error",
    "policy_swapped": "policy_swap",
    "budget_warning": "budget",
    "budget_exhausted": "budget",
    "run_ended": "end",
}


def marker_for(index: int, event: Event, *, rejected_call: tuple[int, int] | None = None) -> Marker | None:
    """The marker an event makes, if any, labelled with the event's words on one line
    (`engine.core.describe`). `rejected_call` is the (step, index) of the call the
    operator last rejected: its observation is not a second marker."""
    t = event.type
    if t == "approval_decided" and event.choice in ("reject", "abort"):
        kind: MarkerKind | None = "rejection"
    elif t == "observation" and event.error and (event.step, event.index) != rejected_call:
        kind = "error"
    else:
        kind = _MARKER_KINDS.get(t)
    if kind is None:
        return None
    if t == "run_ended":
        detail = outcome_detail(event)
        return Marker(index, kind, outcome_words(event) + (f": {one_line(detail)}" if detail else ""))
    words = one_line(" ".join(block.text for block in event_blocks(event)))
    if t == "policy_swapped":
        return Marker(index, kind, f"policy {words}")
    if kind == "budget":
        return Marker(index, kind, f"budget: {words}")
    return Marker(index, kind, f"step {event.step}: {words}")

