"""Soft-wrapping text to a width in terminal cells, at spaces where possible (pure text, no widgets)."""

from __future__ import annotations

from rich.cells import cell_len, chop_cells, set_cell_size

BREAK_AFTER = "(,=/"
"""Where a line without spaces may break (after a call's opening parenthesis, a comma...)."""


def wrap(text: str, width: int, limit: int | None = None) -> list[str]:
    """Soft-wrap one paragraph (no newlines) to `width` cells, at spaces where possible.

    With `limit`, stop after that many lines (folded observations draw only
    their first rows, however long the text).
    """
    if len(text) <= width and (text.isascii() or cell_len(text) <= width):
        return [text]
    if not text.isascii():
        return _wrap_cells(text, width, limit)
    lines: list[str] = []
    start, end = 0, len(text)
    while end - start > width:
        if limit is not None and len(lines) >= limit:
            return lines
        cut = text.rfind(" ", start, start + width + 1)
        if cut <= start:
            # no space: break after a call's punctuation if there is one, else mid-word
            after = max(text.rfind(mark, start, start + width) for mark in BREAK_AFTER) + 1
            end_at = after if after > start else start + width
            lines.append(text[start:end_at])
            start = end_at
        else:
            lines.append(text[start:cut])
            start = cut + 1
    lines.append(text[start:])
    return lines


def _wrap_cells(text: str, width: int, limit: int | None) -> list[str]:
    """`wrap` for text with wide or combining characters (measured in cells)."""
    lines: list[str] = []
    line, used = "", 0
    for word in text.split(" "):
        if limit is not None and len(lines) >= limit:
            return lines
        size = cell_len(word)
        gap = 1 if line or used else 0
        if used + gap + size <= width:
            line, used = f"{line} {word}" if gap else word, used + gap + size
            continue
        if line or used:
            lines.append(line)
        if size <= width:
            line, used = word, size
        else:
            *full, line = chop_cells(word, width) or [""]
            lines.extend(full)
            used = cell_len(line)
    lines.append(line)
    return lines[:limit] if limit is not None else lines


def block_lines(text: str, width: int, limit: int | None = None) -> list[str]:
    """The wrapped lines of a block's text (its paragraphs wrapped one by one)."""
    if "\n" not in text:
        return wrap(text, width, limit)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(wrap(paragraph, width, None if limit is None else limit - len(lines)))
        if limit is not None and len(lines) >= limit:
            return lines[:limit]
    return lines


def count_lines(text: str, width: int) -> int:
    if len(text) <= width and "\n" not in text and text.isascii():
        return 1
    return len(block_lines(text, width))


def cut_words(text: str, width: int) -> str:
    """`text` in `width` cells: whole, or cut at a space (inside a word only when it has
    none) and ended with `…`."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    return wrap(text, width - 1, limit=1)[0].rstrip() + "…"


def cut_end(text: str, width: int) -> str:
    """`text` in `width` cells, its end replaced by `…` when it is longer."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(0, width - 1)) + "…" if width > 0 else ""
