"""Transcripts: one JSON object a line, the header first.

The writer hands every line to the operating system before a tool runs, before
the policy is asked and when a step returns, and fsyncs after approvals and at
the end (a new file's first fsync also syncs its folder: the file's name in it
must last too), so a killed process loses at most the line being written. The
whole-file reader here is built on `engine.stored.reader` (the one reader of
the format): every event line is validated; a torn last line is accepted with
a warning, any other bad line is reported as `FILE:LINE: reason`, and no bad
file raises anything but `TranscriptError`.
"""

from __future__ import annotations

import errno
import os
import time
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from engine.core.collector import collector_paused
from engine.core.events import Event, Header, ToolStarted
from engine.core.sink import event_line
from engine.stored.lock import a_folder, identity, lock, move_to_recovery, not_empty, open_new, still_named
from engine.stored.reader import INTENT_TYPE, EventLines, LineIndex, StepCheck, TranscriptError, read_bytes
from engine.stored.source import FileEvents

__all__ = [
    "INTENT_TYPE",
    "not_empty",
    "Transcript",
    "TranscriptError",
    "TranscriptWriter",
    "dump_event",
    "parse_lines",
    "read_bytes",
    "read_from_bytes",
    "read_transcript",
    "write_transcript",
]
_FSYNC_TYPES = frozenset({"header", "approval_requested", "approval_decided", "run_ended", "budget_exhausted"})
_APPROVAL_TYPES = frozenset({"approval_requested", "approval_decided"})
_WRITE_AHEAD_TYPES = _FSYNC_TYPES | {INTENT_TYPE}
NAME_CHECK_SECONDS = 0.2
"""How often a flush checks that the transcript's path still names the open file."""


def dump_event(event: Event | Header | ToolStarted) -> str:
    """The event's JSON line as text (`engine.core.sink.event_line`)."""
    return event_line(event).decode()


_BEFORE_TOOLS = frozenset(list(Header.model_fields)[: list(Header.model_fields).index("tools")])
_AFTER_TOOLS = frozenset(list(Header.model_fields)[list(Header.model_fields).index("tools") + 1 :])
_kept_tools: tuple[list[object], bytes] | None = None
"""The tool records of the header written last and their JSON: the gateway gives an agent's
same (frozen) records to each new run, whose header line then takes them as they are."""


def _header_line(header: Header) -> bytes:
    """The header's JSON line, a text UTF-8 cannot hold (a lone surrogate in a task an agent
    sent) cleaned as every event's is (`engine.core.guards.serialised`). Its tools' JSON is the
    header before's when they are the same records (the rest is serialised around it: the same bytes)."""
    global _kept_tools
    from engine.core.guards import serialised  # the engine's guards: not on the path that only reads

    tools, kept = header.tools, _kept_tools
    serializer = Header.__pydantic_serializer__
    if tools and kept is not None and len(kept[0]) == len(tools) and all(a is b for a, b in zip(kept[0], tools)):
        try:
            before, after = serializer.to_json(header, include=_BEFORE_TOOLS), serializer.to_json(header, include=_AFTER_TOOLS)
        except ValueError:
            return serialised(header)[1]
        return before[:-1] + b',"tools":' + kept[1] + b"," + after[1:]
    cleaned, line = serialised(header)
    if tools and cleaned is header:
        before, after = serializer.to_json(header, include=_BEFORE_TOOLS), serializer.to_json(header, include=_AFTER_TOOLS)
        start, end = len(before) - 1 + len(b',"tools":'), len(line) - len(after)
        if line.startswith(before[:-1] + b',"tools":') and line.endswith(b"," + after[1:]) and start < end:
            _kept_tools = (list(tools), line[start:end])
    return line


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

    One writer per file: it holds an exclusive lock (`engine.stored.lock`) until
    it closes, and a second writer gets `TranscriptBusy` naming the holder. A
    write that fails raises (the engine halts: fail closed). When the path no
    longer names the open file (deleted or replaced during the run), what was
    written is copied to a recovery file beside it, `notify` is told its path,
    and the run goes on there.
    """

    def __init__(
        self,
        path: str | Path,
        header: Header | None = None,
        *,
        notify: Callable[[str], None] | None = None,
        sync_approvals: bool = True,
        sync_header: bool = True,
    ) -> None:
        self.path = Path(path)
        self._synced = (_FSYNC_TYPES if sync_approvals else _FSYNC_TYPES - _APPROVAL_TYPES) - (set() if sync_header else {"header"})
        """`sync_approvals` False where no operator answers (`--approve all|none`): an automatic
        answer is given again on a resume, so its lines go out at once (before the call) unsynced.
        `sync_header` False: the header goes out at once and reaches the disk with the first
        synced line (the same file's fsync), where a new run must not wait for a disk first."""
        self.notify: Callable[[str], None] = notify or (lambda _message: None)
        self.recovered_from: Path | None = None
        if self.path.is_dir():
            raise IsADirectoryError(a_folder(self.path))
        if self.path.exists() and not self.path.is_file():
            raise OSError(f"{self.path} is not a regular file (a device, a pipe or a socket); a transcript needs a file")
        if header is not None:  # a new run never writes into another file, nor through a link (its folder made)
            fd = open_new(self.path, append=True)
        else:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)  # read too: a recovery copies it
        try:
            if header is None:
                lock(fd, self.path)
            self._ident = identity(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd
        self._pending: list[bytes] = []
        self._unsynced = False
        """Lines were handed to the operating system since the last fsync."""
        self._folder_synced = header is None
        """The folder's entry for the file reached the disk (a file continued has had it)."""
        self._name_checked_at = time.monotonic()
        self._only_header = header is not None
        if header is not None:
            self.write("header", _header_line(header))

    def rewrite_header(self, header: Header) -> None:
        """Replace the header while it is the only line (the operator wrote the task after the
        run opened); ValueError once an event follows it."""
        if not self._only_header or self._fd is None:
            raise ValueError("the header can only change before the first event")
        self._pending.clear()
        os.ftruncate(self._fd, 0)
        self.write("header", _header_line(header))
        self.flush()
        self._sync()

    def write(self, event_type: str, line: bytes) -> None:
        """Queue one line (without its newline); intent lines, approvals and the end go out at once."""
        if self._fd is None:
            return
        if event_type != "header":
            self._only_header = False
        self._pending.append(line)
        self._pending.append(b"\n")
        if event_type in _WRITE_AHEAD_TYPES:
            synced = event_type in self._synced
            self.flush(check_name=synced)
            if synced:
                self._sync()

    def write_lines(self, block: bytes) -> None:
        """Hand over lines serialised elsewhere (each ended), with what is queued: a run written
        at once (`write_transcript`), none of which has to go out before the next."""
        if self._fd is None or not block:
            return
        self._only_header = False
        self._pending.append(block)
        self.flush()

    def copy_lines(self, fd: int, size: int) -> None:
        """Hand over the first `size` bytes of the file `fd` (lines serialised elsewhere, each
        ended) after what is queued, a MB at a time (a file opened to append takes neither
        `sendfile` nor `copy_file_range`). OSError when the file holds fewer."""
        if self._fd is None:
            return
        self.flush()
        self._only_header = False
        self._unsynced = True
        done = 0
        while done < size:
            chunk = os.pread(fd, min(size - done, 1 << 20), done)
            if not chunk:
                raise OSError(errno.EIO, f"the lines to copy end after {done} of {size} bytes")
            view = memoryview(chunk)
            while view:
                view = view[os.write(self._fd, view):]
            done += len(chunk)

    def sync(self) -> None:
        """Hand over what is queued and sync it to the disk, raising what fails (`close` does not:
        it ends a run that already stopped)."""
        if self._fd is None:
            return
        self.flush(check_name=True)
        if self._unsynced:
            self._sync()

    def flush(self, check_name: bool = False) -> None:
        """Hand the queued lines to the operating system (one write).

        Whether the path still names the open file is checked (a `stat`) at most
        every `NAME_CHECK_SECONDS`, and always with a synced line and at close:
        lines written in between to a file that was deleted or replaced are
        copied to the recovery file with everything else it holds, so none is lost.
        """
        if self._fd is None or not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        if check_name or time.monotonic() - self._name_checked_at >= NAME_CHECK_SECONDS:
            self._check_name()
        view = memoryview(data)
        self._unsynced = True
        while view:
            view = view[os.write(self._fd, view) :]

    def _sync(self) -> None:
        assert self._fd is not None
        os.fsync(self._fd)
        self._unsynced = False
        if not self._folder_synced:  # a new file's name is durable only once its folder is synced
            _sync_folder(self.path.parent)
            self._folder_synced = True

    def _check_name(self) -> None:
        """Go on in a recovery file if the path no longer names the open file."""
        self._name_checked_at = time.monotonic()
        if not still_named(self.path, self._ident):
            self._recover()

    def _recover(self) -> None:
        """The path no longer names the open file: go on in a recovery file beside it."""
        assert self._fd is not None
        old = self.path
        self._fd, self.path = move_to_recovery(old, self._fd)
        self._unsynced, self._folder_synced = True, False  # a new file: synced at the next synced line or at close
        self._ident = identity(self._fd)
        self.recovered_from = old
        self.notify(f"{old}: the transcript was deleted or replaced during the run; the run goes on in {self.path}")

    def __call__(self, event: Event | ToolStarted) -> None:
        """The listener form: one event, written and flushed at once."""
        self.write(event.type, event_line(event))
        self.flush()

    def close(self) -> None:
        """Write what is queued, sync and close (letting go of the lock); never raises:
        a write that fails here was the run's last, and the run already stopped."""
        if self._fd is None:
            return
        try:
            self.flush()
            self._check_name()  # also when nothing was queued: lines written since the last check
            if self._unsynced:  # (a run that ended had its end synced: nothing to sync again)
                self._sync()
        except OSError:
            pass
        finally:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sync_folder(folder: Path) -> None:
    """fsync `folder` where the system can (not on Windows; a file system that cannot sync a
    folder, EINVAL, keeps its entries as it does)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)

class EventsAsRead(FileEvents):
    """A transcript's events read `lazy` (`read_from_bytes`): parsed from their lines when
    read, never all held at once. Iterating reads them in order, each parsed once and
    checked as the whole read checks it (TranscriptError naming FILE:LINE at the first line
    that is not an event or does not follow); only the last `cache.size` are kept."""

    def __iter__(self) -> Iterator[Event]:
        index, steps = self.index, StepCheck()
        kept_from = len(index) - self.cache.size
        for i in range(len(index)):
            event = self._get(i) if i >= kept_from else index.parse(i)
            if (problem := steps.problem(event)) is not None:
                raise TranscriptError(f"{index.where(i)}: {problem}")
            yield event


@dataclass
class Transcript:
    path: Path
    header: Header
    events: Sequence[Event]
    """The events, a list; read `lazy`, an `EventsAsRead`, each parsed when read."""
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unfinished: ToolStarted | None = None
    """A `tool_started` note with no observation after it: the run stopped while that tool ran."""
    run_count: int = 1
    """How many runs the file holds (transcripts joined with `cat`, an eval log's samples)."""
    lines: Sequence[int] = ()
    """The file line of each event (1-based, as an editor numbers them; `tool_started` lines
    and a later run's earlier runs counted), when read from a file."""
    whole_size: int | None = None
    """The size of the file read, when it ended at a line boundary (None otherwise, or when not
    read from a file): a later size equal to it means nothing was appended since, as a
    transcript only grows and only a torn last line is ever cut from it."""
    event_lines: Sequence[bytes] = ()
    """Each event's line as read (without its newline), when read from a file (an
    `EventLines`, sliced from the file's bytes): the engine's event log of a resumed run
    keeps these (`lines_kept`) instead of serialising the events again."""

    def last_policy(self) -> str:
        """The policy in charge where the events stop: the last swap's, else the header's. Of
        lines read from a file only those that name a swap are parsed (one that does not read
        is for the whole read to report)."""
        events, lines = self.events, self.event_lines
        for i in range(len(events) - 1, -1, -1):
            if lines and b'"policy_swapped"' not in lines[i]:
                continue
            try:
                event = events[i]
            except TranscriptError:
                break
            if event.type == "policy_swapped":
                return event.new
        return self.header.policy

    def lines_kept(self) -> Sequence[bytes] | None:
        """`event_lines` for an event log that keeps them while the run goes on, a large
        file's bytes packed (`EventLines.packed`); None when not read from a file."""
        if isinstance(self.event_lines, EventLines):
            return self.event_lines.packed()
        return self.event_lines or None


WRITE_BATCH = 4096
"""Lines `write_transcript` hands to the operating system in one write."""


def write_transcript(path: str | Path, header: Header, events: Iterable[Event],
                     tail: Callable[[TranscriptWriter], None] | None = None) -> None:
    """A whole run written at once (an import, a test's run): each event serialised as the engine
    serialises it (`event_lines`), the lines handed over `WRITE_BATCH` at a time, synced at the
    end. `tail`: writes the lines of the events after these (`write_lines`, `copy_lines`), once
    these are written."""
    with TranscriptWriter(path, header) as writer:
        for block in event_lines(events):
            writer.write_lines(block)
        if tail is not None:
            tail(writer)
        writer.sync()


def event_lines(events: Iterable[Event]) -> Iterator[bytes]:
    """The transcript lines of `events`, `WRITE_BATCH` to a block: each event serialised as the
    engine serialises it (`engine.core.guards.serialised`), each line ended."""
    from engine.core.guards import serialised  # the engine's guards: not on the path that only reads

    batch: list[bytes] = []
    for event in events:
        batch.append(serialised(event)[1])
        if len(batch) == WRITE_BATCH:
            batch.append(b"")
            yield b"\n".join(batch)
            batch.clear()
    if batch:
        batch.append(b"")
        yield b"\n".join(batch)


def read_from_bytes(
    name: str, data: bytes, *, strict: bool = True, lines_before: int | None = None, lazy: bool = False
) -> Transcript:
    """A transcript from a file's bytes, read by `engine.stored.reader`.

    strict: any bad line other than a torn last one raises TranscriptError.
    Not strict: bad lines are skipped and listed in `errors`.
    lines_before: `data` is one run of a file of several, after that many of its lines.
    lazy (strict only): the events are not parsed here but when read (`EventsAsRead`), so a
    caller that reads them once in order (a resume) never holds them all; a bad line then
    raises its TranscriptError there, with the same words.
    """
    index = LineIndex.scan(name, data, lines_before=lines_before)
    events: Sequence[Event]
    lines_of: Sequence[int]  # the index's lines that are events read
    errors: list[str] = []
    if lazy:
        if not strict:
            raise ValueError("a lazy read is strict")
        events, lines_of = EventsAsRead(index), range(len(index))
    else:
        events, lines_of = _events_read(index, strict, errors)
    unfinished = None
    try:
        unfinished = index.last_note()
    except TranscriptError as exc:
        if strict:
            raise
        errors.append(str(exc))
    if unfinished is not None:
        after = index.notes[-1].events_before
        key = (unfinished.step, unfinished.index)
        first = bisect_left(lines_of, after)
        if any(e.type == "observation" and (e.step, e.index) == key for e in events[first:]):
            unfinished = None
    read = index if len(lines_of) == len(index) else replace(
        index, starts=array("q", (index.starts[i] for i in lines_of)), ends=array("q", (index.ends[i] for i in lines_of)),
        numbers=array("q", (index.numbers[i] for i in lines_of)),
    )
    return Transcript(
        path=Path(name), header=index.header, events=events, warnings=index.warnings, errors=errors, unfinished=unfinished,
        lines=array("q", read.numbers), whole_size=len(data) if data.endswith(b"\n") and lines_before is None else None,
        event_lines=EventLines(read),
    )


def _events_read(index: LineIndex, strict: bool, errors: list[str]) -> tuple[list[Event], list[int]]:
    """Every event of `index` validated and checked in order, and the index's lines they are;
    not `strict`, a bad line is skipped and listed in `errors`."""
    events: list[Event] = []
    lines_of: list[int] = []
    steps = StepCheck()
    with collector_paused():
        for i in range(len(index)):
            try:
                event = index.parse(i)
                if (problem := steps.problem(event)) is not None:
                    raise TranscriptError(f"{index.where(i)}: {problem}")
                events.append(event)
                lines_of.append(i)
            except TranscriptError as exc:
                if strict:
                    raise
                errors.append(str(exc))
    return events, lines_of


def parse_lines(name: str, lines: list[bytes], *, strict: bool = True) -> Transcript:
    """A transcript from raw lines (kept with their line endings)."""
    return read_from_bytes(name, b"".join(lines), strict=strict)


def read_transcript(path: str | Path, *, strict: bool = True, lazy: bool = False) -> Transcript:
    """Read and validate a transcript file (see `read_from_bytes`)."""
    p = Path(path)
    transcript = read_from_bytes(str(p), read_bytes(p), strict=strict, lazy=lazy)
    transcript.path = p
    return transcript
