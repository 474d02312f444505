"""One serialiser of an event: the transcript's lines, the live event log's lines and a
fork's copied lines are `engine.core.sink.event_line`, byte for byte."""

from __future__ import annotations

from engine.core.sink import event_line
from engine.core.eventlog import EventLog
from tests.support.helpers import rejected_support_run


def test_the_file_and_the_event_log_hold_the_lines_event_line_writes(tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    run = rejected_support_run(path)
    header, *events = path.read_bytes().splitlines()
    assert header == event_line(run.engine.header)
    assert [line for line in events if b'"tool_started"' not in line] == [event_line(e) for e in run.engine.events]
    log = EventLog(run.engine.events, cache_size=1)  # every event but the last leaves the cache as its line
    assert [log.raw(i) for i in range(len(log))] == [event_line(e) for e in run.engine.events]
