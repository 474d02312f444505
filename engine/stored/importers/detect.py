"""Which format a file is in, from its content (never its name).

`sniff` decides from the bytes: a zip archive (an Inspect `.eval` log, or a
refusal that says it is a zip), text with ReAct keywords, one JSON document
(a chat log, a request body, a SWE-agent or mini-swe-agent trajectory, an
Inspect log) or JSON lines (agent-tui, Claude Code, Codex, chat messages,
fine-tune data). A file that is none of them is refused with its line, what
was found there and the formats that were tried.
"""

from __future__ import annotations

import json
from itertools import islice
from typing import Any, Callable, Iterator

from engine.stored.importers.build import found, preview
from engine.stored.importers.claude_code import is_claude_code
from engine.stored.importers.codex import is_codex
from engine.stored.importers.formats import TRIED, ZIP_MAGIC, Sniffed, starts_with_header
from engine.stored.importers.gemini_cli import is_gemini_session
from engine.stored.importers.opencode import is_opencode_export
from engine.stored.importers.inspect_log import is_inspect, is_inspect_messages
from engine.core.jsontext import loads, plain_loads
from engine.stored.importers.alfworld import is_alfworld
from engine.stored.importers.react import KEYWORD, decolour, dialect, has_colour
from engine.stored.importers.swe_agent import is_mini, is_swe_agent
from engine.stored.reader import as_utf8
from engine.stored.transcript import TranscriptError

def decode(name: str, data: bytes) -> str:
    """The text of a foreign file: UTF-8 (with or without a byte-order mark), or UTF-16 with one
    (what Windows PowerShell's `>` writes)."""
    data = as_utf8(name, data)  # the reader's decoding (`read_bytes` already did it for a file)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TranscriptError(f"{name}:{line}: not UTF-8 text (byte {exc.start}); {TRIED}") from None


def json_lines(text: str) -> list[str]:
    """The lines of a file of JSON lines: split at each newline only (a line of Windows' ends with
    `\\r`, which JSON reads as a space). Not `str.splitlines`, which also splits at U+2028, U+2029
    and U+0085, which JSON (and so Node's `JSON.stringify`, in a Claude Code session) writes
    unescaped inside a string; a file with no newline at all is split at each carriage return."""
    lines = text.split("\n" if "\n" in text else "\r")
    if not lines[-1]:
        lines.pop()
    return lines


def json_rows(name: str, text: str, *, fast: bool, strict: bool = True, lines: list[str] | None = None,
              start: int = 1) -> Iterator[tuple[int, Any]]:
    """Every non-blank line parsed as JSON, with its number, one at a time (a reader that maps each
    as it comes keeps no parsed line it is done with); `lines`: `json_lines(text)`, if made already.
    `fast`: whether the text is `plain`, as its `PlainCheck` knows or hopes (each line then read by
    `plain_loads`, else by `loads`). `start`: the number of the first line (`text` the end of a
    file, from that line)."""
    lines = json_lines(text) if lines is None else lines
    read = plain_loads if fast else loads
    last = start + len(lines) - 1
    torn_allowed = not strict and not text.endswith("\n")
    for number, line in enumerate(lines, start):
        if not line or line.isspace():
            continue
        try:
            value = read(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            if torn_allowed and number == last:
                continue  # a torn last line
            raise TranscriptError(f"{name}:{number}: not JSON ({getattr(exc, 'msg', 'too deeply nested')})") from None
        yield number, value


def _is_header(data: Any) -> bool:
    return isinstance(data, dict) and data.get("type") == "header"


def _is_chat(data: Any) -> bool:
    """A chat log (an object with a list of messages) or one message (an object with a role)."""
    return isinstance(data, dict) and (isinstance(data.get("messages"), list) or "role" in data)


def _is_chat_request(data: dict[str, Any]) -> bool:
    """A request body whose messages are the chat."""
    return isinstance(data.get("request"), dict) and isinstance(data["request"].get("messages"), list)


def _is_chat_messages(data: list[Any]) -> bool:
    """A list of chat messages: its first item has a role."""
    return bool(data) and isinstance(data[0], dict) and "role" in data[0]


Formats = tuple[tuple[Callable[[Any], bool], str], ...]
"""Formats in the order they are tried: a test of the JSON data, and the format it says."""

_OBJECT_FORMATS: Formats = (
    (_is_header, "jsonl"), (is_inspect, "inspect"), (is_gemini_session, "gemini-cli"), (is_opencode_export, "opencode"),
    (is_mini, "mini-swe-agent"), (is_swe_agent, "swe-agent"), (_is_chat, "chat"), (_is_chat_request, "chat"),
    (is_codex, "codex"), (is_claude_code, "claude-code"),
)
"""A JSON document that is an object."""
_LIST_FORMATS: Formats = (
    (is_mini, "mini-swe-agent"), (is_inspect_messages, "inspect"), (_is_chat_messages, "chat"),
)
"""A JSON document that is a list."""
_ROW_FORMATS: Formats = (
    (_is_header, "jsonl"), (is_gemini_session, "gemini-cli"), (is_codex, "codex"), (is_claude_code, "claude-code"),
    (_is_chat, "chat"),
)
"""One line of JSON lines."""


def _first_format(formats: Formats, data: Any) -> str | None:
    return next((fmt for test, fmt in formats if test(data)), None)


def document_format(data: Any) -> str | None:
    """The format of one JSON document, or None."""
    if isinstance(data, dict):
        return _first_format(_OBJECT_FORMATS, data)
    if isinstance(data, list):
        return _first_format(_LIST_FORMATS, data)
    return None


def row_format(obj: Any) -> str | None:
    """The format a JSON line belongs to, or None."""
    return _first_format(_ROW_FORMATS, obj)


def sniff(name: str, data: bytes) -> Sniffed:
    if data.startswith(ZIP_MAGIC):
        return Sniffed("inspect")
    if starts_with_header(data):
        return Sniffed("jsonl")  # the reader checks every line; nothing here decodes the whole file
    text = decode(name, data)
    if has_colour(text):  # coloured console output (LangChain's verbose=True)
        text = decolour(text)
    lines = json_lines(text)
    first_number, first = next(((n, line) for n, line in enumerate(lines, 1) if line.strip()), (0, ""))
    if not first:
        raise TranscriptError(f"{name}: the file is empty")
    head = first.lstrip()
    if KEYWORD.match(first):
        return Sniffed(dialect(text), text)
    if head[0] not in "[{":
        keywords = sum(1 for line in lines[:2000] if KEYWORD.match(line))
        if keywords >= 2:
            return Sniffed(dialect(text), text)
        if is_alfworld(lines):
            return Sniffed("alfworld", text)
        raise TranscriptError(f"{name}:{first_number}: found {preview(first)!r}; {TRIED}")
    if head.startswith('{"type": "header"') or head.startswith('{"type":"header"'):
        return Sniffed("jsonl", text)
    try:
        document = loads(text)
    except RecursionError:
        raise TranscriptError(f"{name}:{first_number}: not JSON (too deeply nested)") from None
    except json.JSONDecodeError as exc:
        # its words, not the exception: that holds this frame through its traceback (a cycle
        # that would keep the file's runs alive until the collector's next pass)
        not_json = f"{name}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})"
    else:
        fmt = document_format(document)
        if fmt is None:
            raise TranscriptError(f"{name}:{first_number}: found {found(document)}; {TRIED}")
        return Sniffed(fmt, text, document=document)
    if not head.startswith("{") or not _second_line(lines, first_number) or not first.rstrip().endswith("}"):
        raise TranscriptError(not_json)
    return _lines_format(name, text, lines)


def _second_line(lines: list[str], first_number: int) -> bool:
    """Whether a line that is not blank follows the first one (line `first_number`)."""
    return any(not line.isspace() for line in islice(lines, first_number, None) if line)


def _lines_format(name: str, text: str, lines: list[str]) -> Sniffed:
    """JSON lines: the format of the first line that says which (`lines`: the text's)."""
    first_obj: tuple[int, Any] | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise TranscriptError(f"{name}:{number}: not JSON ({getattr(exc, 'msg', 'too deeply nested')})") from None
        fmt = row_format(obj)
        if fmt is not None:
            return Sniffed(fmt, text, lines=lines)
        if first_obj is None:
            first_obj = (number, obj)
        if number > 200:
            break
    number, obj = first_obj or (1, None)
    raise TranscriptError(f"{name}:{number}: found {found(obj)}; {TRIED}")
