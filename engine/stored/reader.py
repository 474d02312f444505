"""The one reader of the transcript format: a line index and one event parser.

A transcript is a header line, then one JSON object a line: events, and the
writer's `tool_started` notes (not events; see `engine.core.events.ToolStarted`).
`LineIndex.scan` finds the header and the byte offsets of every event line
without parsing the events; it recognises the notes by their layout, keeps
where they stand, and drops a last line cut off while being written (a
warning says so). `parse_event` validates one line straight from its bytes
and, when that fails, says why as `FILE:LINE: reason`.

A transcript is untrusted input, refused with `FILE:LINE` where it could hurt:
`read_bytes` stops at the first line longer than `MAX_LINE_BYTES` (32 MiB)
without reading the rest; a line holding a lone surrogate (a `\\ud800` escape
without its pair, which UTF-8 cannot hold), a number over `MAX_DIGITS` digits
or JSON nested deeper than Python parses is not an event; and `StepCheck`
keeps steps from jumping (a line claiming step 10**12 after step 1). The fast
path (pydantic's JSON parser) already refuses all three kinds of line, so the
checks cost nothing for a good one.

A file may hold several runs one after the other (transcripts concatenated
with `cat`): `run_spans` finds where each begins, at a header line as the
writer lays it out, and each run is scanned on its own with its lines
numbered as in the file.

The in-memory transcript (`engine.stored.transcript.read_transcript`), the
replay timeline (`engine.stored.replay.Timeline.open`) and importers read
agent-tui files through this module and nothing else. A listing of many runs
(`engine.stored.catalog`) reads only each file's ends: `read_ends` gives the
header line and the last complete lines, and `Ends.runs` indexes those lines
with `LineIndex.scan`, one index per run they hold.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import stat
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pydantic import TypeAdapter, ValidationError

from engine.core.eventlog import Indexed
from engine.core.events import EVENT_ADAPTER, FORMAT_VERSION, Event, Header, ToolStarted
from engine.core.smallfile import why_unreadable
from engine.stored.packed import Packed

INTENT_TYPE = "tool_started"
"""Write-ahead lines, not events: see `engine.core.events.ToolStarted`."""
_INTENT_AS_WRITTEN = re.compile(rb'\{"at":[-+0-9.eE]+,"type":"tool_started"')
_HEADER_EXPECTED = 'expected the header line (an object with "type": "header")'
MAX_LINE_BYTES = 32 * 1024 * 1024
"""The longest line a transcript may hold (32 MiB; a model's reply is capped at 16 MB)."""
MAX_STREAM_BYTES = 1 << 30
"""The most read from a pipe or socket (`show <(zcat run.jsonl.gz)`), which has no size of its own."""
MAX_DIGITS = 4300
"""The longest number a line may hold, in digits (Python's own limit for turning one into text)."""
_CHUNK = 1 << 20
TAIL_BYTES = 64 * 1024
"""What `read_ends` reads first from a file's end: the last events of a run."""
ENDS_CAP = 4 * 1024 * 1024
"""The longest header line, and the most read from the end looking for one whole line, in `read_ends`."""
_HEADER_LAYOUTS = (b'{"type":"header"', b'{"type": "header"')
"""How a header line starts as agent-tui (or `json.dumps`) writes it: where a run begins in a file of several."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class TranscriptError(Exception):
    """A transcript that cannot be read; the message names the file and line."""


def reason(exc: ValidationError) -> str:
    """The first validation problem in one line, with how many more there are."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    msg = first.get("msg", "invalid")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {msg}{more}" if where else f"{msg}{more}"


def _json(raw: bytes, where: str) -> object:
    """The line as JSON; TranscriptError saying why it is not (or why it cannot be an event's)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"{where}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise TranscriptError(f"{where}: not JSON (too deeply nested)") from None
    except ValueError:  # Python's limit on the digits of a number
        raise TranscriptError(f"{where}: a number longer than {MAX_DIGITS:,} digits") from None
    if b"\\u" in raw and _has_lone_surrogate(data):
        raise TranscriptError(
            f"{where}: text with a lone surrogate (a \\uD800-\\uDFFF escape without its pair), which UTF-8 cannot hold"
        )
    return data


def _has_lone_surrogate(data: object) -> bool:
    """Any string (key or value) in parsed JSON holding a lone surrogate; walked without recursion."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _validate(raw: bytes | str, where: str, model: TypeAdapter[Any], what: str) -> Any:
    """`raw` validated straight from its bytes; when that fails, TranscriptError `where: reason`."""
    try:
        return model.validate_json(raw)
    except (ValidationError, RecursionError, ValueError):
        pass
    return _from_data(_json(raw.encode("utf-8") if isinstance(raw, str) else raw, where), where, model, what)


def _from_data(data: object, where: str, model: TypeAdapter[Any], what: str) -> Any:
    """Parsed JSON validated as `model`; TranscriptError `where: not a valid WHAT: reason`."""
    try:
        return model.validate_python(data)
    except ValidationError as exc:
        raise TranscriptError(f"{where}: not a valid {what}: {reason(exc)}") from None
    except (RecursionError, ValueError, TypeError) as exc:
        raise TranscriptError(f"{where}: not a valid {what}: {exc}") from None


_validate_event_json = EVENT_ADAPTER.validator.validate_json
_NOTE_ADAPTER: TypeAdapter[ToolStarted] = TypeAdapter(ToolStarted)
_HEADER_ADAPTER: TypeAdapter[Header] = TypeAdapter(Header)
_validate_header_json = _HEADER_ADAPTER.validator.validate_json


def parse_event(raw: bytes | str, where: str, line: int | None = None) -> Event:
    """One event line validated from its bytes; TranscriptError `where: reason` if it is not one
    (`where:line: reason` given the line's number: written out only then)."""
    try:
        return _validate_event_json(raw)  # the usual case, without the adapter's layers
    except (ValidationError, RecursionError, ValueError):
        pass
    return _validate(raw, where if line is None else f"{where}:{line}", EVENT_ADAPTER, "event")


def parse_note(raw: bytes, where: str) -> ToolStarted:
    """A `tool_started` line; TranscriptError if it is not a valid one."""
    return _validate(raw, where, _NOTE_ADAPTER, "tool_started line")


def parse_header(raw: bytes, where: str) -> Header:
    """The header line; TranscriptError for anything else, or a format newer than this reader."""
    try:
        header = _validate_header_json(raw)  # the usual case; pydantic's parser refuses what `_json` does
    except (ValidationError, RecursionError, ValueError):
        pass
    else:
        if header.format_version <= FORMAT_VERSION:
            return header
    try:
        data = _json(raw, where)
    except TranscriptError as exc:
        raise TranscriptError(f"{exc}; {_HEADER_EXPECTED}") from None
    if not isinstance(data, dict) or data.get("type") != "header":
        raise TranscriptError(f"{where}: {_HEADER_EXPECTED}")
    version = data.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise TranscriptError(
            f"{where}: transcript format version {version} is newer than this agent-tui reads "
            f"(up to {FORMAT_VERSION}); upgrade agent-tui to open it"
        )
    return _from_data(data, where, _HEADER_ADAPTER, "header")


def is_note(raw: bytes) -> bool:
    """A `tool_started` line, recognised by the writer's layout without parsing it."""
    if _INTENT_AS_WRITTEN.match(raw):
        return True
    if b'"tool_started"' not in raw:
        return False
    try:
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and parsed.get("type") == INTENT_TYPE


def read_bytes(path: Path, line_cap: int = MAX_LINE_BYTES) -> bytes:
    """A run file's bytes as UTF-8, read in chunks and refused at the first line longer than
    `line_cap` (TranscriptError naming FILE:LINE) without reading the rest; any read
    failure is a TranscriptError naming the file.

    A file that starts with a byte-order mark is UTF-16 (little or big endian: what Windows
    PowerShell's `>` writes), decoded chunk by chunk, or UTF-8, whose mark is dropped."""
    size = max(1, min(_CHUNK, line_cap))  # a whole line inside one chunk is then never over the cap
    chunks: list[bytes] = []
    carried, total = 0, 0  # the length so far of the line being read, and all bytes read
    try:
        with open(path, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                raise TranscriptError(f"{path}: is a device, not a file")
            stream_cap = None if stat.S_ISREG(mode) else MAX_STREAM_BYTES
            for chunk in _utf8_chunks(path, f, size):
                total += len(chunk)
                if stream_cap is not None and total > stream_cap:
                    raise TranscriptError(f"{path}: a stream longer than {stream_cap >> 30} GiB; not read further")
                first = chunk.find(b"\n")
                if first < 0:
                    carried += len(chunk)
                else:
                    if carried + first > line_cap:
                        raise TranscriptError(_too_long(path, _line_after(chunks), line_cap))
                    carried = len(chunk) - chunk.rfind(b"\n") - 1
                chunks.append(chunk)
                if carried > line_cap:
                    raise TranscriptError(_too_long(path, _line_after(chunks), line_cap))
        return b"".join(chunks)
    except OSError as exc:
        raise TranscriptError(why_unreadable(path, exc, "transcript", missing="file")) from None


_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def as_utf8(name: str, data: bytes) -> bytes:
    """Bytes already in memory as `read_bytes` gives a file's: UTF-16 decoded, a mark dropped."""
    if data.startswith(_UTF8_BOM):
        return data[len(_UTF8_BOM) :]
    if not data.startswith(_UTF16_BOMS):
        return data
    return b"".join(_from_utf16(Path(name), io.BytesIO(data[_CHUNK:]), data[:_CHUNK], _CHUNK))


def _utf8_chunks(path: Path, f: Any, size: int) -> Iterator[bytes]:
    """The file's chunks as UTF-8: as read, without a UTF-8 byte-order mark, or decoded from
    UTF-16 (a chunk at a time: at most `size` bytes of the file held beyond what is kept)."""
    chunk = f.read(size)
    if chunk.startswith(_UTF8_BOM):
        chunk = chunk[len(_UTF8_BOM) :]
    elif chunk.startswith(_UTF16_BOMS):
        yield from _from_utf16(path, f, chunk, size)
        return
    while chunk:
        yield chunk
        chunk = f.read(size)


def _from_utf16(path: Path, f: Any, chunk: bytes, size: int) -> Iterator[bytes]:
    decoder = codecs.getincrementaldecoder("utf-16")("strict")  # the mark says which endian, and is dropped
    offset = 0
    try:
        while chunk:
            text = decoder.decode(chunk)
            offset += len(chunk)
            if text:
                yield text.encode("utf-8")
            chunk = f.read(size)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: UTF-16 text that cannot be decoded (byte {offset + max(exc.start, 0)})") from None


def _line_after(chunks: list[bytes]) -> int:
    """The number of the line being read after `chunks` (counted only for a message)."""
    return 1 + sum(chunk.count(b"\n") for chunk in chunks)


def _too_long(path: Path, line: int, cap: int) -> str:
    limit = f"{cap // (1024 * 1024)} MiB" if cap >= 1024 * 1024 else f"{cap} bytes"
    return f"{path}:{line}: a line longer than {limit} (the limit); the file is not read further"


class StepCheck:
    """Steps count decisions one by one, checked as events are read in order: a
    decision is the step after the last one, and no other line names a step beyond
    the next (a file claiming step 10**12 would otherwise make readers count to it)."""

    def __init__(self) -> None:
        self.step = 0

    def problem(self, event: Event) -> str | None:
        """Why `event`, read next, is out of order ("... steps cannot jump"); None when it is not."""
        step = getattr(event, "step", None)
        if step is None:
            return None
        if event.type == "decision":
            if step != self.step + 1:
                return f"a decision for step {step} follows step {self.step}; steps cannot jump"
            self.step = step
        elif not 0 <= step <= self.step + 1:
            return f"a {event.type} line names step {step} after step {self.step}; steps cannot jump"
        return None


def run_spans(data: bytes) -> list[tuple[int, int]]:
    """The byte ranges `[start, end)` of the runs in `data`, one per header line after the
    first (a file of one run: one range, the whole file); found without reading the lines."""
    starts: list[int] = []
    for layout in _HEADER_LAYOUTS:
        pos = data.find(layout)
        while pos >= 0:
            if pos == 0 or data[pos - 1] == 0x0A:  # 0x0A: "\n"; a header starts a line
                starts.append(pos)
            pos = data.find(layout, pos + 1)
    cuts = [0, *sorted(starts)[1:], len(data)]
    return list(zip(cuts, cuts[1:]))


def run_bytes(data: bytes, span: tuple[int, int]) -> tuple[bytes, int | None]:
    """The bytes of the run at `span` and the number of lines before it in the file
    (None: the run is the whole file)."""
    start, end = span
    if start == 0 and end == len(data):
        return data, None
    return data[start:end], data.count(b"\n", 0, start)


@dataclass(slots=True)
class Note:
    """Where a `tool_started` line stands: after `events_before` event lines, at file line `number`."""

    events_before: int
    number: int
    start: int
    end: int


@dataclass
class LineIndex:
    """A transcript's header and the offsets of its event lines, found without parsing the events."""

    name: str
    data: Any
    """The file's bytes (`bytes`), or `engine.stored.packed.Packed` once packed (`pack`): read by slices."""
    header: Header
    starts: array = field(default_factory=lambda: array("q"))
    ends: array = field(default_factory=lambda: array("q"))
    numbers: array = field(default_factory=lambda: array("q"))
    notes: list[Note] = field(default_factory=list)
    """The last two `tool_started` lines: only the last is read (whether the run stopped
    while that call ran); the one before stands in when a torn last line is dropped."""
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def scan(cls, name: str, data: bytes, *, lines_before: int | None = None) -> LineIndex:
        """Index `data`; TranscriptError for a file with no readable header.

        `lines_before`: the lines of the file before `data` (a later run of several), so
        that messages name the file's own line numbers."""
        starts, ends, numbers = array("q"), array("q"), array("q")
        notes: list[Note] = []
        header: Header | None = None
        pos, number, size = 0, lines_before or 0, len(data)
        find, note_as_written = data.find, _INTENT_AS_WRITTEN.match
        while pos < size:
            newline = find(b"\n", pos)
            end = size if newline < 0 else newline
            number += 1
            line_end = end - 1 if end > pos and data[end - 1] == 0x0D else end  # 0x0D: "\r"
            if line_end > pos and (data[pos] == 0x7B or data[pos:line_end].strip()):  # 0x7B: "{", the usual start
                if header is None:
                    header = parse_header(data[pos:line_end], f"{name}:{number}")
                elif find(b'"tool_started"', pos, line_end) >= 0 and (  # a note as written names it too
                    note_as_written(data, pos, line_end) or is_note(data[pos:line_end])
                ):
                    notes.append(Note(len(starts), number, pos, line_end))
                    if len(notes) > 2:
                        del notes[0]  # a replay of 50,000 calls would hold 5 MB of them
                else:
                    starts.append(pos)
                    ends.append(line_end)
                    numbers.append(number)
            pos = end + 1
        if header is None:
            if not data.strip():
                raise TranscriptError(f"{name}: the file is empty (no header line)")
            raise TranscriptError(f"{name}: no header line")
        index = cls(name, data, header, starts, ends, numbers, notes)
        if not data.endswith(b"\n"):
            index._drop_torn_tail()
        return index

    def _drop_torn_tail(self) -> None:
        """The last line, cut off while being written, is ignored (with a warning) when it does not read."""
        note_last = bool(self.notes) and (not self.starts or self.notes[-1].number > self.numbers[-1])
        if note_last:
            note = self.notes[-1]
            try:
                parse_note(self.data[note.start : note.end], "")
            except TranscriptError:
                self.notes.pop()
                self.warnings.append(f"{self.name}:{note.number}: the last line was cut off while being written and is ignored")
        elif self.starts:
            try:
                parse_event(self.raw(len(self) - 1), "")
            except TranscriptError:
                self.warnings.append(f"{self.name}:{self.numbers[-1]}: the last line was cut off while being written and is ignored")
                self.truncate(len(self) - 1)

    def __len__(self) -> int:
        return len(self.starts)

    def raw(self, index: int) -> bytes:
        """Event line `index` (0-based), as written."""
        return self.data[self.starts[index] : self.ends[index]]

    def line_number(self, index: int) -> int:
        return self.numbers[index]

    def where(self, index: int) -> str:
        return f"{self.name}:{self.numbers[index]}"

    def parse(self, index: int) -> Event:
        """Event `index` validated; TranscriptError names FILE:LINE and the reason."""
        return parse_event(self.data[self.starts[index] : self.ends[index]], self.name, self.numbers[index])

    def truncate(self, length: int) -> None:
        """Forget the event lines from `length` on (a bad line ends what can be read)."""
        del self.starts[length:], self.ends[length:], self.numbers[length:]

    def pack(self) -> None:
        """The file's bytes kept compressed from now on when large (`Packed`; once packed, kept so)."""
        self.data = Packed.of(self.data)

    def last_note(self) -> ToolStarted | None:
        """The last `tool_started` note, validated (only that one is); TranscriptError if it is bad."""
        if not self.notes:
            return None
        note = self.notes[-1]
        return parse_note(self.data[note.start : note.end], f"{self.name}:{note.number}")


class EventLines(Indexed[bytes]):
    """The event lines of a `LineIndex` as a sequence of `bytes`, each sliced from the file's
    bytes when read: no object a line is kept (100,000 of them take 33 MB, and pin the
    memory around them once the events parsed with them are freed)."""

    def __init__(self, index: LineIndex) -> None:
        self.index = index

    def __len__(self) -> int:
        return len(self.index)

    def _get(self, index: int) -> bytes:
        return self.index.raw(index)

    def packed(self) -> EventLines:
        """The same lines, the file's bytes kept compressed from now on when large (`Packed`):
        for lines kept as long as a run goes on."""
        self.index.pack()
        return self


@dataclass
class Ends:
    """A transcript's first line and its last complete lines, read without the middle.

    `whole`: the two reads met, so `tail` is every line after the header (the file
    read whole; a later run's header in it is a run of its own, see `run_spans`)."""

    name: str
    size: int
    head: bytes
    """The first line (the header), without its newline."""
    tail: bytes
    """Whole lines from the end: everything after the header when `whole`, else
    the lines after the first newline of the last bytes read."""
    whole: bool

    def header(self) -> Header:
        return parse_header(self.head, f"{self.name}:1")

    def runs(self) -> list[LineIndex]:
        """Each run of the bytes read, indexed by `LineIndex.scan`, split where `run_spans`
        splits a file: the first under the file's header (when not `whole`, with only the
        last lines of its events), then one per header line in the tail. A bad header line
        in the tail raises TranscriptError."""
        data = self.head + b"\n" + self.tail
        spans = run_spans(data)
        if len(spans) == 1:
            return [LineIndex.scan(self.name, data)]
        return [
            LineIndex.scan(self.name, data[start:end], lines_before=data.count(b"\n", 0, start) if self.whole else None)
            for start, end in spans
        ]


def read_ends(path: Path, tail_bytes: int = TAIL_BYTES, cap: int = ENDS_CAP) -> Ends:
    """The header line of `path` and its last `tail_bytes` (more, up to `cap`, when the last
    line is longer), read with two reads and no pass over the middle. TranscriptError
    names the file and why: not a file, unreadable, empty, a first line over `cap`."""
    try:
        mode = os.stat(path).st_mode  # before opening: opening a pipe would wait for a writer
        if not stat.S_ISREG(mode):
            what = "a folder" if stat.S_ISDIR(mode) else "a device, pipe or socket"
            raise TranscriptError(f"{path}: is {what}, not a file")
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            first = f.read(min(size, tail_bytes) if size else tail_bytes)
            newline = first.find(b"\n")
            while newline < 0 and len(first) < min(size, cap + 1):  # a header longer than one read
                more = f.read(min(cap + 1, size) - len(first))
                if not more:
                    break
                first += more
                newline = first.find(b"\n")
            if not first.strip():
                raise TranscriptError(f"{path}: the file is empty (no header line)")
            head_end = newline if newline >= 0 else len(first)
            if head_end > cap:
                raise TranscriptError(f"{path}:1: a header line longer than {cap >> 20} MiB; not a transcript header")
            head = first[:head_end].rstrip(b"\r")
            after = head_end + 1
            if size - tail_bytes <= len(first):
                rest = f.read() if size > len(first) else b""
                return Ends(str(path), size, head, (first + rest)[after:], True)
            back = tail_bytes
            while True:
                f.seek(size - back)
                chunk = f.read(back)
                cut = chunk.find(b"\n")
                if 0 <= cut < len(chunk) - 1 or back >= cap or size - back <= after:
                    break
                back = min(back * 4, cap, size - after)
            if size - back <= after:  # the reads met after all
                return Ends(str(path), size, head, chunk[after - (size - back) :], True)
            tail = chunk[cut + 1 :] if 0 <= cut < len(chunk) - 1 else b""
            return Ends(str(path), size, head, tail, False)
    except OSError as exc:
        raise TranscriptError(why_unreadable(path, exc, "transcript", missing="file")) from None
