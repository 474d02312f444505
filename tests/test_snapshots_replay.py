"""Pictures of the replay viewer and the grid map. Regenerate with `--snapshot-update`
and look at every changed SVG before accepting it."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from engine.stored.replay import Timeline
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import fixed_clock
from tui.app import CockpitApp
from tui.replay_app import ReplayApp
from tui.widgets.grid_map import GridMap

SIZE = (120, 40)
SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def _rejected_support_run() -> Path:
    path = Path("runs/replay.jsonl")
    run = new_run(scenarios.get("support"), "return-1187", None, out=path, clock=fixed_clock)
    run.engine.run()
    run.engine.reject("the customer keeps the headphones")
    run.engine.run()
    run.close()
    return path


@SIZES
def test_replay_with_markers(snap_compare, in_tmp: Path, size: tuple[int, int]) -> None:
    """Replay of a support run stopped at the approval marker (event 4 of 8, step 2):
    the transcript ends with the pending open_return_request approval, the tool row
    (120x40; at 80x24 the tool's name in the strip under the header) is highlighted, the
    timeline bar shows A (approval), R (rejection) and ■ (end) with the cursor ▲ under
    the A, and the status line says event 4/8 · step 2; ? help and q quit at the right."""
    app = ReplayApp(Timeline.open(_rejected_support_run()))

    async def run_before(pilot) -> None:
        await app.workers.wait_for_complete()
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert app.position == 4 and app.state.status == "awaiting_approval"
        assert [m.kind for m in app.timeline.markers()] == ["approval", "rejection", "end"]

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_go_to_step_asks_on_the_status_line(snap_compare, in_tmp: Path) -> None:
    """g then 9 and Enter on the support run (3 steps): the question takes the timeline's
    status line, "Go to step (0-3): 9" with a block cursor after the 9, the refusal "a step
    number from 0 to 3" in red and "enter: go · escape: cancel" dim; the rest of the screen
    is the run at event 0, not dimmed, and the footer's keys are the viewer's own."""
    app = ReplayApp(Timeline.open(_rejected_support_run()))

    async def run_before(pilot) -> None:
        await app.workers.wait_for_complete()
        await pilot.press("g", "9", "enter")
        await pilot.pause()
        assert app.ask_line.asking and app.ask_line.problem == "a step number from 0 to 3"
        assert len(app.screen_stack) == 1 and app.position == 0

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@SIZES
def test_grid_map_mid_run(snap_compare, in_tmp: Path, size: tuple[int, int]) -> None:
    """The cockpit on grid 3 with the planner after four steps: the map (right) shows
    walls as blocks, the visited cells shaded, the agent @@ four moves from the start,
    the planner's remaining path dotted to the goal GG, and "plan 10 to go" under
    "moves 4 · at (2, 2)". At 80x24 the map keeps its whole box beside a transcript of
    at least 50 columns, and the strip under the header says "budget steps 4/201"."""
    run = new_run(scenarios.get("grid"), "3", "planner", out=Path("runs/grid.jsonl"), interactive=True, clock=fixed_clock)
    app = CockpitApp(run)

    async def run_before(pilot) -> None:
        for _ in range(4):
            await pilot.press("n")
            await app.workers.wait_for_complete()
            await pilot.pause()
        grid_map = app.query_one(GridMap)
        assert len(grid_map.cells) == 5 and grid_map.path and grid_map.path[0] == grid_map.at

    assert snap_compare(app, terminal_size=size, run_before=run_before)
