"""A vertical scrollbar that draws each row once per look, not once per frame.

Textual draws a scrollbar as a Rich renderable: every frame that moves its
thumb renders the whole column through the console and its styles again,
one new `Strip` per row (1.5-4 ms a frame for the transcript pane's 36 rows,
the thumb moving on every replay seek). Yet a row's final strip depends only
on the segment Textual's own `ScrollBarRender.render_bar` puts in that row
(track above the thumb, thumb, track below, the two part-cell ends) and on
the widget's look. `RowCachedScrollBar` computes those segments (cheap) and
reuses the strip Textual drew for each one; only a row never seen with the
current look is drawn, by Textual itself, so the picture is Textual's.
"""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment, Segments
from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip


class RowCachedScrollBar(ScrollBar):
    """Textual's vertical `ScrollBar`, its rows' strips kept by segment."""

    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self.drawn: dict[Segment, Strip] = {}
        """The final strip of each row segment drawn with the look `drawn_look`."""
        self.drawn_look: tuple[object, ...] | None = None
        self.rows_drawn = 0
        """Rows drawn by Textual (not taken from `drawn`): a measure for tests."""

    def row_segments(self) -> list[Segment] | None:
        """The segment of each row, as `ScrollBarRender` would render them; None when
        the bar is not a plain vertical `ScrollBarRender` (then Textual draws it)."""
        bar = self.render()
        if not self.vertical or type(bar) is not ScrollBarRender:
            return None
        style = self.app.console.get_style(bar.style)  # as ScrollBarRender.__rich_console__ does
        rendered = bar.render_bar(
            size=self.size.height,
            virtual_size=bar.virtual_size,
            window_size=bar.window_size,
            position=bar.position,
            thickness=self.size.width,
            vertical=True,
            back_color=style.bgcolor or Color.parse("#555555"),
            bar_color=style.color or Color.parse("bright_magenta"),
        )
        return rendered.segments if isinstance(rendered, Segments) else None

    def render_lines(self, crop: Region) -> list[Strip]:
        rows = self.row_segments()
        if rows is None:
            return super().render_lines(crop)
        look = (crop.column_span, self.size, self.visual_style, self.background_colors, tuple(self.get_line_filters()))
        if look != self.drawn_look:
            self.drawn.clear()
            self.drawn_look = look
        wanted = rows[crop.y : crop.bottom]
        drawn = self.drawn
        if len(wanted) != crop.height or any(segment not in drawn for segment in wanted):
            strips = super().render_lines(crop)
            self.rows_drawn += len(strips)
            for segment, strip in zip(wanted, strips):
                drawn[segment] = strip
            return strips
        return [drawn[segment] for segment in wanted]
