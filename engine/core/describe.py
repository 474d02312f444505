"""An event in words: the one description every view of a run draws.

`event_blocks` turns an event into labelled blocks (label, style name, text);
the transcript pane (tui/widgets/blocks.py), the plain log of `show` and
headless runs (tui/plain.py), the Markdown report (tui/export.py) and the
replay markers and search (engine/stored/markers.py) render those blocks in
their own medium, and add nothing but layout. `call_text` is the one way a
tool call is written (`engine.core.jsonvalues.call_text`, which `Action.render`
also uses). Texts here are as the agent wrote them: each renderer
cleans or escapes them for its medium. No Textual and no Rich here.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from engine.core.amounts import amount
from engine.core.events import Event, Header, RunEnded
from engine.core.jsonvalues import call_text

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

CHOICE_LABELS = {
    "approve": ("Approved", "approval"),
    "approve_always": ("Approved", "approval"),
    "reject": ("Rejected", "rejected"),
    "modify": ("Edited", "edited"),
    "abort": ("Aborted", "rejected"),
}
"""An answered approval's label and style."""

NOTE_BLOCKS = {
    "user": ("User", "header", False),
    "system": ("System", "header", True),
    "subagent": ("Sub-agent", "observe", True),
    "unrecognised": ("Unmapped", "policy", True),
}
"""A note's label, style and whether it folds: user messages stand out, the rest folds like an observation."""


class Block(NamedTuple):
    """A labelled piece of an event: `kind` is its style's name (a plain string each
    renderer maps to its own look), `foldable` whether a long text may be folded."""

    label: str
    kind: str
    text: str
    foldable: bool = False


def steps_count(n: int) -> str:
    """`1 step`, `3 steps`."""
    return f"{n} step" if n == 1 else f"{n} steps"


def outcome_words(end: RunEnded) -> str:
    """`answer after 3 steps`."""
    return f"{OUTCOME_WORDS[end.outcome]} after {steps_count(end.step)}"


def outcome_detail(end: RunEnded) -> str:
    """What follows the outcome: the answer of an answered run, else why it ended."""
    return (end.answer or "") if end.outcome == "answer" else end.reason


def fork_words(header: Header) -> str:
    """`from FILE at step 2, then policy stuck (good before)`; older forks name the event."""
    if header.fork_step is None:
        return f"from {header.parent} at event {header.fork_at}"
    words = f"from {header.parent} at step {header.fork_step}"
    if header.fork_policy and header.fork_policy != header.policy:
        words += f", then policy {header.fork_policy} ({header.policy} before)"
    return words


def _shown_in_step(reason: str) -> bool:
    """Whether the step that ended the run shows its answer (a final answer, or an exit tool's call)."""
    return reason == "final answer" or reason.endswith(" called")


_new = tuple.__new__
"""`Block(...)` without NamedTuple's Python-level `__new__`: the two kinds of event every
step has (a decision, its observations) are described for each line `show` prints."""


def event_blocks(event: Event) -> list[Block]:
    """What one event says, as labelled blocks (a decision without any text gives none)."""
    t = event.type
    if t == "observation":
        if event.error:
            return [_new(Block, ("Error", "error", event.text, True))]
        return [_new(Block, ("Observe", "observe", event.text, True))]
    if t == "decision":
        blocks = []
        if event.thought:
            blocks.append(_new(Block, ("Thought", "thought", event.thought, False)))
        if event.parse_error:
            blocks.append(Block("Invalid", "error", event.parse_error))
            if event.raw is not None:
                blocks.append(Block("Wrote", "observe", event.raw, True))
        for action in event.actions:
            blocks.append(_new(Block, ("Action", "action", call_text(action.tool, action.args), False)))
            if action.args_error is not None:
                blocks.append(Block("Unread", "error", action.args_error))
        if event.answer is not None:
            blocks.append(Block("Answer", "answer", event.answer))
        return blocks
    if t == "approval_requested":
        return [Block("Approval", "approval", f"{call_text(event.tool, event.args)} needs approval ({event.reason})")]
    if t == "approval_decided":
        label, kind = CHOICE_LABELS[event.choice]
        detail = f": {event.reason}" if event.reason else ""
        if event.choice == "modify" and event.args is not None:
            detail = ": " + json.dumps(event.args, ensure_ascii=False)
        return [Block(label, kind, f"{CHOICE_WORDS[event.choice]} by {event.by}{detail}")]
    if t == "policy_swapped":
        return [Block("Policy", "policy", f"{event.old} → {event.new} from step {event.step}")]
    if t == "policy_error":
        return [Block("Failed", "error", f"policy {event.policy}: {event.message}")]
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
        return [Block(label, kind, event.text, foldable)]
    if t == "run_ended":
        blocks = [Block("", "rule", f"run ended: {outcome_words(event)}")]
        # an answer is shown once, in the step that gave it
        if event.outcome != "answer":
            if event.reason:
                blocks.append(Block("Reason", "end", event.reason))
        elif event.answer and not _shown_in_step(event.reason):
            blocks.append(Block("Answer", "end", event.answer))  # e.g. an imported run's submission
        return blocks
    return [Block("Event", "observe", str(t))]


def event_words(event: Event) -> str:
    """Everything an event says as one text (its blocks' labels and texts), for search."""
    words = [f"{block.label} {block.text}" for block in event_blocks(event)]
    if event.type == "observation" and event.tool:
        words.insert(0, event.tool)
    elif event.type == "run_ended":
        words += [event.reason, event.answer or ""]
    return "\n".join(words)
