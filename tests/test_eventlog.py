"""The engine's event log keeps lines, not objects, and reads back equal events."""

from __future__ import annotations

import threading

import scenarios
from engine.core.eventlog import EventLog
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript


def finished_run(tmp_path):
    run = new_run(scenarios.get("support"), "return-1187", None, out=tmp_path / "r.jsonl", approve="all")
    run.engine.run()
    run.close()
    return run


def test_reads_back_equal_events_by_index_slice_and_iteration(tmp_path):
    run = finished_run(tmp_path)
    log = run.engine.events
    assert isinstance(log, EventLog)
    events = read_transcript(tmp_path / "r.jsonl").events
    assert log == events and events == log
    assert list(log) == events
    assert log[1:3] == events[1:3]
    assert log[-1] == events[-1] and log[-1].type == "run_ended"
    assert log.raw(0).startswith(b'{"at":')


def test_events_are_parsed_again_once_out_of_the_cache(tmp_path):
    events = list(finished_run(tmp_path).engine.events)
    log = EventLog(events, cache_size=2)
    first = log[0]
    assert first == events[0]
    log[5], log[6]  # push event 0 out of the cache
    again = log[0]
    assert again == first and again is not first


def test_inequality_and_bounds(tmp_path):
    events = list(finished_run(tmp_path).engine.events)
    log = EventLog(events)
    assert log != events[:-1]
    assert log != events[::-1]
    try:
        log[len(events)]
    except IndexError:
        pass
    else:
        raise AssertionError("reading past the end must raise IndexError")


def test_reads_while_another_thread_appends(tmp_path):
    events = list(finished_run(tmp_path).engine.events)
    log = EventLog(cache_size=3)
    done = threading.Event()

    def writer():
        for _ in range(200):
            log.extend(events)
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    seen = 0
    while not done.is_set() or seen < len(log):
        if seen < len(log):
            assert log[seen] == events[seen % len(events)]
            seen += 1
    thread.join()
    assert seen == 200 * len(events)


def test_the_event_log_is_the_cores_and_only_there():
    import importlib.util

    assert EventLog.__module__ == "engine.core.eventlog"
    assert importlib.util.find_spec("engine.stored.eventlog") is None  # no second name for it


def test_a_log_given_its_lines_keeps_them_and_reads_only_the_events_its_cache_keeps(tmp_path):
    run = finished_run(tmp_path)
    transcript = read_transcript(tmp_path / "r.jsonl")
    touched: list[int] = []

    class Counted(list):
        def __getitem__(self, index):
            touched.append(index)
            return list.__getitem__(self, index)

        def __iter__(self):
            for index in range(len(self)):
                yield self[index]

    events = Counted(transcript.events)
    log = EventLog(events, cache_size=3, lines=transcript.event_lines)
    assert sorted(set(touched)) == list(range(len(events) - 3, len(events)))  # a resume of 100,000 events caches 4,096
    assert [log.raw(i) for i in range(len(log))] == list(transcript.event_lines)
    assert list(log) == transcript.events == list(run.engine.events)
