"""Places worth jumping to in a run (markers), and the words of an event for search."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from engine.core.text import one_line
from engine.core.events import Event

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


def marker_for(index: int, event: Event, *, rejected_call: tuple[int, int] | None = None) -> Marker | None:
    """The marker an event makes, if any. `rejected_call` is the (step, index) of the
    call the operator last rejected: its observation is not a second marker."""
    t = event.type
    if t == "approval_requested":
        return Marker(index, "approval", f"step {event.step}: {event.tool} needs approval")
    if t == "approval_decided" and event.choice in ("reject", "abort"):
        why = f": {one_line(event.reason)}" if event.reason else ""
        return Marker(index, "rejection", f"step {event.step}: {event.choice}ed{why}")
    if t == "observation" and event.error and (event.step, event.index) != rejected_call:
        return Marker(index, "error", f"step {event.step}: {one_line(event.text)}")
    if t == "policy_error":
        return Marker(index, "error", f"step {event.step}: policy {event.policy} failed: {one_line(event.message)}")
    if t == "policy_swapped":
        return Marker(index, "policy_swap", f"policy {event.old} -> {event.new} from step {event.step}")
    if t == "budget_warning":
        return Marker(index, "budget", f"{event.kind} budget at {event.used:g} of {event.limit:g}")
    if t == "budget_exhausted":
        return Marker(index, "budget", f"{event.kind} budget reached: {event.used:g} of {event.limit:g}")
    if t == "run_ended":
        return Marker(index, "end", f"{event.outcome}: {one_line(event.answer or event.reason)}")
    return None


def event_text(event: Event) -> str:
    """The words of an event, for search."""
    t = event.type
    if t == "decision":
        parts = [event.thought, *(a.render() for a in event.actions)]
        if event.answer is not None:
            parts.append(event.answer)
        if event.parse_error:
            parts += [event.parse_error, event.raw or ""]
        return "\n".join(parts)
    if t == "observation":
        return f"{event.tool or ''}\n{event.text}"
    if t in ("approval_requested",):
        return f"{event.tool} {json.dumps(event.args, ensure_ascii=False)} {event.reason}"
    if t == "approval_decided":
        return f"{event.choice} {event.reason or ''} {event.by}"
    if t == "policy_swapped":
        return f"{event.old} {event.new}"
    if t == "policy_error":
        return f"{event.policy} {event.message}"
    if t == "note":
        return f"{event.kind} {event.text}"
    if t == "run_ended":
        return f"{event.outcome} {event.reason} {event.answer or ''}"
    return t
