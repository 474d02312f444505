"""`show`, `replay --headless`, the replay viewer's timeline and resume read a transcript through one reader."""

from __future__ import annotations

from collections import Counter

import pytest

import scenarios
from engine.sessions.run import new_run
from engine.stored import reader
from engine.stored.replay import Timeline
from engine.stored.transcript import read_transcript
from tui.cli import main


@pytest.fixture
def counted(monkeypatch):
    """Count the calls of the reader's line scan and event parser."""
    calls: Counter[str] = Counter()
    scan, parse = reader.LineIndex.scan.__func__, reader.parse_event

    def counting_scan(cls, name, data, **kwargs):
        calls["scan"] += 1
        return scan(cls, name, data, **kwargs)

    def counting_parse(raw, where, line=None):
        calls["parse"] += 1
        return parse(raw, where, line)

    monkeypatch.setattr(reader.LineIndex, "scan", classmethod(counting_scan))
    monkeypatch.setattr(reader, "parse_event", counting_parse)
    return calls


def _saved(tmp_path):
    path = tmp_path / "run.jsonl"
    run = new_run(scenarios.get("calculator"), None, None, out=path, approve="all")
    run.engine.run()
    run.close()
    return run, path


def test_show_and_replay_headless_read_through_the_same_reader(tmp_path, counted, capsys):
    run, path = _saved(tmp_path)
    events = len(run.engine.events)
    assert events > 2

    assert main(["show", str(path)]) == 0
    shown = dict(counted)
    assert shown == {"scan": 1, "parse": events}
    counted.clear()

    assert main(["replay", str(path), "--headless"]) == 0
    assert dict(counted) == shown
    counted.clear()

    timeline = Timeline.open(path)
    timeline.build_index()
    assert dict(counted) == shown
    counted.clear()

    assert read_transcript(path).events == list(run.engine.events)
    assert dict(counted) == shown


def test_a_torn_last_line_is_one_warning_for_every_reader(tmp_path, capsys):
    run, path = _saved(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-10])  # the last event cut off mid-line
    transcript = read_transcript(path)
    timeline = Timeline.open(path)
    assert len(transcript.events) == len(timeline) == len(run.engine.events) - 1
    assert transcript.warnings == timeline.warnings
    assert len(transcript.warnings) == 1 and "cut off while being written" in transcript.warnings[0]
    assert main(["show", str(path)]) == 0
    assert "cut off while being written" in capsys.readouterr().err


def test_parse_event_names_the_place_and_the_reason():
    with pytest.raises(reader.TranscriptError, match=r"^f.jsonl:7: not JSON"):
        reader.parse_event(b"{not json", "f.jsonl:7")
    with pytest.raises(reader.TranscriptError, match=r"^f.jsonl:8: not a valid event: "):
        reader.parse_event(b'{"type": "decision"}', "f.jsonl:8")
    with pytest.raises(reader.TranscriptError, match=r"^f.jsonl:9: not UTF-8 text"):
        reader.parse_event(b'{"type": "\xff"}', "f.jsonl:9")
    with pytest.raises(reader.TranscriptError, match=r"^f.jsonl:10: not JSON"):
        reader.parse_event(b"{not json", "f.jsonl", 10)  # the place written out only for a bad line
