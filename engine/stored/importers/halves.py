"""A long Gemini CLI chat imported by two processes at once, a half each.

A file of JSON lines of `MIN_BYTES` or more is cut in two at a line where a
new turn of the model starts (`cut`). A forked child reads the second half as
it would follow the first (`read_part(later=True)`) while this process reads
the first; the child then tells what its half shares with the first (`Later`),
and the two are kept only if they read as the whole would (`joins`): no record
written again across the cut, no result across it, the task said before it.
Otherwise the child is stopped and the file is read whole, as without a cut
(the caller does that: `halved` gives None).

Kept, the two make their events in turn of the run's order as one run: this
process settles the answer (`Draft.settle`'s rule, across the halves)
and sends the child where its steps start and what the first half ended with
(`Go`); both look at their calls (`Look`), the child's tools are added to the
header's (`Look.then`), and each half's events are made and serialised on its
own core, the child's into a memory file that the writer appends after this
half's (`Made.tail`). When the second half estimates a step's usage from the
words before it, the first half's count is sent once its events are made, and
the child makes its events then. The transcript is byte for byte the one the
whole read writes (tests/test_import_halves.py cuts files at every line).

Where a child cannot help (`engine.core.jsontext.fork_helps`: another thread,
one core, no fork) or no memory file can be made, nothing is cut.
"""

from __future__ import annotations

import os
import signal
import weakref
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Callable, Iterator

from engine.core.collector import collector_paused
from engine.core.events import Event, RunEnded
from engine.core.jsontext import fork_helps, plain, plain_loads
from engine.stored.importers.build import Draft, Look, Made, Step, answer_end, settle_answer, stands_before
from engine.stored.importers.gemini_cli import Edge, joins, read_part
from engine.stored.transcript import TranscriptError

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from engine.stored.transcript import TranscriptWriter

MIN_BYTES = 8 * 1024 * 1024
"""A chat this long is cut in two (the fork of the process holding it costs a few ms; each half
checks its own text `plain`, where a shorter file is checked aside past `engine.core.jsontext.ASIDE`)."""
NEAR = 512
"""How many lines after the middle a cut is looked for at the start of a turn."""
BEFORE = 8
"""How many lines before a turn are looked at for an earlier version of it (`cut`)."""


def cut(lines: list[str]) -> int:
    """Where to cut a chat's lines (the index of the first line of the second half): at or after the
    line that holds the middle character, before a line that starts a new turn of the model (a
    `gemini` record whose id none of the `BEFORE` lines before it holds), within `NEAR` lines; else
    there. Only a choice: `joins` decides whether the halves read as the whole would."""
    half, middle = (sum(map(len, lines)) + len(lines)) // 2, 0
    for middle, end in enumerate(accumulate(len(line) + 1 for line in lines)):
        if end > half:
            break
    ids: dict[int, Any] = {}

    def id_of(i: int) -> Any:
        if i not in ids:
            try:
                record = plain_loads(lines[i])
            except (ValueError, RecursionError):
                record = None
            ids[i] = (record.get("id"), record.get("type")) if type(record) is dict else (None, None)
        return ids[i]

    for at in range(max(middle, 1), min(middle + NEAR, len(lines))):
        key, kind = id_of(at)
        if kind == "gemini" and type(key) is str and all(id_of(i)[0] != key for i in range(max(0, at - BEFORE), at)):
            return at
    return middle


@dataclass
class Later:
    """What the child tells of the second half once it has read it: what it shares with the first
    (`edge`), how many steps it holds and whether one has an answer, its last step and where it
    stands against its user notes (for the answer's rule), the last step whose usage is estimated
    (0: none; counted from its first step), and what the run's header and warning take from it."""

    edge: Edge
    steps: int
    answered: bool
    last: Step | None
    users: bool
    """A user note is among its items."""
    before_user: bool
    """`last` (or a step equal to it) stands before the last of them."""
    estimated: int
    looked: tuple[dict[str, dict[str, dict[str, Any]]], dict[str, bool]] | None
    """The tools its calls show (`Look.seen`, `Look.missing`); None: they wait for its first step's
    number (a call without an id is named from it), and come after `Go`."""
    unmapped: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    system: list[str] = field(default_factory=list)
    end: RunEnded | None = None


@dataclass
class Go:
    """What this process tells the child once the halves join: how many steps come before its
    first, whether its last step takes the answer's rule (`settle`), the end an answer of the
    first half made, the run's end the source wrote, the last step whose usage is estimated, and
    whether the first half's count of words is to come (`counts`)."""

    before: int
    settle: bool
    ended: RunEnded | None
    end: RunEnded | None
    estimated: int
    counts: bool


def _part(name: str, text: str, lines: list[str], start: int, later: bool) -> tuple[Draft, Edge]:
    """A half read: its lines parsed fast where its own text is plain (`plain`), else exactly."""
    from engine.stored.importers.detect import json_rows

    fast = plain(text)
    strict = not later  # the first half's last line is not the file's: it may not be torn
    return read_part(name, lambda: json_rows(name, text, strict=strict, lines=lines, fast=fast, start=start), later=later)


Work = Callable[["Connection", int], None]
"""The second half's work, given its end of the pipe and the memory file its lines go to."""
Starter = Callable[[Work], "Helper | None"]
"""Runs the second half's work aside (`forked`; a test's thread), None where it cannot."""


def halved(name: str, text: str, lines: list[str] | None) -> Made | None:
    """The run of a long Gemini CLI chat of JSON lines, made by two processes (see the module);
    None when it is not cut (short, nowhere to fork) or the halves do not join: the caller reads it
    whole. Raises nothing of the file's: an error of either half is the whole read's to give."""
    from engine.stored.importers.detect import json_lines

    if len(text) < MIN_BYTES or not fork_helps() or not hasattr(os, "memfd_create"):
        return None
    lines = json_lines(text) if lines is None else lines
    return halved_at(name, text, lines, cut(lines), forked)


def halved_at(name: str, text: str, lines: list[str], at: int, start: Starter) -> Made | None:
    """`halved`, cut before line `at` (from 0: the first of the second half; `lines` are `text`'s),
    the second half read by the work `start` runs aside."""
    if not 0 < at < len(lines):
        return None
    offset = sum(map(len, lines[:at])) + at  # each line's end: one character
    child = start(lambda conn, memory: _second(conn, memory, name, text[offset:], lines[at:], at + 1))  # (cut there)
    if child is None:
        return None
    try:
        made = _first(child, name, text[:offset], lines[:at])
    except BaseException:
        child.close()
        raise
    if made is None:
        child.close()
    return made


def _first(child: Helper, name: str, text: str, lines: list[str]) -> Made | None:
    """This process's half read and, when the halves join, the run made with the child's."""
    try:
        draft, edge = _part(name, text, lines, 1, later=False)
    except TranscriptError:  # (the whole read gives the error, at its line)
        return None
    steps = draft.steps()
    look = Look(steps)  # (an answer settled later changes nothing it reads)
    told = child.receive()
    if not told or told[0] != "read":
        return None
    later: Later = told[1]
    if not joins(draft, edge, later.edge):
        return None
    if not steps and not later.steps:
        return None
    draft.options.update({key: value for key, value in later.options.items() if key not in draft.options})
    for what, where in later.unmapped.items():
        draft.unmapped.setdefault(what, []).extend(where)
    draft.skipped.update(later.skipped)
    draft.system.extend(later.system)
    if later.end is not None:
        draft.end = later.end
    settle = _settled(draft, steps, later)
    estimated = len(steps) + later.estimated if later.estimated else look.estimated
    ended = next((answer_end(number, step.answer) for number, step in enumerate(steps, 1) if step.answer is not None), None)
    counts = estimated > len(steps)
    if not child.send(("go", Go(len(steps), settle, ended, draft.end, estimated, counts))):
        return None
    looked = later.looked
    if looked is None:
        told = child.receive()
        if not told or told[0] != "looked":
            return None
        looked = told[1]
    look.then(*looked)
    warning = draft.warning()

    def events() -> Iterator[Event]:
        words, _ = yield from draft.events(draft.items, look.looked, estimated=estimated, final=False)
        if counts:
            child.send(("words", words))  # (not heard: `Helper.lines` says the second half is lost)

    made = events()
    weakref.finalize(made, child.close)  # (a run not written: the child stopped)
    return Made(draft.header(look), [warning] if warning else [], made, len(steps) + later.steps, tail=child.lines)


def _settled(draft: Draft, steps: list[Step], later: Later) -> bool:
    """`Draft.settle` across the halves: whether the second half's last step takes the answer's
    rule (the first half's last step, when the second has none, takes it here: `Draft.settle`,
    unless a user note of the second half follows it)."""
    if not later.steps:
        if not later.users:
            draft.settle(steps)
        return False
    if later.answered or any(step.answer is not None for step in steps) or draft.end is not None:
        return False
    assert later.last is not None
    if later.users:  # its last user note follows every item here: is `last` (or its equal) among them?
        return not (later.before_user or stands_before(draft.items, later.last, len(draft.items)))
    return not draft.user_note_after(later.last)


def _second(conn: Connection, memory: int, name: str, text: str, lines: list[str], start: int) -> None:
    """The child's half: read, told (`Later`), and, once the halves join, its events made and
    written to `memory`, the byte count sent. Ends quietly when the other side hangs up."""
    try:
        _told_second(conn, memory, name, text, lines, start)
    except (EOFError, OSError):
        pass


def _told_second(conn: Connection, memory: int, name: str, text: str, lines: list[str], start: int) -> None:
    try:
        draft, edge = _part(name, text, lines, start, later=True)
    except Exception:
        conn.send(("failed", None))
        return
    steps = draft.steps()
    last = steps[-1] if steps else None
    look = Look(steps)  # numbered from 1: right unless a call is named from its step's number
    conn.send(("read", Later(
        edge, len(steps), any(step.answer is not None for step in steps), last, bool(draft.user_notes()),
        last is not None and draft.user_note_after(last), look.estimated,
        None if look.numbered else (look.seen, look.missing), draft.unmapped, dict(draft.skipped), draft.options,
        draft.system, draft.end)))
    told = conn.recv()
    if told[0] != "go":
        return
    go: Go = told[1]
    if go.settle and last is not None:
        settle_answer(last, draft.final_text_is_answer)
    draft.end = go.end
    if look.numbered:
        look = Look(steps, go.before + 1)
        conn.send(("looked", (look.seen, look.missing)))
    words = conn.recv()[1] if go.counts else 0
    from engine.stored.transcript import event_lines

    events = draft.events(draft.items, look.looked, estimated=go.estimated, number=go.before, context_words=words, ended=go.ended)
    size = 0
    for block in event_lines(events):
        view = memoryview(block)
        while view:
            written = os.write(memory, view)
            view, size = view[written:], size + written
    conn.send(("written", size))


class HalfLost(OSError):
    """The second half's lines were not had (its process died, its memory file fell short): the
    run is to be read again whole."""


class Helper:
    """What reads the second half aside (a forked child, as a rule): the pipe it answers by, the
    memory file it writes its lines to, and how to stop it (`stop`: once the pipe is closed)."""

    def __init__(self, conn: Connection, memory: int, stop: Callable[[], None]) -> None:
        self.conn = conn
        self.memory: int | None = memory
        self._stop: Callable[[], None] | None = stop

    def send(self, message: object) -> bool:
        """Whether `message` went: False when the other side has ended."""
        try:
            self.conn.send(message)
        except (EOFError, OSError):
            return False
        return True

    def receive(self) -> tuple[str, Any] | None:
        """The next message; None when the other side ended without one."""
        try:
            return self.conn.recv()  # type: ignore[no-any-return]
        except (EOFError, OSError):
            return None

    def lines(self, writer: TranscriptWriter) -> None:
        """The lines of the second half's events, once written, copied to `writer`; `HalfLost` when
        they were not written (the whole run is then not kept)."""
        told = self.receive()
        try:
            if not told or told[0] != "written" or self.memory is None:
                raise HalfLost("the process reading the second half of the file ended before it wrote its lines")
            if os.fstat(self.memory).st_size < told[1]:
                raise HalfLost("the lines of the second half of the file are short")
            writer.copy_lines(self.memory, told[1])
        finally:
            self.close()

    def close(self) -> None:
        """Hang up, stop the helper if it still runs, and let go of the memory file (again: nothing)."""
        self.conn.close()
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()
        if self.memory is not None:
            os.close(self.memory)
            self.memory = None


def _dies_with(parent: int) -> None:
    """This child killed when `parent` ends, however it ends (Linux: `PR_SET_PDEATHSIG`; SIGKILL
    to the parent leaves no reader of half a file behind); ended now if it has already."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # (not Linux: the child ends at its next message)
        return
    if os.getppid() != parent:
        os._exit(1)


def forked(work: Work) -> Helper | None:
    """`work` run by a forked child (None: no process or memory file could be had). The child runs
    nothing of the parent's (no signal handler, no flush, no exit hook); closed, it is killed and
    reaped."""
    from multiprocessing.connection import Pipe

    try:
        memory = os.memfd_create("agent-tui-import", os.MFD_CLOEXEC)
    except OSError:
        return None
    try:
        mine, theirs = Pipe()
    except OSError:  # (no descriptor left)
        os.close(memory)
        return None
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        for end in (mine, theirs):
            end.close()
        os.close(memory)
        return None
    if pid == 0:
        status = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _dies_with(parent)
            mine.close()
            with collector_paused():
                work(theirs, memory)
            status = 0
        finally:
            os._exit(status)
    theirs.close()

    def stop() -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # (reaped by a SIGCHLD handler that ignores children)
            pass

    return Helper(mine, memory, stop)
