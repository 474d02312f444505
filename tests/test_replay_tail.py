"""Opening a long run at its end draws its last events before the index pass has read the run."""

from __future__ import annotations

import json
import threading

import pytest

from engine.stored.replay import Timeline
from tests.support.runs import long_run
from tui import replay_tail
from tui.replay_app import ReplayApp
from tui.widgets.header import RunHeader
from tui.widgets.timeline import TimelineBar
from tui.widgets.transcript import TranscriptPane

pytestmark = pytest.mark.anyio


def pane_lines(app: ReplayApp) -> list[str]:
    pane = app.query_one(TranscriptPane)
    return [pane.render_line(y).text for y in range(pane.size.height)]


def header_text(app: ReplayApp) -> str:
    return str(app.query_one(RunHeader).render())


@pytest.fixture
def short_tails(monkeypatch):
    """A tail of 60 events for runs of 100 events or more (the defaults need a big file)."""
    monkeypatch.setattr(replay_tail, "TAIL_FIRST_AT", 100)
    monkeypatch.setattr(replay_tail, "TAIL_EVENTS", 60)


async def test_the_end_is_drawn_from_the_last_events_while_the_run_is_indexed(tmp_path, short_tails):
    timeline = Timeline.open(long_run(tmp_path, steps=150))
    total = len(timeline)
    gate = threading.Event()
    # the worker's pass waits at its first event (a pass on the UI thread would not)
    timeline.index_hooks.append(lambda index, event: threading.current_thread() is threading.main_thread() or gate.wait(20))
    app = ReplayApp(timeline, total)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert timeline.indexed_count == 0 and app.state is None
            assert app.tail is not None and len(app.tail.events) == 60
            assert app.position == total
            assert f"event {total}/{total} · step 150 · ended: stopped" in header_text(app)
            assert app.query_one("#side").styles.visibility == "hidden"
            assert f"indexing 0/{total}" in app.query_one(TimelineBar).status
            first = pane_lines(app)
            assert any("lookup(key=\"item-150\")" in line for line in first)
            assert "run ended" in "\n".join(first)

            gate.set()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.tail is None and app.state == timeline.state_at(total)
            await pilot.pause(0.3)
            assert app.reading is None  # the progress timer stopped itself
            assert "indexing" not in app.query_one(TimelineBar).status
            assert app.query_one("#side").styles.visibility == "visible"
            assert app.query_one(TranscriptPane).event_count == total
            # the same picture, now from every event (only the scrollbar's thumb moved)
            assert [line[:-1] for line in pane_lines(app)] == [line[:-1] for line in first]
            assert f"event {total}/{total} · step 150 · ended: stopped" in header_text(app)
    finally:
        gate.set()


async def test_a_key_before_the_index_pass_ends_leaves_the_tail(tmp_path, short_tails, monkeypatch):
    monkeypatch.setattr(ReplayApp, "_index", lambda self: None)  # no index pass in a worker
    timeline = Timeline.open(long_run(tmp_path, steps=150))
    app = ReplayApp(timeline, len(timeline))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.tail is not None and timeline.indexed_count == 0
        await pilot.press("left")
        assert app.tail is None and app.position == len(timeline) - 1
        assert app.state == timeline.state_at(len(timeline) - 1)
        assert app.query_one("#side").styles.visibility == "visible"


async def test_a_bad_line_among_the_last_events_opens_the_usual_way(tmp_path, short_tails):
    path = long_run(tmp_path, steps=150)
    lines = path.read_text().splitlines()
    last_decision = max(i for i, line in enumerate(lines) if '"type":"decision"' in line)
    lines[last_decision] = lines[last_decision][:40]  # torn mid-file, near the end
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    timeline = Timeline.open(broken)
    total = len(timeline)
    app = ReplayApp(timeline, total)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.tail is None
        assert timeline.errors and f"{broken}:" in timeline.errors[0]
        assert app.position == len(timeline) < total  # the file ends at the bad line
        assert app.state == timeline.state_at(len(timeline))


def test_short_runs_are_indexed_first(tmp_path):
    timeline = Timeline.open(long_run(tmp_path, steps=20))
    assert replay_tail.read_tail(timeline) is None  # 41 events: under TAIL_FIRST_AT


def test_the_tail_says_the_policy_in_control_at_the_end(tmp_path, short_tails):
    path = long_run(tmp_path, steps=150)
    lines = path.read_text().splitlines()
    swap = {"at": 1_790_000_000.0, "type": "policy_swapped", "step": 150, "old": "p", "new": "other"}
    lines.insert(len(lines) - 1, json.dumps(swap))
    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text("\n".join(lines) + "\n")
    timeline = Timeline.open(swapped)
    tail = replay_tail.read_tail(timeline)
    assert tail is not None and tail.policy == "other"
    assert tail.policy == timeline.state_at(len(timeline)).policy
    assert tail.step == timeline.state_at(len(timeline)).step
