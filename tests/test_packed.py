"""A replay keeps a large transcript's bytes compressed once its lines are indexed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import scenarios
from engine.core.state import fold
from engine.sessions.run import new_run
from engine.stored import packed
from engine.stored.packed import Packed
from engine.stored.replay import Timeline
from engine.stored.transcript import read_transcript

WORLD = Path(__file__).resolve().parent.parent / "bench" / "worlds" / "lookup_world.py"


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 4 KiB and no size floor, so a short run spans many blocks and lines cross them."""
    monkeypatch.setattr(packed, "BLOCK", 4096)
    monkeypatch.setattr(packed, "MIN_SIZE", 0)
    monkeypatch.setattr(packed, "KEEP_BLOCKS", 2)


def lookup_run(path: Path, steps: int) -> None:
    scenario = scenarios.load_file(WORLD)
    run = new_run(scenario, "all", "looker", out=path, budget=scenario.budget.with_limit("steps", steps))
    run.engine.run()
    run.close()


def held(timeline: Timeline) -> object:
    return timeline._source.index.data


def test_an_indexed_replay_reads_its_events_from_the_packed_bytes(tmp_path, small_blocks):
    path = tmp_path / "run.jsonl"
    lookup_run(path, 300)
    expected = read_transcript(path).events
    timeline = Timeline.open(path, checkpoint_every=50)
    assert isinstance(held(timeline), bytes)  # opening packs nothing: the first frame comes first
    timeline.build_index()
    timeline.pack()
    data = held(timeline)
    assert isinstance(data, Packed) and data.packed_size < len(data) / 3
    assert list(timeline.events(0, len(timeline))) == expected
    for position in (len(timeline), 7, len(timeline) // 2, 1):  # far seeks inflate other blocks
        assert timeline.state_at(position) == fold(timeline.header, expected[:position])


@pytest.mark.parametrize("change", ["overwritten", "cut short", "deleted"])
def test_the_file_changing_after_indexing_does_not_touch_the_replay(tmp_path, small_blocks, change):
    path = tmp_path / "run.jsonl"
    lookup_run(path, 300)
    expected = read_transcript(path).events
    timeline = Timeline.open(path)
    timeline.build_index()
    timeline.pack()
    if change == "overwritten":
        path.write_bytes(b"x" * path.stat().st_size)
    elif change == "cut short":
        os.truncate(path, 10)
    else:
        path.unlink()
    assert list(timeline.events(0, len(timeline))) == expected
    assert timeline.seek(len(timeline) // 2) == fold(timeline.header, expected[: len(timeline) // 2])
    assert timeline.errors == []


def test_slices_across_blocks_equal_the_bytes(small_blocks):
    data = bytes(range(256)) * 100  # 25,600 bytes: 7 blocks of 4 KiB
    disk = Packed(data)
    for start, stop in [(0, 1), (4090, 4100), (0, len(data)), (12_000, 20_500), (25_599, 25_600), (5, 5), (30_000, 40_000)]:
        assert disk[start:stop] == data[start:stop], (start, stop)
    assert len(disk) == len(data)
    with pytest.raises(TypeError):
        disk[3]


def test_two_threads_reading_far_apart_get_their_own_bytes(small_blocks):
    """The index pass reads ahead in a worker while the viewer reads near its position."""
    data = os.urandom(64 * 1024)
    disk = Packed(data)
    wrong: list[tuple[int, int]] = []

    def reader(offset: int) -> None:
        for n in range(400):
            start = (offset + n * 997) % (len(data) - 300)
            if disk[start : start + 300] != data[start : start + 300]:
                wrong.append((offset, start))

    threads = [threading.Thread(target=reader, args=(offset,)) for offset in (0, 20_000, 41_000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert wrong == []


def test_a_small_file_stays_as_it_is(tmp_path):
    path = tmp_path / "run.jsonl"
    lookup_run(path, 5)
    timeline = Timeline.open(path)
    timeline.build_index()
    timeline.pack()
    assert isinstance(held(timeline), bytes)


def test_a_large_run_is_packed_at_the_default_sizes(tmp_path):
    path = tmp_path / "run.jsonl"
    lookup_run(path, 8_000)  # 16,001 events, about 5.7 MB
    assert path.stat().st_size > packed.MIN_SIZE
    timeline = Timeline.open(path)
    timeline.build_index()
    timeline.pack()
    assert isinstance(held(timeline), Packed)
    assert timeline.seek(len(timeline)).step == 8_000


def test_an_observation_shares_the_arguments_of_the_call_it_answers(tmp_path):
    """A replay holds every step: the observation of a call run as proposed keeps no
    second copy of its arguments."""
    path = tmp_path / "run.jsonl"
    lookup_run(path, 3)
    timeline = Timeline.open(path)
    state = timeline.state_at(len(timeline))
    assert len(state.history) == 3
    for step in state.history:
        assert step.observations[0].args is step.actions[0].args


@pytest.mark.parametrize("at, expected", [("end", "the end"), ("2", "after step 2")])
def test_replay_at_end_opens_the_viewer_without_a_pass_over_the_run(tmp_path, monkeypatch, at, expected):
    """`agent-tui replay FILE --at end` hands the viewer the last position at once (the
    viewer draws the last events while it indexes); `--at N` still finds step N's end."""
    import tui.replay_app
    from tui.cli import main

    path = tmp_path / "run.jsonl"
    lookup_run(path, 30)
    opened: list[tuple[int, int, int]] = []

    def viewer(timeline, at_position):
        opened.append((at_position, timeline.indexed_count, len(timeline)))
        return None

    monkeypatch.setattr(tui.replay_app, "run_viewer", viewer)
    assert main(["replay", str(path), "--at", at]) == 0
    ((position, indexed, total),) = opened
    if expected == "the end":
        assert (position, indexed) == (total, 0)
    else:
        assert position == Timeline.open(path).position_after_step(2) and position < total


def test_the_call_that_ran_when_the_run_stopped_is_found_behind_a_torn_note(tmp_path):
    """The index keeps only the last two `tool_started` lines: when the last is torn (cut
    off while being written) and dropped, the one before is the call that was running."""
    path = tmp_path / "run.jsonl"
    lookup_run(path, 3)
    lines = path.read_bytes().splitlines(keepends=True)
    notes = [line for line in lines if b'"tool_started"' in line]
    assert len(notes) == 3
    running = notes[-1].replace(b'"step":3', b'"step":4')
    path.write_bytes(b"".join(lines) + running + notes[-1][:-12])  # step 4's call, then a torn note
    transcript = read_transcript(path)
    assert transcript.unfinished is not None and transcript.unfinished.step == 4
    assert any("cut off while being written" in w for w in transcript.warnings)
    timeline = Timeline.open(path)
    assert timeline._source.index.last_note().step == 4


def test_a_seek_before_the_whole_pass_packs_nothing(tmp_path, small_blocks):
    """A viewer seeking while its worker indexes folds up to the position on its own
    thread: packing the bytes is left to the worker, once its whole pass is done."""
    path = tmp_path / "run.jsonl"
    lookup_run(path, 100)
    timeline = Timeline.open(path)
    timeline.state_at(len(timeline) // 2)
    assert isinstance(held(timeline), bytes)
    timeline.build_index()
    timeline.pack()
    assert isinstance(held(timeline), Packed)


def test_the_index_pass_reads_the_plain_bytes_and_packs_nothing(tmp_path, small_blocks):
    """The pass slices its lines from the file's bytes as read (no block inflated again for
    every line it reads) and packs nothing: a one-off pass (`replay --headless`) has no use
    for it; the viewer, which holds the run, packs once its pass is done (`Timeline.pack`)."""
    path = tmp_path / "run.jsonl"
    lookup_run(path, 100)
    timeline = Timeline.open(path)
    seen: set[type] = set()
    timeline.index_hooks.append(lambda index, event: seen.add(type(held(timeline))))
    timeline.build_index()
    assert seen == {bytes} and isinstance(held(timeline), bytes)
    timeline.pack()
    assert isinstance(held(timeline), Packed)
    assert timeline.markers() and timeline.seek(7) == fold(timeline.header, timeline.events(0, 7))


@pytest.mark.anyio
async def test_the_viewer_packs_the_bytes_once_its_pass_is_done(tmp_path, small_blocks):
    """The viewer holds the run: its worker packs the file's bytes after the index pass."""
    from tui.replay_app import ReplayApp

    path = tmp_path / "run.jsonl"
    lookup_run(path, 100)
    timeline = Timeline.open(path)
    app = ReplayApp(timeline)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(400):  # the worker starts after the first frame: wait for it, bounded
            await app.workers.wait_for_complete()
            if timeline.indexed and isinstance(held(timeline), Packed):
                break
            await pilot.pause(0.01)
        assert timeline.indexed and isinstance(held(timeline), Packed)
        await pilot.press("end")
        assert app.position == len(timeline) and app.state == fold(timeline.header, timeline.events())
