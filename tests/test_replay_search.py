"""A search in the replay viewer shows its match: a hit inside a long observation was
folded away under "… N more lines", so the viewer moved to the event and showed
none of what was found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.stored.replay import Timeline
from tests.support.runs import saved_run
from tui.replay_app import ReplayApp
from tui.widgets.timeline import TimelineBar
from tui.widgets.transcript import TranscriptPane

pytestmark = pytest.mark.anyio


def long_observation_run(tmp_path: Path) -> Path:
    """The support run with its first observation 3,000 lines long."""
    path, _ = saved_run(tmp_path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(line for line in lines if line.get("type") == "observation")
    first["text"] = "\n".join(f"record {n} of the order history" for n in range(3000))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def pane_rows(pane: TranscriptPane) -> list[str]:
    return [pane.render_line(y).text for y in range(pane.size.height)]


async def test_search_unfolds_and_scrolls_to_the_match(tmp_path: Path) -> None:
    timeline = Timeline.open(long_observation_run(tmp_path))
    app = ReplayApp(timeline)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("slash", *"record 2500 of", "enter")
        await pilot.pause()
        hit = next(i for i, e in enumerate(timeline.events()) if e.type == "observation")
        assert app.position == hit + 1
        pane = app.query_one(TranscriptPane)
        assert any("record 2500 of the order history" in row for row in pane_rows(pane)), pane_rows(pane)
        assert "found 'record 2500 of'" in app.query_one(TimelineBar).status
        await pilot.press("right")  # the next event shows at the foot again
        await pilot.pause()
        assert pane.scroll_y == pane.max_scroll_y
