"""An event as the transcript pane's blocks: `engine.core.describe`'s blocks made safe to draw.

The words are the one description of an event (engine/core/describe.py),
shared with the plain log, the report and the markers. Untrusted text is
cleaned here (`safe_text`), once, before anything measures or draws it.
"""

from __future__ import annotations

import re

from rich.cells import cell_len

from engine.core.describe import Block
from engine.core.describe import event_blocks as describe_blocks
from engine.core.events import Event
from engine.core.text import clean

FOLD_AT = 6
"""An observation longer than this many rows is folded to FOLD_AT rows."""
TAB_SIZE = 4


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


def event_blocks(event: Event) -> list[Block]:
    """What one event says (`engine.core.describe.event_blocks`), its texts made safe to draw;
    a decision without any text shows an empty thought."""
    blocks = []
    for block in describe_blocks(event):
        text = safe_text(block.text)
        blocks.append(block if text is block.text else block._replace(text=text))
    return blocks or [Block("Thought", "thought", "")]


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


