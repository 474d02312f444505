"""A chat log's messages are named by the line each starts on, found in one reading of the text."""

from __future__ import annotations

import json

from engine.stored.importers import runs_from_bytes
from engine.stored.importers.chat import message_lines


class _CountedText(str):
    """A text that tallies the characters its `count` calls read."""

    read = 0

    def count(self, sub: str, start: int | None = None, end: int | None = None) -> int:  # type: ignore[override]
        first, last, _ = slice(start, end).indices(len(self))
        _CountedText.read += max(0, last - first)
        return super().count(sub, start, end)


def _messages(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": "q"}] + [
        {"role": "assistant" if i % 2 == 0 else "user", "content": f"turn {i}"} for i in range(n - 1)]


def test_the_line_of_each_message_is_found_reading_the_text_once(monkeypatch):
    """Each message's line is counted on from the message before: 2,000 messages read the text
    once (counting from the start for each read it a thousand times, quadratic in its length)."""
    text = json.dumps(_messages(2000), indent=1)  # "[", then four lines a message
    monkeypatch.setattr(_CountedText, "read", 0)
    lines = message_lines(_CountedText(text))
    assert lines == [2 + 4 * i for i in range(2000)]
    assert _CountedText.read <= len(text)


def test_the_notes_of_an_indented_log_name_the_lines_their_messages_start_on():
    body = {"model": "m", "messages": _messages(6)}
    text = "\n\n" + json.dumps(body, indent=2)  # two blank lines, "{", "model", "messages": [, then four lines a message
    (run,) = runs_from_bytes("chat.json", text.encode())
    assert [e.source for e in run.events if e.type == "note" and e.kind == "user"] == ["line 14", "line 22"]
