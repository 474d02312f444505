"""A seek in the viewer and a step in the cockpit draw in one frame with no screen layout.

The panes' sizes never depend on what a seek or a step changes, so neither
may ask Textual for a layout of the screen (a `Layout` message: the whole
screen arranged again, every widget told its size, a second frame), and a
widget whose picture did not change is not redrawn (no `Update` message).
Counted with the app's message hook, which sees every message posted.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console
from textual import messages
from textual.renderables.sparkline import Sparkline as SparklineRenderable

from engine.stored.replay import Timeline
from tests.support.helpers import counting_run
from tui.app import CockpitApp
from tui.replay_app import FOLD_AHEAD, ReplayApp
from tui.widgets.gauges import ContextChart, chart_points
from tui.widgets.timeline import TimelineBar
from tui.widgets.transcript import TranscriptPane
from tests.support.runs import long_run

pytestmark = pytest.mark.anyio


class Posted:
    """Layout and Update messages (by widget id or type) posted while `counting`."""

    def __init__(self) -> None:
        self.counting = False
        self.layouts: Counter[str] = Counter()
        self.updates: Counter[str] = Counter()

    def __call__(self, message: object) -> None:
        if not self.counting:
            return
        if isinstance(message, messages.Layout):
            self.layouts[_name(message.widget)] += 1
        elif isinstance(message, messages.Update):
            self.updates[_name(message.widget)] += 1

    def start(self) -> None:
        self.layouts.clear()
        self.updates.clear()
        self.counting = True


def _name(widget: object) -> str:
    return getattr(widget, "id", None) or type(widget).__name__


async def settled(pilot, posted: Posted) -> None:
    """Until a pause passes with no layout: the footer lays itself out again once the
    app's bindings are known, a frame after mounting, later on a loaded machine."""
    for _ in range(50):
        posted.start()
        await pilot.pause()
        posted.counting = False
        if not posted.layouts:
            return
    raise AssertionError(f"the screen never settled: {posted.layouts}")


def viewer(tmp_path: Path) -> tuple[Timeline, Posted, ReplayApp]:
    timeline = Timeline.open(long_run(tmp_path))
    return timeline, Posted(), ReplayApp(timeline)


async def test_a_far_seek_lays_out_nothing_and_redraws_each_changed_widget_once(tmp_path):
    timeline, posted, app = viewer(tmp_path)
    async with app.run_test(size=(120, 40), message_hook=posted) as pilot:
        await app.workers.wait_for_complete()
        await settled(pilot, posted)
        pane = app.query_one(TranscriptPane)
        for position in (len(timeline) - 3, 7, len(timeline) // 2):
            posted.start()
            app.seek(position)
            await pilot.pause()
            posted.counting = False
            assert app.position == position
            assert posted.layouts == Counter(), position
            assert posted.updates["transcript"] == 1, posted.updates
            assert posted.updates["timeline"] == 1, posted.updates
            assert posted.updates["header"] == 1, posted.updates
            # the pane scrolled to the new end: its scrollbar knows the new row count
            assert pane.virtual_size.height == pane._total_rows()
            assert pane.scroll_y == pane.max_scroll_y
            assert pane.vertical_scrollbar.window_virtual_size == pane.virtual_size.height


async def test_a_seek_within_a_step_leaves_the_unchanged_panels_alone(tmp_path):
    timeline, posted, app = viewer(tmp_path)
    async with app.run_test(size=(120, 40), message_hook=posted) as pilot:
        await app.workers.wait_for_complete()
        app.seek(timeline.position_after_step(40))
        await settled(pilot, posted)
        posted.start()
        app.seek(app.position + 1)  # the next step's decision: steps and tokens change, cost and time do not
        await pilot.pause()
        posted.counting = False
        assert posted.layouts == Counter()
        assert posted.updates["gauge-steps"] == 1 and posted.updates["context-chart"] == 1
        assert posted.updates["gauge-cost"] == 0 and posted.updates["gauge-seconds"] == 0


async def test_stepping_forward_folds_onto_the_state_shown_and_matches_the_timeline(tmp_path):
    timeline = Timeline.open(long_run(tmp_path, steps=60))
    app = ReplayApp(timeline)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        positions = [*range(1, 40), 40 + FOLD_AHEAD, 41 + FOLD_AHEAD, 20, 21, len(timeline), 2]
        for position in positions:
            app.seek(position)
            assert app.state == timeline.state_at(position), position
        await pilot.pause()
        # the state shown is a copy: folding onto it left the timeline's own states alone
        app.seek(30)
        before = timeline.state_at(31)
        app.seek(31)
        app.state.tool_calls["lookup"] = -1
        assert timeline.state_at(31) == before


async def test_a_cockpit_step_lays_out_nothing(tmp_path):
    run = counting_run(*[f'Action: echo[text="{n}"]' for n in range(6)])
    posted = Posted()
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40), message_hook=posted) as pilot:
        await settled(pilot, posted)
        for _ in range(3):
            posted.start()
            await pilot.press("n")
            await app.workers.wait_for_complete()
            await pilot.pause()
            posted.counting = False
            assert app.view_state.step >= 1
            assert posted.layouts == Counter(), posted.layouts
            assert posted.updates["transcript"] >= 1
            # the progress bars of an MCP call were hidden and stay so, untouched
            assert posted.updates["call-progress"] == 0 and posted.updates["strip-progress"] == 0
            assert posted.updates["gauge-cost"] == 0


def test_the_chart_draws_the_same_picture_from_its_points():
    """`chart_points` keeps what Textual's sparkline draws, at any length and width."""
    console = Console(width=200)
    rng = random.Random(5)
    data = [rng.randint(0, 9000) for _ in range(5000)]
    data[1234], data[4321] = -50, 20000  # the extremes inside a bucket, not at its ends
    for width in (1, 7, 44, 45, 120):
        for n in (0, 1, 2, width - 1, width, width + 1, 2 * width, 2 * width + 1, 997, 5000):
            if n < 0:
                continue
            series = data[:n]
            points = chart_points(series, width)
            if n > 2 * width:
                assert len(points) == 2 * width
            for height in (1, 2):
                full = list(console.render(SparklineRenderable(series, width=width, height=height), console.options))
                cut = list(console.render(SparklineRenderable(points, width=width, height=height), console.options))
                assert cut == full, (width, n, height)


async def test_the_chart_redraws_only_when_a_step_is_added_or_removed():
    from textual.app import App

    class One(App[None]):
        def compose(self):
            yield ContextChart(id="chart")

    posted = Posted()
    app = One()
    async with app.run_test(size=(40, 4), message_hook=posted) as pilot:
        chart = app.query_one(ContextChart)
        chart.show([5, 6, 7])
        await pilot.pause()
        posted.start()
        chart.show([5, 6, 7])  # another state's list, the same steps
        await pilot.pause()
        assert posted.updates["chart"] == 0
        chart.show([5, 6, 7, 9])
        await pilot.pause()
        assert posted.updates["chart"] == 1
        assert list(chart.data or []) == [5, 6, 7, 9]


async def test_the_timeline_bar_draws_each_cell_as_before(tmp_path):
    """One span per run of equal styles: the same glyph and style in every cell."""
    from tui.widgets.timeline import GLYPHS

    timeline = Timeline.open(long_run(tmp_path, steps=20))
    app = ReplayApp(timeline)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        bar = app.query_one(TimelineBar)
        width = bar.size.width - 2
        first = bar.render().split("\n")[0]
        cells = bar.marker_cells(width)
        assert first.plain == "".join(glyph for glyph, _ in cells)
        for col, (glyph, style) in enumerate(cells):
            styles = [str(span.style) for span in first.spans if span.start <= col < span.end]
            assert styles == [style], (col, glyph)
        assert cells[-1] == GLYPHS["end"]
        assert len(first.spans) <= 2 * len(timeline.markers()) + 1
