"""The cockpit and the replay viewer at 80x24, at 120x40, and below the minimum size."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from engine.stored.replay import Timeline
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import fixed_clock, settle, support_run
from tui.app import CockpitApp
from tui.exits import EXIT_UNFINISHED
from tui.layout import MIN_HEIGHT, MIN_TRANSCRIPT, MIN_WIDTH, TooSmallScreen, side_width
from tui.replay_app import ReplayApp
from tui.widgets.footer import CockpitFooter, FooterKeyLabel
from tui.widgets.grid_map import GridMap
from tui.widgets.strip import CompactStrip
from tui.widgets.transcript import TranscriptPane
from tui.widgets.wrap import wrap

pytestmark = pytest.mark.anyio


def support_app(tmp_path: Path) -> CockpitApp:
    return CockpitApp(support_run(tmp_path))


def pane_rows(pane: TranscriptPane) -> list[str]:
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


def footer_keys_in_view(app, width: int) -> list[str]:
    """The footer's keys drawn whole inside the terminal, by action."""
    footer = app.query_one(CockpitFooter)
    return [
        key.action
        for key in footer.query(FooterKeyLabel)
        if key.display and key.region.area > 0 and key.region.right <= width
    ]


async def test_at_80x24_the_transcript_keeps_50_columns_and_the_action_one_line(tmp_path: Path) -> None:
    app = support_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        pane = app.pane
        assert pane.region.width >= MIN_TRANSCRIPT, pane.region
        assert app.screen.has_class("-narrow")
        assert not app.query_one("#side").display
        strip = app.query_one(CompactStrip)
        assert strip.display and strip.region.height == 2
        shown = str(strip.content)
        assert "steps 1/5" in shown and "get_order_status 1" in shown
        rows = pane_rows(pane)
        action = [row for row in rows if "Action" in row]
        assert action and action[0].split() == ["Action", 'get_order_status(order_id="1187")'], rows
        keys = footer_keys_in_view(app, 80)
        assert {"help", "quit"} <= set(keys) and keys.index("step") < keys.index("help"), keys


async def test_at_120x40_the_side_panels_are_back(tmp_path: Path) -> None:
    app = support_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not app.screen.has_class("-narrow")
        assert app.query_one("#side").region.width == side_width(120)
        assert not app.query_one(CompactStrip).display
        assert app.pane.region.width == 120 - side_width(120)
        assert {"help", "quit", "command_palette"} <= set(footer_keys_in_view(app, 120))


async def test_the_grid_map_stays_at_80x24_beside_50_columns(tmp_path: Path) -> None:
    run = new_run(scenarios.get("grid"), "3", "planner", out=tmp_path / "g.jsonl", interactive=True, clock=fixed_clock)
    app = CockpitApp(run)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        grid_map = app.query_one(GridMap)
        assert grid_map.region.area > 0 and grid_map.region.right <= 80
        assert grid_map.region.height == grid_map.outer_size.height, "the map is not cut off"
        assert app.pane.region.width >= MIN_TRANSCRIPT
        assert "steps 1/201" in str(app.query_one(CompactStrip).content)


@pytest.mark.parametrize(("size", "terminal"), [(20, (80, 24)), (40, (99, 30)), (40, (76, 24))])
async def test_a_grid_too_wide_for_the_narrow_side_is_a_window_of_it(tmp_path: Path, size: int, terminal: tuple[int, int]) -> None:
    """A 20x20 grid at 80x24 (or 40x40 under 100 columns) once lost its map: it is a window around the
    agent in the columns the transcript leaves, each row whole, saying which rows and columns it shows."""
    run = new_run(scenarios.get("grid"), "0", "planner", out=tmp_path / "g.jsonl", interactive=True,
                  clock=fixed_clock, options={"size": size})
    app = CockpitApp(run)
    async with app.run_test(size=terminal) as pilot:
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.has_class("-narrow")
        grid_map = app.query_one(GridMap)
        assert grid_map.region.area > 0 and grid_map.region.right <= terminal[0]
        assert app.pane.region.width >= MIN_TRANSCRIPT
        lines = grid_map.render_map().plain.splitlines()
        assert any("@@" in line for line in lines) and any(f"of {size}" in line for line in lines)
        assert all(len(line) <= grid_map.content_size.width for line in lines), "no line wraps, the status lines too"


async def test_under_room_for_a_useful_window_the_map_is_left_out(tmp_path: Path) -> None:
    run = new_run(scenarios.get("grid"), "0", "planner", out=tmp_path / "g.jsonl", interactive=True,
                  clock=fixed_clock, options={"size": 20})
    app = CockpitApp(run)
    async with app.run_test(size=(70, 24)) as pilot:  # 70 - 50 columns: under MAP_MIN_WIDTH
        await pilot.press("n")
        await settle(pilot)
        assert not app.query_one("#side").display and app.pane.region.width == 70


async def test_too_small_says_the_minimum_and_goes_away_when_resized(tmp_path: Path) -> None:
    app = support_app(tmp_path)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        said = str(app.screen.query_one("#too-small").content)
        assert f"needs at least {MIN_WIDTH}x{MIN_HEIGHT}" in said and "40x10" in said
        await pilot.press("n")
        await pilot.pause()
        assert app.run_.engine.state.step == 0, "keys other than q do nothing behind the notice"
        await pilot.resize_terminal(50, 30)
        await pilot.pause()
        assert "50x30" in str(app.screen.query_one("#too-small").content)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not isinstance(app.screen, TooSmallScreen)
        await pilot.press("n")
        await settle(pilot)
        assert app.run_.engine.state.step == 1
        await pilot.resize_terminal(MIN_WIDTH, MIN_HEIGHT - 1)
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == EXIT_UNFINISHED  # no question fits: q leaves the run resumable at once


async def test_the_replay_viewer_at_80x24(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path, clock=fixed_clock)
    run.engine.run()
    run.close()
    app = ReplayApp(Timeline.open(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("end")
        await pilot.pause()
        assert app.query_one(TranscriptPane).region.width >= MIN_TRANSCRIPT
        assert "open_return_request! 0" in str(app.query_one(CompactStrip).content)
        assert {"help", "quit"} <= set(footer_keys_in_view(app, 80))
        await pilot.resize_terminal(40, 10)
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)


def test_wrap_breaks_at_spaces_not_inside_words() -> None:
    text = "1187 — delivered, delivery 26 October, the customer wants a refund"
    lines = wrap(text, 20)
    assert all(len(line) <= 20 for line in lines)
    assert " ".join(lines) == text, "every break is at a space"


def test_wrap_breaks_a_call_without_spaces_after_its_punctuation() -> None:
    lines = wrap('get_order_status(order_id="1187")', 24)
    assert lines == ["get_order_status(", 'order_id="1187")']
    assert wrap("x" * 30, 12) == ["x" * 12, "x" * 12, "x" * 6]
