"""The replay timeline's status line ends in … when it is longer than the bar (a long
marker note at 80 columns was cut off at the edge with no sign that more was said)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.stored.replay import Timeline
from tests.support.runs import saved_run
from tui.replay_app import ReplayApp
from tui.widgets.timeline import TimelineBar

pytestmark = pytest.mark.anyio


async def test_a_long_status_line_ends_with_an_ellipsis_at_80x24(tmp_path: Path) -> None:
    path, _ = saved_run(tmp_path, reject=True)
    app = ReplayApp(Timeline.open(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("right_square_bracket")
        await pilot.pause()
        bar = app.query_one(TimelineBar)
        assert "open_return_request(order_id=\"1187\") needs approval" in bar.status and len(bar.status) > 78
        line = bar.render().plain.splitlines()[2]
        assert line.endswith("…") and len(line) == bar.size.width - 2, line
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert bar.render().plain.splitlines()[2] == bar.status
