"""A long Gemini CLI chat imported by two processes at once (`engine.stored.importers.halves`).

The transcript the halves write is the one the whole read writes, byte for byte, wherever the file
is cut: each file here is cut before every one of its lines, the second half read by the same work
a forked child runs (`_second`), here in a thread over the same pipe and memory file. Where the
halves cannot join (a record written again across the cut, a result across it, the task after
it), no run is made and the whole read is the one kept. The fork itself is tried in a fresh
interpreter (a pytest worker has threads, and no fork is made then): the import, the child that
dies, the child that outlives a Ctrl+C.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from multiprocessing.connection import Pipe
from pathlib import Path
from typing import Any, Callable

import pytest

from engine.stored.importers import halves, made_runs
from engine.stored.importers.detect import json_lines, sniff
from engine.stored.importers.halves import Helper, Work, cut, halved, halved_at
from engine.stored.transcript import TranscriptError, write_transcript
from tests.support.mutation import TRACES, mutant, small
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
RECORDED = TRACES / "gemini_cli_0_61_0_recorded.jsonl"
SESSION = {"sessionId": "s", "projectHash": "p", "startTime": "2026-12-01T00:00:00Z", "kind": "main"}


def threaded(work: Work) -> Helper:
    """The second half's work in a thread, over a pipe and a memory file as a forked child's."""
    memory = os.memfd_create("test-half", os.MFD_CLOEXEC)
    mine, theirs = Pipe()
    thread = threading.Thread(target=work, args=(theirs, memory), daemon=True)
    thread.start()

    def stop() -> None:
        thread.join(timeout=60)
        theirs.close()
        assert not thread.is_alive()

    return Helper(mine, memory, stop)


def _written(path: Path, made: Any) -> bytes:
    """The transcript written, after the warnings (a line each) the import prints first."""
    warnings = "".join(f"{w}\n" for w in made.warnings).encode()
    write_transcript(path, made.header, made.events, made.tail)
    data = path.read_bytes()
    path.unlink()
    return warnings + data


def _whole(name: str, data: bytes, out: Path) -> bytes | None:
    """The warnings and the transcript the whole read writes (None: it refuses the file)."""
    try:
        (made,) = made_runs(name, data)
    except TranscriptError:
        return None
    return _written(out, made)


def _halved(name: str, data: bytes, at: int, out: Path) -> bytes | None:
    """The warnings and the transcript the halves write, cut before line `at` (None: they do not join)."""
    sniffed = sniff(name, data)
    assert sniffed.fmt == "gemini-cli" and sniffed.text is not None
    lines = sniffed.lines if sniffed.lines is not None else json_lines(sniffed.text)
    made = halved_at(name, sniffed.text, lines, at, threaded)
    return None if made is None else _written(out, made)


def _every_cut(name: str, data: bytes, tmp_path: Path) -> list[int]:
    """Each cut of `data` whose halves join, each checked to write the whole read's bytes."""
    whole = _whole(name, data, tmp_path / "whole.jsonl")
    joined = []
    for at in range(1, len(json_lines(data.decode("utf-8-sig")))):
        halved_bytes = _halved(name, data, at, tmp_path / f"cut-{at}.jsonl")
        if halved_bytes is not None:
            assert whole is not None, f"cut {at}: the halves made a run of a file the whole read refuses"
            assert halved_bytes == whole, f"cut {at}: the halves wrote another transcript"
            joined.append(at)
    return joined


def _chat(*records: dict[str, Any]) -> bytes:
    return ("\n".join(json.dumps(r) for r in (SESSION, *records)) + "\n").encode()


def _task(text: str = "Count the words.") -> dict[str, Any]:
    return {"id": "task", "type": "user", "content": [{"text": text}]}


def _turn(n: int, *, tokens: bool = True, call_id: str | None = "auto", result: bool = True, text: str = "",
          model: str | None = None, tool: str = "read_file", args: dict[str, Any] | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": tool, "args": args if args is not None else {"file_path": f"f{n}.txt"}, "status": "success"}
    if call_id is not None:
        call["id"] = f"c{n}" if call_id == "auto" else call_id
    if result:
        call["result"] = [{"functionResponse": {"id": call.get("id"), "name": tool, "response": {"output": f"{n} words"}}}]
    record: dict[str, Any] = {"id": f"g{n}", "type": "gemini", "content": text, "toolCalls": [call]}
    if tokens:
        record["tokens"] = {"input": 10 + n, "output": 5}
    if model:
        record["model"] = model
    return record


def _said(n: int, text: str, **more: Any) -> dict[str, Any]:
    return {"id": f"t{n}", "type": "gemini", "content": text, **more}


# -- every cut, against the whole read ------------------------------------------------------


def test_the_recorded_chat_cut_anywhere_writes_the_whole_reads_transcript(tmp_path: Path) -> None:
    """Gemini CLI 0.61's own chat: every cut that joins writes the same bytes; a cut between a turn
    and its version written again does not join."""
    data = RECORDED.read_bytes()
    joined = _every_cut("chat.jsonl", data, tmp_path)
    ids = [json.loads(line).get("id") for line in data.decode().splitlines()]
    for at in range(1, len(ids)):
        if ids[at] is not None and ids[at] in ids[:at]:
            assert at not in joined, f"cut {at} splits a record written twice"
    assert joined, "no cut of the recorded chat joins"


def test_a_line_a_step_joins_at_every_cut_after_the_task(tmp_path: Path) -> None:
    data = _chat(_task(), *(_turn(n) for n in range(12)), _said(99, "All counted."))
    joined = _every_cut("chat.jsonl", data, tmp_path)
    assert joined == list(range(2, 15))  # (before line 2 the first half has no task)


def test_estimated_usage_after_the_cut_counts_the_words_before_it(tmp_path: Path) -> None:
    """Turns without tokens: their usage is estimated from every word before them, so the first
    half's count goes to the second (`Go.counts`)."""
    data = _chat(_task(), *(_turn(n, tokens=n % 3 == 0) for n in range(10)), _said(99, "Done."))
    assert len(_every_cut("chat.jsonl", data, tmp_path)) == 11


def test_calls_without_ids_are_numbered_by_their_step_on_either_side(tmp_path: Path) -> None:
    records = [_turn(n, call_id=None if n in (2, 7) else "auto") for n in range(10)]
    data = _chat(_task(), *records, _said(99, "Done."))
    assert len(_every_cut("chat.jsonl", data, tmp_path)) == 11


def test_user_messages_on_both_sides_and_the_answers_rule(tmp_path: Path) -> None:
    """A later user message keeps the last text from becoming the answer; equal steps before it
    count as it does (`Draft.user_note_after`)."""
    user = lambda n, text: {"id": f"u{n}", "type": "user", "content": [{"text": text}]}  # noqa: E731
    for tail in ([user(1, "and then?"), _said(98, "Done.")], [_said(98, "Done."), user(1, "thanks")], [_said(98, "Done.")]):
        data = _chat(_task(), _turn(0), _said(97, "Done."), user(0, "go on"), _turn(1), _turn(2), *tail)
        assert _every_cut("chat.jsonl", data, tmp_path), tail


def test_the_answer_before_the_cut_ends_the_run_after_it(tmp_path: Path) -> None:
    """The second half holds no step (notices only): the first half's last text is the answer, and
    the run's end comes after the second half's notes."""
    notice = lambda n: {"id": f"i{n}", "type": "info", "content": f"notice {n}"}  # noqa: E731
    data = _chat(_task(), _turn(0), _turn(1), _said(99, "All counted."), notice(0), notice(1))
    joined = _every_cut("chat.jsonl", data, tmp_path)
    assert {5, 6} <= set(joined)


def test_a_result_across_the_cut_does_not_join(tmp_path: Path) -> None:
    """A call answered in a user record after the cut: the whole read gives the result to that call."""
    answer = {"id": "r3", "type": "user", "content": [{"functionResponse": {"id": "c3", "name": "read_file", "response": {"output": "3 words"}}}]}
    data = _chat(_task(), _turn(0), _turn(1), _turn(2), _turn(3, result=False), _turn(4), answer, _turn(5))
    joined = _every_cut("chat.jsonl", data, tmp_path)
    assert 6 not in joined and 7 not in joined and 5 in joined and 8 in joined


def test_a_reused_call_id_across_the_cut_does_not_join(tmp_path: Path) -> None:
    """Two open calls of one id, the older before the cut: a result takes the older."""
    answer = {"id": "r", "type": "user", "content": [{"functionResponse": {"id": "same", "name": "read_file", "response": {"output": "x"}}}]}
    data = _chat(_task(), _turn(0, call_id="same", result=False), _turn(1), _turn(2, call_id="same", result=False), answer)
    joined = _every_cut("chat.jsonl", data, tmp_path)
    assert 4 not in joined and 5 not in joined


def test_what_cannot_be_mapped_on_either_side_is_counted_as_the_whole_read_counts_it(tmp_path: Path) -> None:
    odd = lambda n: {"id": f"x{n}", "type": "mystery", "n": n}  # noqa: E731
    update = {"$set": {"lastUpdated": "now", "summary": "s"}}
    data = _chat(_task(), odd(0), _turn(0, model="gemini-a"), update, odd(1), _turn(1), {"id": "m", "type": "gemini", "content": [{"mystery": 1}]},
                 update, odd(2), _turn(2, model="gemini-b"), "a string", _said(9, "Done."))
    assert len(_every_cut("chat.jsonl", data, tmp_path)) >= 10
    whole = _whole("chat.jsonl", data, tmp_path / "whole.jsonl")
    assert whole is not None and whole.startswith(b"chat.jsonl: 5 parts could not be mapped")


def test_a_broken_line_before_the_cut_of_a_file_without_newlines_is_refused_as_the_whole_read_refuses_it(tmp_path: Path) -> None:
    """Lines ended by `\r` alone: the first half's last line is not the file's, and a torn one is
    an error there, as in the whole read (only the file's own last line may be torn)."""
    lines = [json.dumps(SESSION), json.dumps(_task()), '{"id": "g9", "type": "gemini", "content": "cut off her',
             json.dumps(_turn(0)), json.dumps(_turn(1))]
    data = ("\r".join(lines) + "\r").encode()
    assert _whole("chat.jsonl", data, tmp_path / "whole.jsonl") is None
    assert _every_cut("chat.jsonl", data, tmp_path) == []


def test_a_model_named_only_after_the_cut_is_the_runs(tmp_path: Path) -> None:
    data = _chat(_task(), _turn(0), _turn(1), _turn(2, model="gemini-late"), _turn(3, model="gemini-later"))
    joined = _every_cut("chat.jsonl", data, tmp_path)
    assert joined == [2, 3, 4, 5]
    sniffed = sniff("c", data)
    made = halved_at("c", sniffed.text or "", sniffed.lines or [], 3, threaded)
    assert made is not None and made.header.options["model"] == "gemini-late"
    _written(tmp_path / "m.jsonl", made)  # (the helper reaped)


def test_tools_seen_on_both_sides_make_one_list(tmp_path: Path) -> None:
    """A parameter is required when every call gave it, has its first value's type; a tool whose
    every result says it does not exist is left out."""
    def missing(n: int) -> dict[str, Any]:
        said = {"functionResponse": {"id": f"cz{n}", "name": "nope", "response": {"error": "tool 'nope' not found"}}}
        return {"id": f"gz{n}", "type": "gemini", "content": "", "toolCalls": [{"id": f"cz{n}", "name": "nope", "args": {}, "status": "error", "result": [said]}]}

    records = [_turn(0, args={"a": 1, "b": "x"}), _turn(1, tool="write", args={"p": "q"}), _turn(2, args={"a": "one"}), missing(0),
               _turn(3, args={"a": 2, "c": [1]}), _turn(4, tool="write", args={"p": "r", "s": True}), _turn(5, tool="gone"), missing(1),
               _turn(6, tool="gone", result=False), missing(2), {**missing(3), "toolCalls": [{**missing(3)["toolCalls"][0], "name": "gone"}]}]
    data = _chat(_task(), *records)
    assert len(_every_cut("chat.jsonl", data, tmp_path)) == len(records)


@pytest.mark.parametrize("seed", range(4))
def test_mutants_of_the_recorded_chat_cut_in_two_write_what_the_whole_read_writes(seed: int, tmp_path: Path) -> None:
    """The import fuzzer's mutants (flipped bytes, doubled, dropped and reordered lines, wrong
    types), each cut at a random line: where the halves join, the same bytes."""
    rng = random.Random(f"halves-{seed}")
    source = small(RECORDED.read_bytes())
    joined = 0
    for _ in range(60):
        data = mutant("gemini-cli", source, rng)
        try:
            sniffed = sniff("m.jsonl", data)
        except TranscriptError:
            continue
        if sniffed.fmt != "gemini-cli" or sniffed.document is not None or not sniffed.text:
            continue
        lines = sniffed.lines if sniffed.lines is not None else json_lines(sniffed.text)
        if len(lines) < 2:
            continue
        at = rng.randrange(1, len(lines))
        made = halved_at("m.jsonl", sniffed.text, lines, at, threaded)
        if made is None:
            continue
        whole = _whole("m.jsonl", data, tmp_path / "whole.jsonl")
        assert whole is not None and _written(tmp_path / "halves.jsonl", made) == whole
        joined += 1
    assert joined >= 5


# -- the second half's lines into the transcript ---------------------------------------------------


@pytest.mark.parametrize("sendfile", [True, False], ids=["sendfile", "read-and-write"])
def test_the_second_halfs_lines_are_copied_after_the_first(sendfile: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`TranscriptWriter.copy_lines`: by `os.sendfile`, or read and written where it cannot copy
    (EINVAL); a memory file shorter than said is an error, not a short transcript."""
    from engine.core.events import Header
    from engine.stored.transcript import TranscriptWriter

    if not sendfile:
        def refused(*_args: object) -> int:
            raise OSError(22, "Invalid argument")
        monkeypatch.setattr(os, "sendfile", refused)
    memory = os.memfd_create("test-lines")
    lines = b"".join(b'{"type": "note", "step": %d, "kind": "system", "text": "%s"}\n' % (n, b"x" * n) for n in range(3000))
    os.write(memory, lines)
    try:
        with TranscriptWriter(tmp_path / "t.jsonl", Header(scenario="s", task="t", task_text="t", policy="p")) as writer:
            writer.write_lines(b'{"type": "note", "step": 0, "kind": "system", "text": "first"}\n')
            writer.copy_lines(memory, len(lines))
        written = (tmp_path / "t.jsonl").read_bytes().split(b"\n", 2)
        assert written[1].endswith(b'"first"}') and written[2] == lines
        with TranscriptWriter(tmp_path / "short.jsonl", Header(scenario="s", task="t", task_text="t", policy="p")) as writer, pytest.raises(OSError):
            writer.copy_lines(memory, len(lines) + 10)
    finally:
        os.close(memory)


def test_a_sync_that_fails_at_the_end_of_a_written_run_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`write_transcript` syncs what it wrote before it returns, and says so when the disk fails
    (a writer's `close` keeps quiet: it ends a run that already stopped)."""
    from engine.core.events import Header, Note

    broken = []
    fsync = os.fsync

    def failing(fd: int) -> None:
        if broken:
            raise OSError(5, "Input/output error")
        fsync(fd)

    def events() -> Any:
        broken.append(True)  # the header is written and synced before the first event is asked for
        yield Note(step=0, kind="system", text="one")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError, match="Input/output error"):
        write_transcript(tmp_path / "t.jsonl", Header(scenario="s", task="t", task_text="t", policy="p"), events())


# -- where to cut, and when not to ----------------------------------------------------------------


def test_the_cut_falls_before_a_new_turn_after_the_middle() -> None:
    text = RECORDED.read_text(encoding="utf-8")
    lines = text.splitlines() * 40  # (ids repeat: only the lines just before are looked at)
    at = cut(lines)
    ends = [sum(len(line) + 1 for line in lines[:n + 1]) for n in range(len(lines))]
    assert ends[at] > ends[-1] // 2  # the cut line ends past the middle character
    record = json.loads(lines[at])
    assert record["type"] == "gemini" and all(json.loads(line).get("id") != record["id"] for line in lines[at - 8:at])
    assert not any(json.loads(line).get("type") == "gemini" and json.loads(line).get("id") not in
                   {json.loads(before).get("id") for before in lines[n - 8:n]} for n, line in enumerate(lines) if ends[-1] // 2 < ends[n - 1] and n < at)


def test_the_cut_halves_the_characters_not_the_lines() -> None:
    """Long lines first (a chat's big results early): the cut comes early in the lines."""
    long = [json.dumps(_turn(n, text="x" * 5000)) for n in range(20)]
    short = [json.dumps(_turn(n)) for n in range(20, 200)]
    lines = [json.dumps(SESSION), json.dumps(_task()), *long, *short]
    at = cut(lines)
    half = sum(len(line) + 1 for line in lines) // 2
    assert at < len(lines) // 2 and sum(len(line) + 1 for line in lines[:at]) <= half < sum(len(line) + 1 for line in lines[:at + 1])


def test_short_files_and_threaded_processes_are_not_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    text = RECORDED.read_text(encoding="utf-8")
    assert halved("c", text, None) is None  # short
    monkeypatch.setattr(halves, "MIN_BYTES", 1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert halved("c", text, None) is None  # another thread: no fork
    finally:
        stop.set()
        other.join()


# -- the fork, in a fresh interpreter ---------------------------------------------------------------

IMPORT = """
import json, os, sys
from engine.stored.importers import halves
from engine.stored import transcript
from tui.cli import main

halves.MIN_BYTES = 1
made = []
halved = halves.halved
def seen(*args):
    result = halved(*args)
    made.append(result is not None)
    return result
halves.halved = seen
parent = os.getpid()
children = []
fork = os.fork
def forked():
    pid = fork()
    if pid:
        children.append(pid)
    return pid
os.fork = forked

def ended(pid):
    while True:  # a zombie until reaped (gone after)
        try:
            with open(f"/proc/{pid}/status") as status:
                if "State:\tZ" in status.read():
                    return
        except FileNotFoundError:
            return
        os.sched_yield()

class Dying:  # the child's end of the pipe: the child dies after it sends `after`, or when it is told `told`
    def __init__(self, conn, after=None, told=None):
        self.conn, self.after, self.told = conn, after, told
    def send(self, message):
        self.conn.send(message)
        if message[0] == self.after:
            os._exit(3)
    def recv(self):
        message = self.conn.recv()
        if message[0] == self.told:
            os._exit(3)
        return message

told = halves._told_second
if sys.argv[3] == "child-dies-reading":
    halves._told_second = lambda *args: os._exit(3)
elif sys.argv[3] == "child-dies-before-go":  # and the parent sends it once the child is gone
    halves._told_second = lambda conn, *args: told(Dying(conn, after="read"), *args)
    joins = halves.joins
    def joined(*args):
        ended(children[-1])
        return joins(*args)
    halves.joins = joined
elif sys.argv[3] == "child-dies-before-words":
    halves._told_second = lambda conn, *args: told(Dying(conn, told="go"), *args)
    events = halves.Draft.events
    def first_events(self, *args, **kwargs):
        if os.getpid() == parent and not kwargs.get("number"):
            ended(children[-1])
        return (yield from events(self, *args, **kwargs))
    halves.Draft.events = first_events
elif sys.argv[3] == "child-dies-writing":
    lines = transcript.event_lines
    def dying(events):
        if os.getpid() != parent:
            os._exit(3)
        return lines(events)
    transcript.event_lines = dying
code = main(["import", sys.argv[1], "-o", sys.argv[2]])
print(json.dumps({"code": code, "halved": made}), file=sys.stderr)
"""


def _import(source: Path, out: Path, how: str = "") -> tuple[dict[str, Any], str]:
    done = subprocess.run([sys.executable, "-c", IMPORT, str(source), str(out), how], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1]), done.stdout + done.stderr


def _long_chat(path: Path, steps: int = 400) -> bytes:
    data = _chat(_task(), *(_turn(n, tokens=n % 7 != 0) for n in range(steps)), _said(9999, "All counted."))
    path.write_bytes(data)
    return data


def test_the_forked_import_writes_the_whole_reads_transcript(tmp_path: Path) -> None:
    source = tmp_path / "chat.jsonl"
    data = _long_chat(source)
    report, _ = _import(source, tmp_path / "out.jsonl")
    assert report == {"code": 0, "halved": [True]}
    assert (tmp_path / "out.jsonl").read_bytes() == _whole(str(source), data, tmp_path / "whole.jsonl")


@pytest.mark.parametrize("how", ["child-dies-reading", "child-dies-before-go", "child-dies-before-words", "child-dies-writing"])
def test_a_child_that_dies_leaves_the_whole_read(how: str, tmp_path: Path) -> None:
    """Dead before the halves join (before it says what it read, or before it is told to go on),
    the whole read is made; dead once they joined (before the first half's word count, or while
    writing its lines), the first half's file is dropped and the chat read again whole. The
    transcript is the same each time."""
    source = tmp_path / "chat.jsonl"
    data = _long_chat(source)
    report, said = _import(source, tmp_path / "out.jsonl", how)
    joined = how in ("child-dies-before-words", "child-dies-writing")
    assert report["code"] == 0 and report["halved"] == [joined]
    assert (tmp_path / "out.jsonl").read_bytes() == _whole(str(source), data, tmp_path / "whole.jsonl")
    assert ("read again in one process" in said) is joined
    assert f"{source}: 1 gemini-cli run:\n{tmp_path / 'out.jsonl'}  (401 steps)" in said


STOPPED = """
import os, sys, time
from engine.stored.importers import halves
from tui.cli import main

halves.MIN_BYTES = 1
parent = os.getpid()
part = halves._part
def slow(name, text, lines, start, later):
    if os.getpid() != parent:  # the child: says it started, then takes its time
        with open(sys.argv[2], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)
    else:
        print("reading", flush=True)
    return part(name, text, lines, start, later)
halves._part = slow
sys.exit(main(["import", sys.argv[1], "-o", sys.argv[3]]))
"""


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_the_parent_stopped_by_a_signal_leaves_no_child_and_no_file(how: str, tmp_path: Path) -> None:
    """Ctrl+C and SIGTERM stop the child and reap it (SIGTERM as other commands end: `terminated
    (SIGTERM)`, exit 143); SIGKILL, which the import cannot catch, takes the child with it (it
    dies with its parent). Sent to the parent alone, not its group."""
    source, pid_file = tmp_path / "chat.jsonl", tmp_path / "child"
    _long_chat(source)
    process = subprocess.Popen([sys.executable, "-c", STOPPED, str(source), str(pid_file), str(tmp_path / "out.jsonl")], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "reading"
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip() != "", "the child to start", timeout=30)
        child = Path(f"/proc/{pid_file.read_text()}")
        process.send_signal(getattr(signal, how))
        _, err = process.communicate(timeout=60)
        if how == "SIGKILL":
            assert process.returncode == -signal.SIGKILL
            wait_for(lambda: not child.exists() or "State:\tZ" in (child / "status").read_text(), "the child to end", timeout=20)
        else:
            assert (process.returncode, how in err or "KeyboardInterrupt" in err) == ({"SIGINT": -signal.SIGINT, "SIGTERM": 143}[how], True), err
            wait_for(lambda: not child.exists(), "the child to be reaped", timeout=20)
        assert not (tmp_path / "out.jsonl").exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
