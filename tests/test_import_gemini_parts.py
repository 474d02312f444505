"""Every part of a Gemini CLI record is kept: text beside results, media named, calls in a turn's
content, and any part of no known kind as an 'unrecognised' note counted in the warning."""

from __future__ import annotations

import json

from engine.stored.importers import runs_from_bytes

SESSION = {"sessionId": "s1", "projectHash": "p", "startTime": "2025-01-01T00:00:00Z", "kind": "main"}
IMAGE = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo" * 50}}


def _run(*records: dict):  # type: ignore[no-untyped-def]
    (run,) = runs_from_bytes("chat.jsonl", "".join(json.dumps(r) + "\n" for r in (SESSION, *records)).encode())
    return run


def _notes(run, kind: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.text for e in run.events if e.type == "note" and e.kind == kind]


def test_text_beside_a_result_media_and_a_call_in_the_content_are_all_kept():
    run = _run(
        {"id": "u1", "type": "user", "content": [{"text": "Write hello to note.txt"}]},
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [
            {"id": "c1", "name": "run_shell_command", "args": {"command": "echo hello > note.txt"}, "status": "success"}]},
        {"id": "u2", "type": "user", "content": [
            {"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "ok"}}},
            {"text": "also, please stop after this"}]},
        {"id": "u3", "type": "user", "content": [IMAGE]},
        {"id": "g2", "type": "gemini", "content": [{"text": "Looking."}, {"functionCall": {"id": "c2", "name": "read_file", "args": {"path": "note.txt"}}}]},
        {"id": "u4", "type": "user", "content": [{"functionResponse": {"id": "c2", "name": "read_file", "response": {"output": "hello"}}}]},
        {"id": "g3", "type": "gemini", "content": "Done."},
    )
    decisions = [e for e in run.events if e.type == "decision"]
    assert [[(a.tool, a.args, a.call_id) for a in d.actions] for d in decisions] == [
        [("run_shell_command", {"command": "echo hello > note.txt"}, "c1")], [("read_file", {"path": "note.txt"}, "c2")], []]
    assert decisions[1].thought == "Looking."
    assert [(e.step, e.index, e.text) for e in run.events if e.type == "observation"] == [(1, 0, "ok"), (2, 0, "hello")]
    assert _notes(run, "user") == ["also, please stop after this", "(image, image/png)"]
    assert run.events[-1].answer == "Done."
    assert "iVBOR" not in "".join(e.model_dump_json() for e in run.events)
    assert not _notes(run, "unrecognised") and not run.warnings


def test_media_in_a_calls_result_is_named_in_that_result():
    run = _run(
        {"id": "u1", "type": "user", "content": [{"text": "Look at the chart."}]},
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [
            {"id": "c1", "name": "read_file", "args": {"path": "chart.png"}, "status": "success", "result": [
                {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "Binary content provided."}}}, IMAGE]}]},
        {"id": "g2", "type": "gemini", "content": "A chart."},
    )
    (observed,) = [e for e in run.events if e.type == "observation"]
    assert observed.text == "Binary content provided.\n(image, image/png)"
    assert not _notes(run, "unrecognised") and not run.warnings


def test_a_part_that_cannot_be_mapped_is_an_unrecognised_note_counted_in_the_warning():
    run = _run(
        {"id": "u1", "type": "user", "content": [{"text": "go"}, {"executableCode": {"code": "print(1)"}}]},
        {"id": "g1", "type": "gemini", "content": [{"text": "Trying."}, {"functionCall": {"args": {}}}]},
        {"id": "g2", "type": "gemini", "content": "Done."},
    )
    assert run.header.task_text == "go"
    unrecognised = _notes(run, "unrecognised")
    assert len(unrecognised) == 2
    assert "print(1)" in unrecognised[0] and '"functionCall"' in unrecognised[1]
    assert len(run.warnings) == 1 and "2 parts could not be mapped" in run.warnings[0]
