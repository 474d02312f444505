"""The gateway benches' `--processes` mode (`bench/server_processes.py`): the fake upstream, the
bare proxy and `agent-tui gateway --headless` each in a process of its own, their figures and
each process's CPU a request printed, and every one of those processes gone afterwards, also
when the bench is interrupted."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
NUMBER = r"-?\d+\.\d\d"
MARK = "AGENT_TUI_BENCH_TEST_MARK"


def marked(mark: str) -> list[int]:
    """The processes whose environment carries `mark` (the bench's children inherit it)."""
    found = []
    needle = f"{MARK}={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:  # ended meanwhile, or not ours
            pass
    return found


def _running(pid: int, mark: str) -> bool:
    """Whether the process `pid` still runs as one of the bench's: its entry is gone once it is
    reaped, a zombie (state Z) has ended, and a number used again names another process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z" and f"{MARK}={mark}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (OSError, IndexError):
        return False


def run_bench(*argv: str) -> tuple[str, str]:
    """The bench's output, and the mark its processes carried."""
    mark = uuid.uuid4().hex
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, MARK: mark})
    assert done.returncode == 0, done.stderr
    return done.stdout, mark


@pytest.mark.parametrize("wire", ["chat", "gemini"])
def test_gateway_latency_in_processes_prints_each_servers_cpu_and_leaves_none_running(wire):
    out, mark = run_bench("bench/gateway_latency.py", "--processes", "--requests", "20", "--turns", "5", "--wire", wire)
    for kind in ("whole", "streamed"):
        assert re.search(rf"^{kind} +requests=20 +direct +p50 {NUMBER} ms p95 {NUMBER} +the upstream's process's CPU {NUMBER} ms a request$", out, re.M), out
    for way in ("bare proxy, thread", "gateway"):
        rows = re.findall(rf"^  {re.escape(way)} +p50 {NUMBER} ms p95 {NUMBER} +added p50 {NUMBER} ms p95 {NUMBER} +its process's CPU {NUMBER} ms a request(  ratio \d+\.\d\d)?$", out, re.M)
        assert len(rows) == 2, (way, out)
    rows = re.findall(rf"^  the gateway's own part over the bare proxy, thread +p50 {NUMBER} ms p95 {NUMBER} +its process's CPU {NUMBER} ms a request more$", out, re.M)
    assert len(rows) == 2, out
    assert marked(mark) == []


def test_gateway_first_byte_in_processes_prints_each_servers_cpu_and_leaves_none_running():
    out, mark = run_bench("bench/gateway_first_byte.py", "--processes", "--requests", "3", "--pieces", "2", "--gap", "5", "--wire", "responses", "--call")
    assert "each server in its own process:" in out, out
    for way in ("direct", "bare proxy, thread", "gateway"):
        assert re.search(rf"^  {re.escape(way)} +first byte p50 +{NUMBER} ms +first text p50 +{NUMBER} ms +end p50 +{NUMBER} ms +its process's CPU {NUMBER} ms a request$", out, re.M), (way, out)
    for what in ("byte", "text"):
        assert re.search(rf"^  first {what} added p50: bare proxy, thread {NUMBER} ms, gateway {NUMBER} ms, the gateway's own part {NUMBER} ms$", out, re.M), out
    assert re.search(rf"^  the gateway's process's CPU over the bare proxy's, thread: {NUMBER} ms a request$", out, re.M), out
    assert marked(mark) == []


def test_an_interrupted_bench_stops_its_servers():
    mark = uuid.uuid4().hex
    bench = subprocess.Popen(
        [sys.executable, "bench/gateway_latency.py", "--processes", "--requests", "100000", "--wire", "anthropic"],
        cwd=ROOT, env={**os.environ, MARK: mark}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(marked(mark)) < 4:  # the bench, the upstream, the bare proxy and the gateway
            assert bench.poll() is None and time.monotonic() < deadline, bench.stderr.read() if bench.poll() is not None else marked(mark)
            time.sleep(0.05)
        children = [pid for pid in marked(mark) if pid != bench.pid]
        bench.send_signal(signal.SIGINT)
        _, err = bench.communicate(timeout=60)
    finally:
        if bench.poll() is None:
            bench.kill()
    assert bench.returncode != 0
    assert err.strip().splitlines() == ["bench: interrupted (Ctrl+C); its servers are stopped"], err
    wait_for(lambda: not [pid for pid in children if _running(pid, mark)], f"the bench's servers {children} to end", timeout=10)
    assert marked(mark) == []


def test_a_server_that_ends_before_it_serves_is_named_with_what_it_said(tmp_path):
    sys.path.insert(0, str(ROOT))
    from bench.server_processes import Child, ChildFailed

    command = [sys.executable, "-c", "print('cannot listen: address in use'); raise SystemExit(3)"]
    with pytest.raises(ChildFailed, match=r"^the fake upstream ended with code 3 before it served: cannot listen: address in use$"):
        Child("the fake upstream", command, tmp_path / "upstream.log", re.compile(r"^(\d+)$", re.M))


INTERRUPTED_AS_IT_STARTS = """
import os, re, signal, subprocess, sys
from contextlib import ExitStack, nullcontext
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from bench.server_processes import Child

started = subprocess.Popen._execute_child


def then_ctrl_c(self, *args, **kwargs):
    started(self, *args, **kwargs)
    print(self.pid, flush=True)
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C just after the fork, before Popen returns


subprocess.Popen._execute_child = then_ctrl_c
server = [sys.executable, "-c", "import signal; print(4321, flush=True); signal.pause()"]
try:
    with ExitStack() if sys.argv[3] == "stack" else nullcontext() as stops:
        Child("a server", server, Path(sys.argv[2]), re.compile(r"^(\\d+)$", re.M), stop_by_signal=True, stops=stops)
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.parametrize("stops", ["stack", "none"])
def test_ctrl_c_as_a_server_starts_stops_that_server(tmp_path, stops):
    """A Ctrl+C arriving inside `subprocess.Popen` (after the fork) takes effect once the child is
    known, so it is stopped: before, Popen raised and the server ran on, nobody's."""
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_AS_IT_STARTS, str(ROOT), str(tmp_path / "said.log"), stops],
        capture_output=True, text=True, timeout=60,
    )
    lines = done.stdout.split()
    assert done.returncode == 0 and len(lines) == 2, (done.stdout, done.stderr)
    pid = int(lines[0])
    try:
        assert lines[1] == "interrupted"
        assert not Path(f"/proc/{pid}").exists(), f"the server {pid} runs on"  # the child was waited for, so it is gone
    finally:
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
