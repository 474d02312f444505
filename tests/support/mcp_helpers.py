"""Starting the test MCP server (tests/support/mcp_server.py) and the reference filesystem server for tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.mcp.servers import McpServerConfig

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")
NOTES_SCENARIO = str(ROOT / "tests" / "data" / "mcp_notes.py")
FILESYSTEM_BIN = ROOT / ".mcp-servers" / "node_modules" / ".bin" / "mcp-server-filesystem"


def notes_server(name: str = "notes", *extra: str, timeout: float = 20.0, trusted: bool = True) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(SERVER, *extra), timeout=timeout, trusted=trusted)


def trusted_flags(folder: Path, name: str, command: str, *args: str) -> list[str]:
    """The `run` flags of a server the operator trusts (a configuration file written in `folder`):
    only then are its read-only hints believed."""
    import json

    config = folder / f"{name}.toml"
    config.write_text(f"[[mcp]]\nname = {json.dumps(name)}\ncommand = {json.dumps(command)}\n"
                      f"args = {json.dumps(list(args))}\ntrusted = true\n")
    return ["--config", str(config), "--mcp", name]


def notes_command(*extra: str) -> str:
    return " ".join([sys.executable, SERVER, *extra])


def filesystem_bin() -> str:
    """The reference filesystem server that .ci/run installs (npm, pinned)."""
    if not FILESYSTEM_BIN.exists():
        pytest.fail(
            f"{FILESYSTEM_BIN} is missing: install it with "
            "`npm install --prefix .mcp-servers @modelcontextprotocol/server-filesystem@2026.8.31` (.ci/run does)"
        )
    return str(FILESYSTEM_BIN)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """tests/support/mcp_server.py on streamable HTTP at 127.0.0.1, started and stopped by the test."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process = subprocess.Popen(
            [sys.executable, SERVER, "--http", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the HTTP test server did not start")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


def session_members(session: int) -> list[str]:
    """The command lines of the living processes of session `session` (a zombie is not one)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _, _, sid = stat.read_bytes().rsplit(b")", 1)[1].split()[:4]
            if int(sid) == session and state != b"Z":
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, ValueError):
            continue
    return found


def wait_session_gone(session: int, seconds: float = 20.0) -> list[str]:
    """What is left of session `session` once it is empty (nothing), or after `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := session_members(session)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def read_pid(path: Path, seconds: float = 60.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
    raise AssertionError(f"{path} never got a PID")
