"""A stdio MCP server that sends a line without end is stopped at 16 MB: the call is a fault
saying so, the client's memory does not follow the server, and the run goes on to the fault.

The server is real (tests/data/endless_mcp.py, on the official SDK) and floods for real."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

import pytest

from engine import Decision
from engine.core.scenario import Task
from engine.mcp import McpHub, McpStartError
from engine.mcp.hub import MAX_MESSAGE_BYTES, McpFault
from engine.mcp.servers import McpServerConfig
from engine.sessions.run import new_run
from scenarios.mcp import SCENARIO as MCP
from tests.support.helpers import script
from tests.support.mcp_helpers import alive
from tests.support.waiting import wait_for

ENDLESS = str(Path(__file__).resolve().parent / "data" / "endless_mcp.py")
SLACK = 4 * 1024 * 1024
"""What the pipes, the guard's chunk and the server's last writes may hold past the cap."""


def _endless(tmp_path: Path, *extra: str) -> McpServerConfig:
    return McpServerConfig(name="endless", command=sys.executable, args=(ENDLESS, "--count", str(tmp_path / "written"), *extra),
                           timeout=60, trusted=True)


def test_an_endless_line_is_a_fault_and_the_server_is_stopped(tmp_path):
    hub = McpHub([_endless(tmp_path)], tmp_path)
    hub.start()
    try:
        assert hub.call("endless", "ping", {}).content[0].text == "pong"
        (pid,) = hub.pids()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(McpFault) as caught:
            hub.call("endless", "flood_now", {})
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        print(f"\nflood stopped after {int((tmp_path / 'written').read_text()):,} bytes written; "
              f"this process's peak memory grew {grown_mb:.0f} MB")
        assert str(caught.value) == (f"MCP server 'endless' sent a message over 16 MB during flood_now; "
                                     f"it was stopped (its log: {hub.connections[0].log_path})")
        assert not alive(pid)
        written = int((tmp_path / "written").read_text())
        assert MAX_MESSAGE_BYTES - SLACK < written < MAX_MESSAGE_BYTES + SLACK
        with pytest.raises(McpFault, match="MCP server 'endless' is not running"):
            hub.call("endless", "ping", {})
    finally:
        hub.close()


def test_a_run_stops_at_the_fault_with_the_reason(tmp_path):
    hub = McpHub([_endless(tmp_path)], tmp_path)
    hub.start()
    try:
        from engine.mcp import hub_tools

        run = new_run(MCP, policy=script(Decision.act("go", "flood_now")), task=Task("custom", "flood"),
                      extra_tools=hub_tools(hub), mcp=hub.public(), save=False)
        run.engine.step()
        observed = [e for e in run.engine.events if e.type == "observation"][-1]
        assert observed.error and "sent a message over 16 MB during flood_now; it was stopped" in observed.text
        assert run.engine.state.ended.outcome == "stopped"
        run.close()
    finally:
        hub.close()


def test_an_endless_line_at_start_is_a_start_error(tmp_path):
    hub = McpHub([_endless(tmp_path, "--at-start")], tmp_path)
    with pytest.raises(McpStartError) as caught:
        hub.start()
    assert str(caught.value).startswith("MCP server 'endless' sent a message over 16 MB at start; it was stopped (its log: ")
    assert int((tmp_path / "written").read_text()) < MAX_MESSAGE_BYTES + SLACK


class EndlessHttp:
    """tests/data/endless_mcp.py on streamable HTTP at 127.0.0.1, started and stopped by the test."""

    def __init__(self, tmp_path: Path, *extra: str) -> None:
        import socket
        import subprocess
        import time

        from tests.support.mcp_helpers import free_port

        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.process = subprocess.Popen([sys.executable, ENDLESS, "--http", str(port), "--count", str(tmp_path / "written"), *extra],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the endless HTTP server did not start")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.mark.parametrize("kind", ["sse", "json"])
def test_an_http_reply_without_end_is_a_fault_and_the_server_is_disconnected(tmp_path, kind, capfd):
    server = EndlessHttp(tmp_path, *(["--json"] if kind == "json" else []))
    try:
        hub = McpHub([McpServerConfig(name="endless", url=server.url, timeout=60)], tmp_path)
        hub.start()
        try:
            assert hub.call("endless", "ping", {}).content[0].text == "pong"
            with pytest.raises(McpFault) as caught:
                hub.call("endless", "flood_now", {})
            assert str(caught.value) == "MCP server 'endless' sent a message over 16 MB during flood_now; it was disconnected"
            # the server records a chunk once its send returns, which may be after the client read it
            wait_for(lambda: int((tmp_path / "written").read_text()) >= MAX_MESSAGE_BYTES, "the server to have sent the cap", timeout=30)
            with pytest.raises(McpFault, match="MCP server 'endless' is not running: it sent a message over 16 MB and was disconnected"):
                hub.call("endless", "ping", {})
        finally:
            hub.close()
        printed = capfd.readouterr().err
        assert "Traceback" not in printed and "Task was destroyed" not in printed, printed
    finally:
        server.stop()


def _passed(chunks: list[bytes], limit: int, events: bool) -> int | None:
    """The chunks a capped body passes on before one takes a message over the limit (None: all)."""
    from engine.mcp.capped_http import MessageCount

    count = MessageCount(limit, events)
    return next((n for n, chunk in enumerate(chunks) if count.over(chunk)), None)


def test_the_cap_counts_each_event_of_a_stream_and_a_json_body_whole():
    small = [b"data: " + b"y" * 90 + b"\n\n" for _ in range(100)]  # 100 events of 98 bytes: 9,800 bytes in all
    assert _passed(small, 1000, events=True) is None
    split = [b"data: " + b"y" * 90 + b"\n", b"\ndata: z\r\n", b"\r\n"]  # blank lines across chunks, \r\n too
    assert _passed(split * 50, 200, events=True) is None
    endless = [b"data: " + b"y" * 90 + b"\n" for _ in range(100)]  # one event of many data lines, never ended
    assert _passed(endless, 1000, events=True) == 10
    assert _passed([b"y" * 990, b"y" * 20 + b"\n\n"], 1000, events=True) == 1  # the event ends past the limit
    assert _passed(small, 1000, events=False) == 10  # a JSON body is one message
    assert _passed([b"x" * 1000], 1000, events=False) is None


def test_the_guard_relays_lines_within_the_cap_and_stops_a_longer_one(tmp_path):
    import os
    import subprocess

    from engine.mcp.guard import EXIT_TOO_LONG, NOISE, NOISE_LINE, TOO_LONG
    from engine.mcp.hub import GUARD

    def guarded(limit: int, script: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(GUARD), str(os.getpid()), str(tmp_path / "pid"), str(limit),
                               sys.executable, "-c", script], input=b"in\n", capture_output=True, timeout=60)

    done = guarded(10, "import sys; print('{' + sys.stdin.readline().strip() * 4); print('[' + 'x' * 9); sys.exit(3)")
    assert (done.returncode, done.stdout, done.stderr) == (3, b"{inininin\n[xxxxxxxxx\n", b"")
    done = guarded(10, "print('Welcome!'); print(); print('  {}'); print('x' * 50)")  # not JSON-RPC: to the log, uncapped
    assert (done.returncode, done.stdout) == (0, b"  {}\n")
    assert done.stderr.decode() == f"{NOISE_LINE}\nWelcome!\n\n{'x' * 50}\n"
    assert (tmp_path / f"pid{NOISE}").exists()
    done = guarded(10, "import os\nos.write(1, b'{}\\n')\nwhile True: os.write(1, b'{' * 7)")
    assert done.returncode == EXIT_TOO_LONG and done.stdout.startswith(b"{}\n") and len(done.stdout) <= 3 + 10
    assert done.stderr.decode() == f"{TOO_LONG} 10 bytes (a line that long without its end); it was stopped\n"


def test_a_server_stopped_for_a_long_line_takes_what_it_started_with_it(tmp_path):
    import os
    import subprocess

    from engine.mcp.guard import EXIT_TOO_LONG
    from engine.mcp.hub import GUARD
    from tests.support.mcp_helpers import alive, wait_gone

    script = ("import os, subprocess, sys\n"
              "helper = subprocess.Popen(['sleep', '600'], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              f"open({str(tmp_path / 'helper')!r}, 'w').write(str(helper.pid))\n"
              "while True: os.write(1, b'{' * 7)\n")
    done = subprocess.run([sys.executable, str(GUARD), str(os.getpid()), str(tmp_path / "pid"), "10", sys.executable, "-c", script],
                          input=b"", capture_output=True, timeout=60)
    helper = int((tmp_path / "helper").read_text())
    try:
        assert done.returncode == EXIT_TOO_LONG
        assert wait_gone(helper)
    finally:
        if alive(helper):
            os.kill(helper, 9)
