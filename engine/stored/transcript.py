"""Transcripts: one JSON object a line, the header first.

The writer hands every line to the operating system before a tool runs, before
the policy is asked and when a step returns, and fsyncs after approvals and at
the end, so a killed process loses at most the line being written. The
reader validates every line; a torn last line is accepted with a warning, any
other bad line is reported as `FILE:LINE: reason`, and no bad file raises
anything but `TranscriptError`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from pydantic import ValidationError

from engine.core.events import EVENT_ADAPTER, FORMAT_VERSION, Event, Header, ToolStarted

INTENT_TYPE = "tool_started"
"""Write-ahead lines, not events: see `engine.events.ToolStarted`."""
_FSYNC_TYPES = frozenset({"header", "approval_requested", "approval_decided", "run_ended", "budget_exhausted"})
_WRITE_AHEAD_TYPES = _FSYNC_TYPES | {INTENT_TYPE}


class TranscriptError(Exception):
    """A transcript that cannot be read; the message names the file and line."""


def dump_event(event: Event | Header | ToolStarted) -> str:
    return event.model_dump_json(exclude_defaults=False)


class TranscriptWriter:
    """Appends events to a JSONL file as they happen.

    With a header it starts a new transcript and refuses a file that already
    holds one; without, it continues an existing file (resume).

    The engine hands it each event's line (`write`), serialised once. Lines
    wait in a buffer only while the engine works in memory: a `tool_started`
    line goes out at once with everything before it (before the tool can act on
    the world), approvals and the end are synced, and the engine flushes before
    it asks the policy and when a step returns. Each flush is one `write` to the
    operating system, so a killed process loses at most what it was writing.
    """

    def __init__(self, path: str | Path, header: Header | None = None) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(f"{self.path} is a folder; give a file name (for example {self.path / 'run.jsonl'})")
        if self.path.exists() and not self.path.is_file():
            raise OSError(f"{self.path} is not a regular file (a device, a pipe or a socket); a transcript needs a file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if header is not None and self.path.exists() and self.path.stat().st_size > 0:
            # A new run never writes into another run's file.
            raise FileExistsError(f"{self.path} already holds a transcript; choose another file")
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._pending: list[bytes] = []
        if header is not None:
            self.write("header", dump_event(header).encode())

    def write(self, event_type: str, line: bytes) -> None:
        """Queue one line (without its newline); intent lines, approvals and the end go out at once."""
        if self._fd is None:
            return
        self._pending.append(line)
        self._pending.append(b"\n")
        if event_type in _WRITE_AHEAD_TYPES:
            self.flush()
            if event_type in _FSYNC_TYPES:
                os.fsync(self._fd)

    def flush(self) -> None:
        """Hand the queued lines to the operating system (one write)."""
        if self._fd is None or not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def __call__(self, event: Event | ToolStarted) -> None:
        """The listener form: one event, written and flushed at once."""
        self.write(event.type, dump_event(event).encode())
        self.flush()

    def close(self) -> None:
        if self._fd is not None:
            self.flush()
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Transcript:
    path: Path
    header: Header
    events: list[Event]
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unfinished: ToolStarted | None = None
    """A `tool_started` note with no observation after it: the run stopped while that tool ran."""


def write_transcript(path: str | Path, header: Header, events: Iterable[Event]) -> None:
    with TranscriptWriter(path, header) as writer:
        for event in events:
            writer(event)


def _reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    msg = first.get("msg", "invalid")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {msg}{more}" if where else f"{msg}{more}"


def parse_lines(name: str, lines: list[bytes], *, strict: bool = True) -> Transcript:
    """Read a transcript from raw lines (kept with their line endings)."""
    if not lines or all(not line.strip() for line in lines):
        raise TranscriptError(f"{name}: the file is empty (no header line)")
    warnings: list[str] = []
    errors: list[str] = []
    header: Header | None = None
    events: list[Event] = []
    unfinished: ToolStarted | None = None
    last = len(lines)
    for number, raw in enumerate(lines, 1):
        torn = number == last and not raw.endswith(b"\n")
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problem = f"{name}:{number}: not UTF-8 text (byte {exc.start})"
            if torn:
                warnings.append(f"{problem}; the last line was cut off while being written and is ignored")
                continue
            if strict or header is None:
                raise TranscriptError(problem) from None
            errors.append(problem)
            continue
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            problem = f"{name}:{number}: not JSON ({getattr(exc, 'msg', 'too deeply nested')})"
            if torn:
                warnings.append(f"{name}:{number}: the last line was cut off while being written and is ignored")
                continue
            if strict or header is None:
                raise TranscriptError(problem) from None
            errors.append(problem)
            continue
        if header is None:
            header = _read_header(name, number, data)
            continue
        if isinstance(data, dict) and data.get("type") == INTENT_TYPE:
            try:
                unfinished = ToolStarted.model_validate(data)
            except (ValidationError, RecursionError, ValueError, TypeError) as exc:
                problem = f"{name}:{number}: not a valid tool_started line: {_reason(exc) if isinstance(exc, ValidationError) else exc}"
                if torn:
                    warnings.append(f"{name}:{number}: the last line was cut off while being written and is ignored")
                elif strict:
                    raise TranscriptError(problem) from None
                else:
                    errors.append(problem)
            continue
        try:
            event = EVENT_ADAPTER.validate_python(data)
            events.append(event)
            if unfinished is not None and event.type == "observation" and (event.step, event.index) == (unfinished.step, unfinished.index):
                unfinished = None
        except ValidationError as exc:
            problem = f"{name}:{number}: not a valid event: {_reason(exc)}"
            if torn:
                warnings.append(f"{name}:{number}: the last line was cut off while being written and is ignored")
                continue
            if strict:
                raise TranscriptError(problem) from None
            errors.append(problem)
        except (RecursionError, ValueError, TypeError) as exc:
            problem = f"{name}:{number}: not a valid event: {exc}"
            if strict:
                raise TranscriptError(problem) from None
            errors.append(problem)
    if header is None:
        raise TranscriptError(f"{name}: no header line")
    return Transcript(path=Path(name), header=header, events=events, warnings=warnings, errors=errors, unfinished=unfinished)


def _read_header(name: str, number: int, data: object) -> Header:
    if not isinstance(data, dict) or data.get("type") != "header":
        raise TranscriptError(f"{name}:{number}: expected the header line (an object with \"type\": \"header\")")
    version = data.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise TranscriptError(
            f"{name}:{number}: transcript format version {version} is newer than this agent-tui reads "
            f"(up to {FORMAT_VERSION}); upgrade agent-tui to open it"
        )
    try:
        return Header.model_validate(data)
    except ValidationError as exc:
        raise TranscriptError(f"{name}:{number}: not a valid header: {_reason(exc)}") from None
    except (RecursionError, ValueError, TypeError) as exc:
        raise TranscriptError(f"{name}:{number}: not a valid header: {exc}") from None


def read_bytes(path: Path) -> bytes:
    """A run file's bytes; TranscriptError (naming the file) if it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise TranscriptError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TranscriptError(f"{path}: is a folder, not a transcript") from None
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_transcript(path: str | Path, *, strict: bool = True) -> Transcript:
    """Read and validate a transcript file.

    strict: any bad line other than a torn last one raises TranscriptError.
    Not strict: bad lines are skipped and listed in `errors`.
    """
    p = Path(path)
    data = read_bytes(p)
    transcript = parse_lines(str(p), data.splitlines(keepends=True), strict=strict)
    transcript.path = p
    return transcript
