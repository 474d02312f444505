"""Ctrl+C outside a run: a message and exit 130, never a traceback. `bench` over a process
pool used to print a KeyboardInterrupt traceback and hang while its workers went on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tui.cli
from tui.cli import console_main


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def test_ctrl_c_in_bench_ends_its_workers_and_says_so(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "bench", "grid", "--grids", "5000", "--workers", "2", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "AGENT_TUI_HOME": str(tmp_path)},
    )
    def started() -> bool:  # two workers, and the pool's three threads beside the main one
        return len(children(proc.pid)) >= 2 and len(list(Path(f"/proc/{proc.pid}/task").glob("*"))) >= 4

    deadline = time.monotonic() + 60
    while not started() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)  # waiting for the pool to start, not measuring anything
    workers = children(proc.pid)
    assert len(workers) >= 2, "the pool did not start"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl+C does: the whole foreground group
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("bench did not end after Ctrl+C")
    assert proc.returncode == 130, err
    assert "agent-tui bench: interrupted (Ctrl+C); no table" in err and "Traceback" not in err
    assert out == ""
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_ctrl_c_in_any_other_command_is_a_message(capsys, monkeypatch) -> None:
    def interrupted(argv=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(tui.cli, "main", interrupted)
    with pytest.raises(SystemExit) as stop:
        console_main()
    assert stop.value.code == 130
    assert "agent-tui: interrupted (Ctrl+C)" in capsys.readouterr().err
