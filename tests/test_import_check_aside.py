"""A long file of JSON lines is read fast while a child process checks it `plain`
(`engine.core.jsontext.PlainCheck`): the import is the one the check made first gives, byte for
byte; a text the check finds not plain is read again exactly; the child never outlives the reading.

The fork is taken only in a process of one thread (a pytest worker has more), so these tests run
the import in a fresh interpreter, with `ASIDE` lowered so that a small file counts as long."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from engine.core import jsontext
from engine.stored.transcript import TranscriptError
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "tests" / "data" / "traces"

IMPORT = """
import json, sys
from engine.core import jsontext
from engine.stored.importers import detect
from tui.cli import main

jsontext.ASIDE = int(sys.argv[1])
reads, asides = [], []
rows, Check = detect.json_rows, jsontext.PlainCheck

def counted(*args, **kwargs):
    reads.append(kwargs.get("fast"))
    return rows(*args, **kwargs)

class Seen(Check):
    def __init__(self, text):
        super().__init__(text)
        asides.append(self.aside)

detect.json_rows, jsontext.PlainCheck = counted, Seen
code = main(["import", sys.argv[2], "-o", sys.argv[3]])
print(json.dumps({"code": code, "reads": reads, "asides": asides}), file=sys.stderr)
"""

ODD_LINES = {
    "claude_code_simonw_sample_session.jsonl": '{"type": "mystery", "sessionId": "s", "n": 1e400, "m": -2E+401}',
    "codex_kvsankar_golden.jsonl": '{"timestamp": "t", "type": "mystery", "payload": {"n": 1e400}}',
    "gemini_cli_0_61_0_recorded.jsonl": '{"id": "odd", "type": "mystery", "n": 1e400}',
    "chat_openai_cookbook_toy_chat_fine_tuning.jsonl": None,  # a chat a line: a message more in one (`_with_odd_line`)
}


def _with_odd_line(name: str, lines: list[str]) -> list[str]:
    """`lines` with one that holds 1e400 where the run keeps it (an unrecognised line or block)."""
    middle = len(lines) // 2
    if ODD_LINES[name] is not None:
        return [*lines[:middle], ODD_LINES[name], *lines[middle:]]
    chat = json.loads(lines[middle])
    chat["messages"].append({"role": "assistant", "content": [{"type": "mystery", "n": float("inf")}]})
    return [*lines[:middle], json.dumps(chat).replace("Infinity", "1e400"), *lines[middle + 1:]]


def _imported(source: Path, out: Path, aside: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", IMPORT, str(aside), str(source), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    return report


@pytest.mark.parametrize("name", sorted(ODD_LINES))
@pytest.mark.parametrize("odd", [False, True], ids=["plain", "past-a-float"])
def test_a_file_checked_aside_imports_as_one_checked_first(name: str, odd: bool, tmp_path: Path) -> None:
    """Checked aside (a child process; ASIDE 1) or here first (ASIDE past the file), the transcripts
    are the same bytes; a file holding 1e400 is read fast, then again exactly, and keeps its text."""
    lines = (TRACES / name).read_text(encoding="utf-8").splitlines()
    if odd:
        lines = _with_odd_line(name, lines)
    source = tmp_path / name
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "aside").mkdir(), (tmp_path / "here").mkdir()
    aside = _imported(source, tmp_path / "aside" / "run.jsonl", 1)
    here = _imported(source, tmp_path / "here" / "run.jsonl", 1 << 40)
    assert aside["asides"] == [True] and here["asides"] == [False]
    runs = sorted(p.name for p in (tmp_path / "aside").iterdir())
    assert runs and runs == sorted(p.name for p in (tmp_path / "here").iterdir())
    assert all((tmp_path / "aside" / run).read_bytes() == (tmp_path / "here" / run).read_bytes() for run in runs)
    written = b"".join((tmp_path / "aside" / run).read_bytes() for run in runs)
    if odd:
        assert set(aside["reads"]) == {True, False} and aside["reads"][-1] is False  # fast, then exactly
        assert here["reads"] and set(here["reads"]) == {False}
        assert b"1e400" in written and b"Infinity" not in written
    else:
        assert aside["reads"] and set(aside["reads"]) == {True}


STOPPED = """
import os, sys, time
from engine.core import jsontext

jsontext.ASIDE = 1
parent = os.getpid()
plain = jsontext.plain

def slow(text):
    if os.getpid() != parent:  # the child: says it started, then takes its time
        with open(sys.argv[1], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)
    return plain(text)

jsontext.plain = slow
check = jsontext.PlainCheck("[1]" * 10)
assert check.aside
while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():
    time.sleep(0.01)
if sys.argv[2] == "close":
    check.close()
    try:
        os.waitpid(int(open(sys.argv[1]).read()), os.WNOHANG)
    except ChildProcessError:
        print("reaped")
else:
    with check:
        print("waiting", flush=True)
        check.holds()
"""


def test_closing_a_check_stops_its_child_and_reaps_it(tmp_path: Path) -> None:
    """A reading that ends before the check (an error, Ctrl+C) stops the child at once, and reaps
    it: the child here would take two minutes."""
    pid_file = tmp_path / "child"
    done = subprocess.run([sys.executable, "-c", STOPPED, str(pid_file), "close"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "reaped", done.stderr
    assert not Path(f"/proc/{pid_file.read_text()}").exists()


def test_ctrl_c_while_the_check_runs_leaves_no_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "child"
    process = subprocess.Popen([sys.executable, "-c", STOPPED, str(pid_file), "wait"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "waiting"
        child = int(pid_file.read_text())
        process.send_signal(signal.SIGINT)  # to the reader alone, not its group
        _, err = process.communicate(timeout=60)
        assert "KeyboardInterrupt" in err
        wait_for(lambda: not Path(f"/proc/{child}").exists(), "the check's child to be gone", timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_with_another_thread_the_check_is_made_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork copies one thread of many (one may hold a lock the child needs): none is made."""
    monkeypatch.setattr(jsontext, "ASIDE", 1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        check = jsontext.PlainCheck('{"n": 1e400}')
        assert not check.aside and not check.hoped and not check.holds()
    finally:
        stop.set()
        other.join()


class _Said:
    """A check that says `plain` as told, as a child would, counting how often it was asked."""

    answer = True

    def __init__(self, text: str) -> None:
        self.asked = 0

    aside = True
    hoped = True

    def holds(self) -> bool:
        self.asked += 1
        return self.answer

    def __enter__(self) -> _Said:
        return self

    def __exit__(self, *_exc: object) -> None:
        pass


@pytest.mark.parametrize("answer", [True, False])
def test_an_error_met_reading_fast_stands_only_if_the_text_is_plain(answer: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """What fails when read fast may be the fast reading's alone (a value it took for infinity): it
    is said only when the check says the text is plain; else the file is read again exactly."""
    from engine.stored import importers

    monkeypatch.setattr(_Said, "answer", answer)
    monkeypatch.setattr(jsontext, "PlainCheck", _Said)
    reads: list[bool] = []

    def read(fast: bool) -> list[Any]:
        reads.append(fast)
        if fast:
            raise TranscriptError("line 3: as read fast")
        return ["read exactly"]

    if answer:
        with pytest.raises(TranscriptError, match="as read fast"):
            importers._checked("text", read)
        assert reads == [True]
    else:
        assert importers._checked("text", read) == ["read exactly"]
        assert reads == [True, False]


def test_without_a_fork_the_check_is_made_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsontext, "ASIDE", 1)
    monkeypatch.delattr(os, "fork")
    assert not jsontext.PlainCheck("[1]").aside and jsontext.PlainCheck("[1]").holds()
    assert not jsontext.PlainCheck("[1e400]").hoped
