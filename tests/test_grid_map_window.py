"""A grid wider than the map panel (`--option size=100`) is drawn as a window around the
agent, each row on one line; it used to wrap every row of 200 characters over several
lines of the 44-column panel, a map no one could read."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import fixed_clock, settle
from tui.app import CockpitApp
from tui.widgets.grid_map import GridMap

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("size", "cropped"), [(100, True), (8, False)])
async def test_every_map_row_fits_the_panel(tmp_path: Path, size: int, cropped: bool) -> None:
    run = new_run(scenarios.get("grid"), "0", "planner", out=tmp_path / "g.jsonl", interactive=True,
                  clock=fixed_clock, options={"size": size})
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n", "n", "n")
        await settle(pilot)
        grid_map = app.query_one(GridMap)
        lines = grid_map.render_map().plain.splitlines()
        rows = [line for line in lines if "@@" in line or "██" in line or "· " in line]
        assert all(len(line) <= grid_map.content_size.width for line in lines), max(map(len, lines))
        assert any("@@" in row for row in rows), "the agent is in the window"
        assert (len(rows) < size) == cropped and (f"of {size}" in lines[-2] or f"of {size}" in lines[-1]) == cropped
