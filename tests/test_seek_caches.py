"""What a replay seek redraws from caches: the chart's block extremes, the pane's
scrollbar rows, and the collector's pace while the viewer runs.

Each cache must give exactly what the uncached drawing gives, and notice when
what it keeps no longer applies (another series, another look).
"""

from __future__ import annotations

import gc
import random
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.scrollbar import ScrollBar

from bench.engine_bench import scenario as lookup_scenario
from engine.sessions.run import new_run
from engine.stored.replay import Timeline
from tui.replay_app import ReplayApp
from tui.widgets.extremes import BLOCK, SeriesExtremes
from tui.widgets.gauges import chart_points
from tui.widgets.scrollbar import RowCachedScrollBar
from tui.widgets.transcript import TranscriptPane

pytestmark = pytest.mark.anyio


# -- the chart's block extremes --------------------------------------------------


def test_block_extremes_give_the_points_of_a_plain_walk_for_every_prefix():
    rng = random.Random(3)
    full = [rng.randint(0, 9000) for _ in range(20 * BLOCK + 17)]
    full[5 * BLOCK + 3], full[11 * BLOCK] = -7, 99_999  # extremes inside a block and at its start
    extremes = SeriesExtremes()
    lengths = [len(full), 3 * BLOCK, 3 * BLOCK + 1, 2 * BLOCK - 1, 91, len(full) - 1, 7 * BLOCK]
    for n in lengths + [rng.randrange(len(full)) for _ in range(30)]:
        series = full[:n]  # a state's own copy, as a replay seek gives it
        for width in (1, 3, 7, 44):
            assert chart_points(series, width, extremes) == chart_points(series, width), (n, width)
    assert extremes.rebuilds == 0  # every prefix reused the blocks of the first series


def test_block_extremes_follow_a_growing_series_and_start_over_for_another():
    rng = random.Random(4)
    series = [rng.randint(0, 500) for _ in range(4 * BLOCK)]
    extremes = SeriesExtremes()
    chart_points(series, 10, extremes)
    for _ in range(3 * BLOCK):  # a live run: the same list, one step more each time
        series.append(rng.randint(0, 500))
        assert chart_points(series, 10, extremes) == chart_points(series, 10)
    assert extremes.rebuilds == 0
    changed = list(series)
    changed[BLOCK + 2] = 10_000  # not a continuation: another run's series
    assert chart_points(changed, 10, extremes) == chart_points(changed, 10)
    assert max(chart_points(changed, 10, extremes)) == 10_000
    assert extremes.rebuilds == 1
    shorter = changed[: 2 * BLOCK + 5]
    shorter[0] = -1  # shorter and different at its start
    assert chart_points(shorter, 10, extremes) == chart_points(shorter, 10)
    assert extremes.rebuilds == 2


# -- the pane's scrollbar ----------------------------------------------------------


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="transcript")


def textual_rows(bar: ScrollBar, crop: Region) -> list:
    """What Textual's own ScrollBar draws for `crop` now (its styles cache emptied first)."""
    bar.refresh()
    return [list(strip) for strip in ScrollBar.render_lines(bar, crop)]


async def test_the_pane_scrollbar_draws_textuals_rows_and_redraws_only_new_ones(tmp_path):
    timeline = Timeline.open(long_run(tmp_path, steps=120))
    app = PaneApp()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(timeline.header, timeline.events())
        await pilot.pause()
        bar = pane.vertical_scrollbar
        assert isinstance(bar, RowCachedScrollBar)
        crop = Region(0, 0, bar.size.width, bar.size.height)
        assert bar.size.height > 5 and pane.max_scroll_y > 100
        for y in (0, 1, 7, pane.max_scroll_y // 3, pane.max_scroll_y // 2, pane.max_scroll_y - 1, pane.max_scroll_y):
            pane.scroll_to(y=y, animate=False, immediate=True)
            await pilot.pause()
            cached = [list(strip) for strip in bar.render_lines(crop)]
            assert cached == textual_rows(bar, crop), y
        drawn = bar.rows_drawn
        pane.scroll_to(y=pane.max_scroll_y // 3, animate=False, immediate=True)
        await pilot.pause()
        bar.render_lines(crop)
        assert bar.rows_drawn == drawn  # the thumb moved back: every row was one already drawn
        bar.mouse_over = True  # another look: Textual draws the rows again
        await pilot.pause()
        hovered = [list(strip) for strip in bar.render_lines(crop)]
        assert bar.rows_drawn > drawn
        assert hovered == textual_rows(bar, crop)


# -- the collector's pace ----------------------------------------------------------


def long_run(tmp_path: Path, steps: int) -> Path:
    path = tmp_path / "long.jsonl"
    run = new_run(lookup_scenario(steps), "t", "p", out=path, clock=lambda: 1_790_000_000.0)
    run.engine.run()
    run.close()
    return path


async def test_the_viewer_collects_young_objects_after_frames_and_restores_the_pace(tmp_path, monkeypatch):
    import tui.collector_pace as pace

    before = gc.get_threshold()
    timeline = Timeline.open(long_run(tmp_path, steps=10))
    app = ReplayApp(timeline)
    collected: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            collected.append(info["generation"])

    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gc.get_threshold() == (pace.ANYWAY, *before[1:])  # the automatic pace is only a safety net
        gc.callbacks.append(note)
        try:
            monkeypatch.setattr(pace, "YOUNG_OBJECTS", 10**9)
            done = app.collector.collections
            app.seek(5)
            await pilot.pause()
            assert app.collector.collections == done and collected == []  # not enough new objects
            monkeypatch.setattr(pace, "YOUNG_OBJECTS", 1)
            for position in (7, 3, 9):
                app.seek(position)
                await pilot.pause()
            assert app.collector.collections == done + 3  # one after each seek's frame
            assert len(collected) == 3 and set(collected) <= {0, 1}
        finally:
            gc.callbacks.remove(note)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


# -- the chart's sparkline ----------------------------------------------------------


def test_the_quick_sparkline_yields_textuals_segments():
    from rich.color import Color
    from rich.console import Console
    from textual.renderables.sparkline import Sparkline as SparklineRenderable

    from tui.widgets.sparkline import QuickSparkline

    console = Console(width=200)
    rng = random.Random(8)
    low, high = Color.parse("#203040"), Color.parse("#e0a010")
    for n in (0, 1, 2, 3, 5, 17, 88, 89, 400):
        data = [rng.randint(-40, 9000) for _ in range(n)]
        for width in (1, 2, 7, 44, 45, 120):
            for height in (1, 2, 3):
                textual = SparklineRenderable(data, width=width, height=height, min_color=low, max_color=high)
                quick = QuickSparkline.like(textual)
                assert list(console.render(quick, console.options)) == list(console.render(textual, console.options)), (
                    n, width, height)
    flat = [7] * 30  # no extent: every bar at the bottom
    textual = SparklineRenderable(flat, width=9, height=2, min_color=low, max_color=high)
    assert list(console.render(QuickSparkline.like(textual), console.options)) == list(console.render(textual, console.options))


# -- the compact strip ----------------------------------------------------------------


async def test_the_hidden_compact_strip_draws_nothing_until_it_shows_the_latest_state(tmp_path):
    from tui.widgets.strip import CompactStrip

    timeline = Timeline.open(long_run(tmp_path, steps=30))
    app = ReplayApp(timeline)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        strip = app.query_one(CompactStrip)
        for position in (10, 40, len(timeline) // 2):
            app.seek(position)
            await pilot.pause()
        assert not strip.display and strip.shown is None  # wide layout: never drawn
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert strip.display
        assert f"steps {app.state.step}" in str(strip.content)
        app.seek(len(timeline))  # shown now: drawn at once
        await pilot.pause()
        assert f"steps {app.state.step}" in str(strip.content) and app.state.step == 30


async def test_the_context_chart_draws_the_lines_of_textuals_sparkline_widget():
    """The chart's strips (made without Rich's console) against Textual's own Sparkline
    widget given the same points, side by side in one app: the same lines, cell for cell."""
    from textual.widgets import Sparkline

    from tui.widgets.gauges import ContextChart

    class Side(App[None]):
        CSS = "Sparkline { height: 2; width: 44; }"

        def compose(self) -> ComposeResult:
            yield ContextChart(id="chart")
            yield Sparkline([], id="plain")

    rng = random.Random(9)
    app = Side()
    async with app.run_test(size=(60, 8)) as pilot:
        chart, plain = app.query_one(ContextChart), app.query_one("#plain", Sparkline)
        crop = Region(0, 0, 44, 2)
        for n in (0, 1, 2, 3, 44, 88, 89, 500, 5000):
            series = [rng.randint(0, 9000) for _ in range(n)]
            chart.show(series)
            plain.data = chart_points(series, 44)
            await pilot.pause()
            chart.refresh()
            plain.refresh()
            ours = [list(strip) for strip in chart.render_lines(crop)]
            textuals = [list(strip) for strip in plain.render_lines(crop)]
            assert ours == textuals, n
