"""The approval invariant checked over a finished run: no irreversible call ran without an approval."""

from __future__ import annotations

from engine.core.events import Event, Header
from engine.core.state import fold


def assert_no_unapproved_irreversible(header: Header, events: list[Event]) -> None:
    """Each executed irreversible call is preceded by its approval request and an approving decision."""
    kinds = {t.name: t.kind for t in header.tools}
    approved: set[tuple[int, int]] = set()
    asked: set[tuple[int, int]] = set()
    for event in events:
        if event.type == "approval_requested":
            asked.add((event.step, event.index))
        elif event.type == "approval_decided":
            assert (event.step, event.index) in asked, f"decision without a request: {event}"
            if event.choice in ("approve", "approve_always", "modify"):
                approved.add((event.step, event.index))
        elif event.type == "observation" and event.executed and kinds.get(event.tool) == "irreversible":
            key = (event.step, event.index)
            always = any(r.tool == event.tool and r.effect == "allow" for r in fold(header, events[: events.index(event)]).rules)
            assert key in approved or always, f"irreversible {event.tool} executed without approval at {key}"
