"""A run's last events and the state its header and gauges show, read from the file's ends."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from engine.core.state import fold
from engine.sessions.run import new_run
from engine.stored import reader
from engine.stored.tail import read_tail
from engine.stored.transcript import TranscriptError, read_transcript

WORLD = Path(__file__).resolve().parent.parent / "bench" / "worlds" / "lookup_world.py"


@pytest.fixture(scope="module")
def long_run(tmp_path_factory) -> bytes:
    """A lookup run of 400 steps (about 200 KB) that did not end: its end line is cut off."""
    scenario = scenarios.load_file(WORLD)
    path = tmp_path_factory.mktemp("tail") / "run.jsonl"
    run = new_run(scenario, "all", "looker", out=path, budget=scenario.budget.with_limit("steps", 400))
    run.engine.run()
    run.close()
    lines = path.read_bytes().splitlines(keepends=True)
    assert b'"run_ended"' in lines[-1]
    return b"".join(lines[:-1])


def test_the_tail_of_a_long_run_is_its_last_events_with_the_step_and_status_of_the_whole(tmp_path, monkeypatch, long_run):
    path = tmp_path / "run.jsonl"
    path.write_bytes(long_run)
    whole = read_transcript(path)
    state = fold(whole.header, whole.events)
    parsed = []
    real = reader.LineIndex.parse
    monkeypatch.setattr(reader.LineIndex, "parse", lambda self, i: (parsed.append(i), real(self, i))[1])
    tail = read_tail(path, 20)
    assert tail.events == whole.events[-20:]
    assert tail.header == whole.header and tail.size == len(long_run)
    assert (tail.state.step, tail.state.status, tail.state.pending, tail.state.policy) == (state.step, state.status, state.pending, state.policy)
    assert tail.state.history[-1] == state.history[-1]
    assert not tail.whole and tail.partial and tail.total is None and tail.lines is None
    assert 0 < tail.state.tokens < state.tokens  # the steps read only, and said so
    assert len(parsed) < len(whole.events) // 2  # the middle of the file is not read


def test_a_short_run_read_whole_from_its_tail_is_the_plain_fold(tmp_path, long_run):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(long_run.splitlines(keepends=True)[:41]))
    whole = read_transcript(path)
    tail = read_tail(path, 10)
    assert tail.whole and not tail.partial and tail.total == len(whole.events)
    assert tail.events == whole.events[-10:] and tail.lines == list(whole.lines[-10:])
    assert tail.state == fold(whole.header, whole.events)


def test_a_tail_ending_in_a_torn_line_warns_and_leaves_it_out(tmp_path, long_run):
    path = tmp_path / "run.jsonl"
    path.write_bytes(long_run + b'{"at":1.0,"type":"deci')
    tail = read_tail(path, 5)
    assert tail.events == read_transcript(long_path(tmp_path, long_run)).events[-5:]
    assert len(tail.warnings) == 1 and "cut off" in tail.warnings[0]


def long_path(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "whole.jsonl"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("data, said", [(b"", "empty"), (b"not json\n", "header"), (b'{"type":"header"}\n', "header")])
def test_a_file_that_is_not_a_transcript_is_one_line_naming_it(tmp_path, data, said):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    with pytest.raises(TranscriptError) as caught:
        read_tail(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and said in message and "\n" not in message
