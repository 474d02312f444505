"""Resume and fork of a long run do each piece of work once: the saved events are
folded once, never parsed again, serialised once (a fork), and written in one go."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

import scenarios
from engine.core import history as history_module
from engine.core import sink
from engine.core.policy import StepView
from engine.core.events import Header, ToolInfo
from engine.core.state import RunState
from engine.sessions import resume as resume_module
from engine.core.state import fold
from engine.sessions.resume import ResumeError, fork_point, fork_position, fork_run, resume_run
from engine.sessions.run import new_run
from engine.core import eventlog
from engine.stored import reader
from engine.stored.transcript import TranscriptError, read_transcript

WORLD = Path(__file__).resolve().parent.parent / "bench" / "worlds" / "lookup_world.py"
STEPS = 2_100  # 4,200 events: past the event log's cache of 4,096


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory) -> tuple[object, bytes]:
    """A lookup run of STEPS steps whose end line is cut off (it did not end)."""
    scenario = scenarios.load_file(WORLD)
    path = tmp_path_factory.mktemp("long") / "run.jsonl"
    run = new_run(scenario, "all", "looker", out=path, budget=scenario.budget.with_limit("steps", STEPS))
    run.engine.run()
    run.close()
    lines = path.read_bytes().splitlines(keepends=True)
    assert b'"run_ended"' in lines[-1]
    return scenario, b"".join(lines[:-1])


class _Count:
    def __init__(self, real):
        self.real, self.calls = real, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.real(*args, **kwargs)


def test_resume_folds_the_saved_events_once_and_parses_and_serialises_none_again(tmp_path, monkeypatch, unfinished):
    scenario, data = unfinished
    path = tmp_path / "run.jsonl"
    path.write_bytes(data)
    transcript = read_transcript(path)
    applied = _Count(RunState.apply)
    monkeypatch.setattr(RunState, "apply", lambda self, *a, **k: applied(self, *a, **k))
    parsed = _Count(eventlog.EVENT_ADAPTER.validate_json)
    monkeypatch.setattr(eventlog, "EVENT_ADAPTER", type("A", (), {"validate_json": staticmethod(parsed)}))
    written = _Count(sink.event_line)
    monkeypatch.setattr(eventlog, "event_line", written)
    reread = _Count(resume_module.read_transcript)
    monkeypatch.setattr(resume_module, "read_transcript", reread)
    run = resume_run(scenario, transcript, interactive=True)
    try:
        assert applied.calls == len(transcript.events) > 4_096
        assert parsed.calls == 0
        assert written.calls == 0  # the log keeps the file's lines, for every event past its cache too
        file_lines = [line for line in data.splitlines()[1:] if b'"tool_started"' not in line]
        assert [run.engine.events.raw(i) for i in range(len(file_lines))] == file_lines
        assert reread.calls == 0  # the file is as read: same size, ending at a line boundary
        assert run.engine.state.step == STEPS and run.engine.state.header is transcript.header
        assert list(run.engine.events) == transcript.events
    finally:
        run.close()


def test_a_lazily_read_resume_parses_each_line_once_and_keeps_only_its_last_steps_as_objects(tmp_path, monkeypatch, unfinished):
    """`run --resume` reads the file lazily: each saved line is parsed once, in one pass that
    believes, folds and drops each event, and of the steps only the last are kept as objects
    (the older ones read back from the log's lines); the history a policy reads and the lines
    are those of a whole read."""
    scenario, data = unfinished
    path = tmp_path / "run.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(history_module, "HOT", 100)
    parsed = _Count(reader.parse_event)
    monkeypatch.setattr(reader, "parse_event", parsed)
    transcript = read_transcript(path, lazy=True)
    run = resume_run(scenario, transcript, interactive=True)
    try:
        assert parsed.calls == len(transcript.events) > 4_096
        del transcript
        gc.collect()
        assert sum(isinstance(o, StepView) for o in gc.get_objects()) <= 2 * 100
        monkeypatch.undo()
        whole = read_transcript(path)
        assert run.engine.state.history.cold > STEPS - 200
        assert list(run.engine.state.history) == list(fold(whole.header, whole.events).history)
        file_lines = [line for line in data.splitlines()[1:] if b'"tool_started"' not in line]
        assert [run.engine.events.raw(i) for i in range(len(file_lines))] == file_lines
        assert list(run.engine.events) == whole.events
        assert list(run.engine.view().history) == list(fold(whole.header, whole.events).history)  # what a policy reads
    finally:
        run.close()


def test_a_bad_line_in_the_middle_of_a_lazily_read_run_is_said_as_a_whole_read_says_it(tmp_path, unfinished):
    scenario, data = unfinished
    path = tmp_path / "run.jsonl"
    lines = data.splitlines(keepends=True)
    lines[1_000] = lines[1_000].replace(b'"step":', b'"step":"x",', 1)
    path.write_bytes(b"".join(lines))
    with pytest.raises(TranscriptError) as whole:
        read_transcript(path)
    with pytest.raises(ResumeError) as lazy:
        resume_run(scenario, read_transcript(path, lazy=True), interactive=True)
    assert str(lazy.value) == str(whole.value) and f"{path}:1001:" in str(whole.value)
    assert path.read_bytes() == b"".join(lines)


def test_a_file_read_with_a_torn_last_line_is_read_again_before_resuming(tmp_path, monkeypatch, unfinished):
    scenario, data = unfinished
    path = tmp_path / "run.jsonl"
    path.write_bytes(data + b'{"at":1.0,"type":"deci')
    transcript = read_transcript(path)
    assert transcript.whole_size is None and transcript.warnings
    reread = _Count(resume_module.read_transcript)
    monkeypatch.setattr(resume_module, "read_transcript", reread)
    run = resume_run(scenario, transcript, interactive=True)
    run.close()
    assert reread.calls == 1
    assert path.read_bytes() == data  # the torn line is cut before appending


def test_a_fork_serialises_and_writes_the_copied_events_once(tmp_path, monkeypatch, unfinished):
    scenario, data = unfinished
    parent = tmp_path / "run.jsonl"
    parent.write_bytes(data)
    transcript = read_transcript(parent)
    position = fork_position(transcript, "end")
    assert position == len(transcript.events)
    serialiser = sink.event_line
    events_only = _Count(lambda event: None)  # the header and its tools are also serialised for its seal's canonical form

    def dumped(event):
        if not isinstance(event, (Header, ToolInfo)):
            events_only(event)
        return serialiser(event)

    for module in list(sys.modules.values()):  # every module that took the one serialiser by name
        if getattr(module, "event_line", None) is serialiser:
            monkeypatch.setattr(module, "event_line", dumped)
    applied = _Count(RunState.apply)
    monkeypatch.setattr(RunState, "apply", lambda self, *a, **k: applied(self, *a, **k))
    from engine.stored import transcript as transcript_module

    writes = _Count(os.write)
    monkeypatch.setattr(transcript_module.os, "write", writes)
    run = fork_run(scenario, transcript, position, "looker", out=tmp_path / "fork.jsonl", interactive=True)
    try:
        assert events_only.calls == position  # each copied event once, for the file and the event log alike
        assert applied.calls == position  # folded once, under the parent's header, which starts the same
        assert writes.calls <= 2  # the header and the copied events, in one write
        assert run.engine.state.header is run.engine.header
        copied = (tmp_path / "fork.jsonl").read_bytes().splitlines()[1:]
        assert [run.engine.events.raw(i) for i in range(position)] == copied
    finally:
        monkeypatch.undo()
        run.close()
    assert read_transcript(tmp_path / "fork.jsonl").events == transcript.events


def test_a_fork_with_its_own_budget_folds_under_its_own_header(tmp_path, unfinished):
    scenario, data = unfinished
    parent = tmp_path / "run.jsonl"
    parent.write_bytes(data)
    transcript = read_transcript(parent)
    budget = transcript.header.budget.with_limit("steps", STEPS + 5)
    run = fork_run(scenario, transcript, 40, "looker", out=tmp_path / "fork.jsonl", header_changes={"budget": budget})
    try:
        assert run.engine.state.budget == budget != transcript.header.budget
        assert run.engine.state.header is run.engine.header
        assert run.engine.state.step == 20
    finally:
        run.close()


@pytest.mark.parametrize("at", ["end", 0, 1, 700, STEPS - 1])
def test_the_fold_a_fork_point_hands_over_is_the_fold_of_the_events_before_it(tmp_path, unfinished, at):
    scenario, data = unfinished
    parent = tmp_path / "run.jsonl"
    parent.write_bytes(data)
    transcript = read_transcript(parent)
    position, folded = fork_point(transcript, at)
    assert position == fork_position(transcript, at)
    assert folded == fold(transcript.header, transcript.events[:position])
    applied = []
    real = RunState.apply
    RunState.apply = lambda self, *a, **k: (applied.append(1), real(self, *a, **k))[1]
    try:
        run = fork_run(scenario, transcript, position, "looker", out=tmp_path / "fork.jsonl", folded=folded)
    finally:
        RunState.apply = real
    try:
        assert applied == []  # nothing folded again
        assert run.engine.state.step == folded.step and run.engine.state.header is run.engine.header
    finally:
        run.close()
