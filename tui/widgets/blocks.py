"""An event as labelled blocks of text: what the transcript pane draws, in its words.

The words come from tui/words.py (shared with the plain log and the report)
and amounts from `engine.core.amounts`. Untrusted text is cleaned here
(`safe_text`), once, before anything measures or draws it.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from rich.cells import cell_len

from engine.core.amounts import amount
from engine.core.events import Event
from engine.core.text import clean
from tui.plain import steps_count
from tui.words import CHOICE_WORDS, OUTCOME_WORDS, call_text

FOLD_AT = 6
"""An observation longer than this many rows is folded to FOLD_AT rows."""
TAB_SIZE = 4


class Block(NamedTuple):
    """A labelled piece of an event: one or more rows in the text column."""

    label: str
    kind: str
    text: str
    foldable: bool = False


_CLEAN_TOUCHES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Every character `clean` acts on (control characters, bidi marks), and tab."""


def safe_text(value: str) -> str:
    """Untrusted text made safe to draw: `engine.core.text.clean`, then tabs expanded.

    Text without a character `clean` acts on is returned as it is, after a
    quick scan (most text; the regexes of `clean` are slow on long outputs).
    The tests check this gives exactly what `clean` gives.
    """
    if value.isascii():
        if value.isprintable() or value.replace("\n", "").isprintable():
            return value
    elif _CLEAN_TOUCHES.search(value) is None:
        return value
    text = clean(value)
    return text.expandtabs(TAB_SIZE) if "\t" in text else text


def _call(tool: str | None, args: dict) -> str:
    """`tool(key=value, ...)`, the same words as `tui.plain.render_args`, cleaned."""
    return safe_text(call_text(tool, args))


def _shown_in_step(reason: str) -> bool:
    """Whether the step that ended the run shows its answer (a final answer, or an exit tool's call)."""
    return reason == "final answer" or reason.endswith(" called")


NOTE_BLOCKS = {
    "user": ("User", "header", False),
    "system": ("System", "header", True),
    "subagent": ("Sub-agent", "observe", True),
    "unrecognised": ("Unmapped", "policy", True),
}
"""A note's label, style and whether it folds: user messages stand out, the rest folds like an observation."""

_CHOICE_LABELS = {
    "approve": ("Approved", "approval"),
    "approve_always": ("Approved", "approval"),
    "reject": ("Rejected", "rejected"),
    "modify": ("Edited", "edited"),
    "abort": ("Aborted", "rejected"),
}


def event_blocks(event: Event) -> list[Block]:
    """What one event says, as labelled blocks (the same words as `tui.plain`)."""
    t = event.type
    if t == "decision":
        blocks = []
        if event.thought:
            blocks.append(Block("Thought", "thought", safe_text(event.thought)))
        if event.parse_error:
            blocks.append(Block("Invalid", "error", safe_text(event.parse_error)))
            if event.raw is not None:
                blocks.append(Block("Wrote", "observe", safe_text(event.raw), True))
        for action in event.actions:
            blocks.append(Block("Action", "action", _call(action.tool, action.args)))
        if event.answer is not None:
            blocks.append(Block("Answer", "answer", safe_text(event.answer)))
        return blocks or [Block("Thought", "thought", "")]
    if t == "observation":
        if event.error:
            return [Block("Error", "error", safe_text(event.text), True)]
        return [Block("Observe", "observe", safe_text(event.text), True)]
    if t == "approval_requested":
        what = f"{_call(event.tool, event.args)} needs approval ({event.reason})"
        return [Block("Approval", "approval", safe_text(what))]
    if t == "approval_decided":
        label, kind = _CHOICE_LABELS[event.choice]
        words = CHOICE_WORDS[event.choice]
        detail = f": {event.reason}" if event.reason else ""
        if event.choice == "modify" and event.args is not None:
            detail = ": " + json.dumps(event.args, ensure_ascii=False)
        return [Block(label, kind, safe_text(f"{words} by {event.by}{detail}"))]
    if t == "policy_swapped":
        return [Block("Policy", "policy", safe_text(f"{event.old} → {event.new} from step {event.step}"))]
    if t == "policy_error":
        return [Block("Failed", "error", safe_text(f"policy {event.policy}: {event.message}"))]
    if t == "budget_warning":
        used, limit = amount(event.kind, event.used), amount(event.kind, event.limit)
        return [Block("Budget", "budget", f"{event.kind} at {used} of {limit}")]
    if t == "budget_exhausted":
        used, limit = amount(event.kind, event.used), amount(event.kind, event.limit)
        return [Block("Budget", "exhausted", f"{event.kind} limit reached: {used} of {limit}")]
    if t == "budget_extended":
        return [Block("Budget", "budget", f"{event.kind} limit raised to {amount(event.kind, event.limit)}")]
    if t == "note":
        label, kind, foldable = NOTE_BLOCKS.get(event.kind, ("Note", "observe", True))
        return [Block(label, kind, safe_text(event.text), foldable)]
    if t == "run_ended":
        title = f"run ended: {OUTCOME_WORDS[event.outcome]} after {steps_count(event.step)}"
        # an answer is shown once, in the step that gave it
        detail = "" if event.outcome == "answer" else event.reason
        blocks = [Block("", "rule", title)]
        if detail:
            blocks.append(Block("Reason", "end", safe_text(detail)))
        elif event.outcome == "answer" and event.answer and not _shown_in_step(event.reason):
            blocks.append(Block("Answer", "end", safe_text(event.answer)))  # e.g. an imported run's submission
        return blocks
    return [Block("Event", "observe", safe_text(str(t)))]


def plain_figures(blocks: list[Block]) -> tuple[int, int, int]:
    """(widest paragraph in cells, rows, foldable excess) of blocks when nothing wraps."""
    widest = rows = excess = 0
    for block in blocks:
        if block.kind == "rule":
            rows += 1
            continue
        text = block.text
        if "\n" in text:
            paragraphs = text.split("\n")
            n = len(paragraphs)
            size = max(map(len, paragraphs)) if text.isascii() else max(map(cell_len, paragraphs))
        else:
            n = 1
            size = len(text) if text.isascii() else cell_len(text)
        widest = max(widest, size)
        rows += n
        if block.foldable and n > FOLD_AT:
            excess += n - FOLD_AT
    return widest, rows, excess


def event_figures(event: Event) -> tuple[int, int, int, int]:
    """What the pane needs to count an event's rows at any width where nothing
    wraps: (widest paragraph in cells, rows, foldable excess, digits of its step
    number for a decision, else 0). Pure: a viewer may compute it off the UI thread."""
    return (*plain_figures(event_blocks(event)), len(str(event.step)) if event.type == "decision" else 0)


