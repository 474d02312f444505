"""What the cockpit drew, read back as text, and the check that hostile text stayed inert."""

from __future__ import annotations

from typing import Any

from textual.widget import Widget


def drawn(widget: Widget) -> tuple[str, list[Any]]:
    """The text a widget draws on screen, and the Rich styles of what it draws."""
    lines = [widget.render_line(y) for y in range(widget.size.height)]
    text = "\n".join(strip.text for strip in lines)
    styles = [seg.style for strip in lines for seg in strip if seg.style is not None]
    return text, styles


def assert_inert(widget: Widget, *needles: str) -> str:
    plain = widget.visual.plain if hasattr(widget, "visual") else ""
    for needle in needles:
        assert needle in plain, f"{needle!r} not shown literally in {widget!r}: {plain[:200]!r}"
    for bad in ("\x1b", "\x07", "\x9b"):
        assert bad not in plain
    text, styles = drawn(widget)
    for bad in ("\x1b", "\x07", "\x9b"):
        assert bad not in text
    for style in styles:
        meta = style.meta if style._meta else {}
        assert "@click" not in meta, f"{widget!r} carries a click action: {meta}"
        assert not style.link, f"{widget!r} carries a link: {style.link}"
    return plain
