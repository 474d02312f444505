"""A file of JSON lines is split at its newlines only: the line breaks of Unicode that JSON writes
unescaped inside a string (U+2028, U+2029, U+0085: Node's `JSON.stringify` leaves them, so a
Claude Code session holds them as they were typed or read) stay in the text they belong to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.stored.importers import load_runs
from engine.stored.importers.detect import json_lines

SEPARATORS = "first\u2028second\u2029third\x85fourth"


def _claude(text: str) -> list[str]:
    def row(kind: str, n: int, content: object) -> str:
        message = {"role": kind, "content": content, **({"id": f"msg{n}", "model": "claude"} if kind == "assistant" else {})}
        return json.dumps({"type": kind, "uuid": f"u{kind}{n}", "sessionId": "s", "message": message}, ensure_ascii=False)

    return [row("user", 0, "Count the words."),
            row("assistant", 1, [{"type": "text", "text": text}, {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": text}}]),
            row("user", 1, [{"type": "tool_result", "tool_use_id": "t1", "content": text}]),
            row("assistant", 2, [{"type": "text", "text": f"Done: {text}"}])]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_unicode_line_breaks_inside_strings_stay_in_their_text(tmp_path: Path, newline: str) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes((newline.join(_claude(SEPARATORS)) + newline).encode())
    (run,) = load_runs(path)
    decision = next(e for e in run.events if e.type == "decision")
    observation = next(e for e in run.events if e.type == "observation")
    assert decision.thought == SEPARATORS and decision.actions[0].args == {"path": SEPARATORS}
    assert observation.text == SEPARATORS
    assert run.events[-1].type == "run_ended" and run.events[-1].answer == f"Done: {SEPARATORS}"


def test_a_file_split_by_carriage_returns_alone_is_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes("\r".join(_claude("plain")).encode())
    (run,) = load_runs(path)
    assert [e.type for e in run.events].count("observation") == 1


@pytest.mark.parametrize("text, lines", [
    ("a\nb\n", ["a", "b"]), ("a\nb", ["a", "b"]), ("a\r\nb\r\n", ["a\r", "b\r"]), ("a\n\nb\n", ["a", "", "b"]),
    ("a\u2028b\nc", ["a\u2028b", "c"]), ("a\u2028b", ["a\u2028b"]), ("a\rb", ["a", "b"]), ("a\rb\r", ["a", "b"]), ("", []), ("\n", [""]),
])
def test_json_lines_splits_at_newlines(text: str, lines: list[str]) -> None:
    assert json_lines(text) == lines


def test_a_file_of_json_lines_is_searched_whole_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Detection tries the whole text as one document; pydantic's parser refuses a file of JSON
    lines at its second line, so only the reading of its lines searches the whole text (`plain`)."""
    from engine.core import jsontext

    lines = _claude("1e400 and 8e391") * 50
    text = "\n".join(lines) + "\n"
    path = tmp_path / "session.jsonl"
    path.write_text(text, encoding="utf-8")
    searched: list[int] = []
    plain = jsontext.plain

    def counted(value: str | bytes) -> bool:
        if len(value) == len(text):
            searched.append(len(value))
        return plain(value)

    monkeypatch.setattr(jsontext, "plain", counted)  # the one whole-text check (`PlainCheck`'s)
    (run,) = load_runs(path)
    assert sum(e.type == "decision" for e in run.events) == 100
    assert searched == [len(text)]
