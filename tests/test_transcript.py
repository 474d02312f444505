"""Transcripts read back to the same events; bad files give clear, located errors."""

from __future__ import annotations

import json

import pytest

import scenarios
from engine.sessions.run import new_run
from engine.stored.reader import parse_event
from engine.stored.transcript import TranscriptError, read_transcript


def _write_run(tmp_path, scenario="support", task="return-1187", **kw):
    path = tmp_path / "run.jsonl"
    run = new_run(scenarios.get(scenario), task, None, out=path, approve="all", **kw)
    run.engine.run()
    run.close()
    return run, path


def test_a_written_transcript_reads_back_to_equal_events(tmp_path, clock):
    run, path = _write_run(tmp_path, clock=clock)
    transcript = read_transcript(path)
    assert transcript.header == run.engine.header
    assert transcript.events == run.engine.events
    assert transcript.warnings == [] and transcript.errors == []


def test_every_line_is_flushed_as_it_happens(tmp_path):
    path = tmp_path / "live.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    run.engine.run()  # paused at the approval, file still open
    lines = path.read_text().splitlines()
    event_lines = [line for line in lines[1:] if json.loads(line)["type"] != "tool_started"]
    assert len(event_lines) == len(run.engine.events)
    assert json.loads(lines[-1])["type"] == "approval_requested"
    run.close()


def test_a_torn_last_line_is_accepted_with_a_warning(tmp_path):
    _, path = _write_run(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 25])  # cut inside the last line
    transcript = read_transcript(path)
    assert len(transcript.warnings) == 1
    assert "cut off" in transcript.warnings[0]
    full = len([line for line in data.splitlines()[1:] if b'"tool_started"' not in line])
    assert len(transcript.events) == full - 1


def test_a_garbage_line_is_reported_with_file_and_line(tmp_path):
    _, path = _write_run(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(3, "this is not json\n")
    path.write_text("".join(lines))
    with pytest.raises(TranscriptError) as info:
        read_transcript(path)
    assert str(info.value).startswith(f"{path}:4: not JSON")
    lenient = read_transcript(path, strict=False)
    assert lenient.errors and lenient.errors[0].startswith(f"{path}:4:")
    assert len(lenient.events) == len([line for line in lines if '"tool_started"' not in line]) - 2
    assert len(lenient.event_lines) == len(lenient.events)  # each event with its own line as read, the bad one left out
    assert [parse_event(line, "") for line in lenient.event_lines] == lenient.events
    assert b"this is not json" not in b"".join(lenient.event_lines)


def test_a_wrong_event_shape_names_the_field(tmp_path):
    _, path = _write_run(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    bad = json.loads(lines[1])
    bad["step"] = "three"
    lines[1] = json.dumps(bad) + "\n"
    path.write_text("".join(lines))
    with pytest.raises(TranscriptError, match=r":2: not a valid event: .*step"):
        read_transcript(path)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"\n\n", "empty"),
        (b'{"type": "decision"}\n', "expected the header"),
        (b'{"type": "header", "format_version": 99, "scenario": "s"}\n', "newer"),
        (b"\xfe\x00garbage\n{}\n", "not UTF-8"),
        (b"\xff\xfe\x00garbage\n{}", "UTF-16 text that cannot be decoded"),  # a byte-order mark, then an odd byte
        (b'{"type": "header"}\n', "not a valid header"),
        (b"[" * 100000 + b"\n" + b"{}\n", "not JSON"),
    ],
)
def test_bad_files_raise_only_transcript_errors(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(TranscriptError, match=message):
        read_transcript(path)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(TranscriptError, match="no such file"):
        read_transcript(tmp_path / "nope.jsonl")
    with pytest.raises(TranscriptError, match="folder"):
        read_transcript(tmp_path)


def test_a_header_with_the_tool_records_of_the_header_before_is_written_around_their_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gateway's new runs record an agent's same tools: a header holding the same records as the
    one written before takes their JSON as it was (no serialisation of the whole), and every line
    is byte for byte the whole header's, whatever its other fields hold."""
    from engine.core import guards
    from engine.core.events import Header, ToolInfo
    from engine.stored import transcript

    tools = [ToolInfo(name=f"tool_{k}", description="Run it ☃. " * 30, parameters=[{"name": "path", "type": "string"}]) for k in range(27)]
    real, whole = guards.serialised, []
    monkeypatch.setattr(guards, "serialised", lambda item: whole.append(item) or real(item))
    odd = [
        {"task_text": "plain"},
        {"task_text": "a lone \ud801 surrogate"},
        {"task_text": "t", "options": {"tools": [], "z": {"b": 1, "a": 2}}, "seal": "0" * 64},
        {"task_text": "t", "rules": [], "repetition_threshold": None, "started_at": 1.5},
        {"task_text": "t", "tools": tools[::-1]},
        {"task_text": "t", "tools": []},
        {"task_text": "last"},
    ]
    for n, fields in enumerate(odd):
        header = Header(**{"scenario": "gateway", "task": f"conversation-{n}-turn-1", "policy": "p", "tools": tools, **fields})
        line = transcript._header_line(header)
        assert line == real(header)[1], fields
    # serialised whole: the first, the one with a surrogate, other records (reversed, none, the first's again after those)
    assert [int(h.task.split("-")[1]) for h in whole] == [0, 1, 4, 5, 6]
