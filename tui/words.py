"""The words every view of a run uses: outcomes, operator choices, a tool call.

Shared by the plain log (tui/plain.py), the Markdown report (tui/export.py)
and the transcript pane (tui/widgets/blocks.py), so a run reads the same in
each. No Textual and no Rich here. Amounts are written by
`engine.core.amounts.amount`.
"""

from __future__ import annotations

import json
from typing import Any

OUTCOME_WORDS = {"answer": "answer", "stopped": "stopped", "handed_off": "handed-off", "aborted": "aborted"}
"""A run's outcome as one word."""

CHOICE_WORDS = {
    "approve": "approved",
    "approve_always": "approved always for this tool",
    "reject": "rejected",
    "modify": "arguments edited and approved",
    "abort": "aborted",
}
"""What the operator did with a pending approval."""


_VALUE_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""`json.dumps(v, ensure_ascii=False, default=str)` without a new encoder per value."""


def call_text(tool: str | None, args: dict[str, Any]) -> str:
    """`tool(key=value, ...)` with JSON values (not cleaned: callers clean or escape it)."""
    encode = _VALUE_ENCODER.encode
    parts = [f"{k}={encode(v)}" for k, v in args.items()]
    return f"{tool or '?'}({', '.join(parts)})"
