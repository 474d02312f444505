"""The keys that answer a call waiting for approval.

The cockpit, the gateway's screen and the approval dialog answer with the
same four keys; they are written once here so that the three cannot drift.
"""

from __future__ import annotations

from textual.binding import Binding

APPROVAL_KEYS = (
    ("a", "approve", "approve"),
    ("A", "approve_always", "approve always"),
    ("r", "reject", "reject"),
    ("e", "edit", "edit"),
)
"""(key, choice, footer word) for each answer to a pending call."""


def approval_bindings(action: str = "{}") -> list[Binding]:
    """The approval keys bound to `action` with the choice put in its `{}`."""
    return [Binding(key, action.format(choice), word) for key, choice, word in APPROVAL_KEYS]
