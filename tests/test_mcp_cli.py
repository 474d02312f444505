"""`agent-tui run --mcp / --mcp-url / -t` end to end: the reference filesystem server (npm,
pinned, installed by .ci/run), start faults, resume, and no server left behind by PID."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, call, calls, say
from tests.support.mcp_helpers import NOTES_SCENARIO, ROOT, SERVER, alive, filesystem_bin, notes_command, read_pid, trusted_flags, wait_gone


def agent_tui(*argv: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *argv], capture_output=True, text=True, timeout=timeout, cwd=kw.pop("cwd", ROOT),
        stdin=subprocess.DEVNULL, **kw,
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "files"
    root.mkdir()
    (root / "notes.txt").write_text("first note\n")
    return root


def fs_run(folder: Path, out: Path, approve: str) -> subprocess.CompletedProcess:
    return agent_tui(
        "run", NOTES_SCENARIO, "--task", "files", "--policy", "files", "--option", f"dir={folder}",
        *trusted_flags(out.parent, "filesystem", filesystem_bin(), str(folder)), "--headless", "--approve", approve, "--out", str(out),
    )


def test_filesystem_server_list_runs_write_waits_and_approved_writes(folder, tmp_path):
    out = tmp_path / "run.jsonl"
    done = fs_run(folder, out, "all")
    assert done.returncode == 0, done.stderr
    assert (folder / "hello.txt").read_text() == "hello from agent-tui\n"
    evs = events(out)
    asked = [e["tool"] for e in evs if e["type"] == "approval_requested"]
    assert asked == ["write_file"]  # list_directory and read_text_file ran without asking
    listing = next(e for e in evs if e["type"] == "observation" and e["tool"] == "list_directory")
    assert listing["executed"] and "[FILE] notes.txt" in listing["text"]
    header = json.loads(out.read_text().splitlines()[0])
    assert header["mcp"][0]["name"] == "filesystem" and Path(header["mcp"][0]["log"]).exists()
    assert f"mcp: filesystem (" in done.stdout and "log: " in done.stdout


def test_filesystem_server_rejected_write_leaves_the_folder_unchanged(folder, tmp_path):
    before = snapshot(folder)
    done = fs_run(folder, tmp_path / "run.jsonl", "none")
    assert done.returncode == 0, done.stderr
    assert "REJECTED: approvals are switched off" in done.stdout
    assert snapshot(folder) == before


def test_filesystem_server_driven_by_the_model_policy(folder, tmp_path):
    config = tmp_path / "agent-tui.toml"
    with FakeOpenAI() as server:
        server.add(
            call("list_directory", path=str(folder)),
            calls(("write_file", json.dumps({"path": str(folder / "plan.txt"), "content": "step one\n"}))),
            say("I listed the folder and wrote plan.txt."),
        )
        # the server and the policy come from the configuration: -t alone runs on the configured tools
        config.write_text(
            f'[[policy]]\nname = "local"\nmodel = "fake-model"\nbase_url = "{server.url}"\napi_key_env = "FAKE_KEY"\n\n'
            f'[[mcp]]\nname = "files"\ncommand = "{filesystem_bin()}"\nargs = ["{folder}"]\ntrusted = true\n'
        )
        out = tmp_path / "run.jsonl"
        done = agent_tui(
            "run", "--config", str(config), "-t", f"Write a plan into {folder}",
            "--headless", "--approve", "all", "--out", str(out), env={**os.environ, "FAKE_KEY": "sk-fake"},
        )
        assert done.returncode == 0, done.stderr
        first = server.requests[0]
        offered = {t["function"]["name"] for t in first.body["tools"]}
        assert {"list_directory", "write_file", "edit_file", "move_file"} <= offered
        assert first.headers.get("authorization") == "Bearer sk-fake"
        assert first.messages[-1]["content"].endswith(f"Write a plan into {folder}")
        # the second request carries the listing the server returned
        assert any("[FILE] notes.txt" in (m.get("content") or "") for m in server.requests[1].messages)
    assert (folder / "plan.txt").exists(), done.stdout
    assert (folder / "plan.txt").read_text() == "step one\n"
    asked = [e["tool"] for e in events(out) if e["type"] == "approval_requested"]
    assert asked == ["write_file"]
    header = json.loads(out.read_text().splitlines()[0])
    assert header["policy"] == "local" and [s["name"] for s in header["mcp"]] == ["files"]


def test_start_faults_exit_2_with_a_clear_message(tmp_path):
    missing = agent_tui("run", NOTES_SCENARIO, "--policy", "notes", "--mcp", "agent-tui-no-such-server --flag", "--headless")
    assert missing.returncode == 2
    assert "command not found: agent-tui-no-such-server" in missing.stderr and "Traceback" not in missing.stderr
    broken = agent_tui("run", NOTES_SCENARIO, "--policy", "notes", "--mcp", notes_command("--exit-at-start"), "--headless")
    assert broken.returncode == 2
    assert "MCP server 'mcp_server' exited at start" in broken.stderr and "fatal: refusing to start" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_a_run_of_mcp_tools_needs_a_task_headless(tmp_path):
    done = agent_tui("run", "--mcp", notes_command(), "--headless", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert done.returncode == 2 and "needs a task: give it with --task-text (-t)" in done.stderr


def test_task_text_replaces_the_scenario_task(tmp_path):
    out = tmp_path / "run.jsonl"
    done = agent_tui("run", "support", "-t", "Please check order 1187", "--headless", "--approve", "all", "--out", str(out))
    header = json.loads(out.read_text().splitlines()[0])
    assert (header["task"], header["task_text"]) == ("custom", "Please check order 1187")
    assert "task: Please check order 1187" in done.stdout


def start_slow_run(tmp_path: Path, pidfile: Path, out: Path) -> tuple[subprocess.Popen, int]:
    """A headless run whose first call (slow, 4 s) is running on the test server; returns (process, server PID)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "run", NOTES_SCENARIO, "--task", "slow", "--policy", "slow",
         *trusted_flags(tmp_path, "notes", sys.executable, SERVER, "--pidfile", str(pidfile)), "--headless", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )
    server = read_pid(pidfile)
    deadline = time.monotonic() + 60
    while not (out.exists() and '"tool_started"' in out.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    return proc, server


def test_resume_restarts_the_servers_and_runs_nothing_again(tmp_path):
    out = tmp_path / "run.jsonl"
    proc, server = start_slow_run(tmp_path, tmp_path / "first.pid", out)
    proc.kill()
    proc.wait(30)
    assert wait_gone(server)
    resumed = agent_tui(
        "run", NOTES_SCENARIO, "--resume", str(out), "--headless", "--approve", "all",
        *trusted_flags(tmp_path, "notes", sys.executable, SERVER, "--pidfile", str(tmp_path / "first.pid")),  # the operator gives the server again
    )
    assert resumed.returncode == 0, resumed.stderr
    evs = events(out)
    observed = [(e["tool"], e["executed"], e["text"][:17]) for e in evs if e["type"] == "observation"]
    assert observed == [("slow", False, "UNKNOWN OUTCOME: "), ("list_notes", True, "ideas, todo")]
    assert evs[-1]["type"] == "run_ended" and evs[-1]["outcome"] == "answer"
    shown = agent_tui("show", str(out))  # show needs no server
    assert shown.returncode == 0 and "UNKNOWN OUTCOME" in shown.stdout


def _pids(tmp_path: Path, name: str) -> Path:
    return tmp_path / f"{name}.pid"


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_no_server_outlives_a_signalled_agent_tui(tmp_path, how):
    proc, server = start_slow_run(tmp_path, tmp_path / "server.pid", tmp_path / "run.jsonl")
    try:
        assert alive(server)
        proc.send_signal(getattr(signal, how))
        proc.wait(30)
        assert wait_gone(server), f"server {server} outlived agent-tui ({how})"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_no_server_outlives_a_run_that_stops(tmp_path):
    pidfile = _pids(tmp_path, "stop")
    done = agent_tui(
        "run", NOTES_SCENARIO, "--task", "notes", "--policy", "notes", "--mcp", notes_command("--pidfile", str(pidfile)),
        "--headless", "--out", str(tmp_path / "run.jsonl"),
    )
    assert done.returncode == 2
    assert wait_gone(read_pid(pidfile), 1.0)


def test_mcp_url_streamable_http(tmp_path):
    from tests.support.mcp_helpers import HttpServer

    server = HttpServer()
    try:
        out = tmp_path / "run.jsonl"
        done = agent_tui(
            "run", NOTES_SCENARIO, "--task", "notes", "--policy", "notes", "--mcp-url", server.url,
            "--headless", "--approve", "all", "--out", str(out),
        )
        assert done.returncode == 0, done.stderr
        executed = [e["tool"] for e in events(out) if e["type"] == "observation" and e["executed"]]
        assert executed == ["list_notes", "read_note", "delete_note"]
        header = json.loads(out.read_text().splitlines()[0])
        assert header["mcp"][0]["url"] == server.url and header["mcp"][0]["name"] == "remote"
    finally:
        server.stop()


def test_server_names_from_command_lines_and_urls():
    from engine.mcp.servers import McpServerConfig, server_name, servers_from_flags

    assert server_name(["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]) == "filesystem"
    assert server_name(["/usr/bin/python3", "-u", "tests/support/mcp_server.py"]) == "mcp_server"
    assert server_name(["uvx", "mcp-server-git"]) == "git"
    configured = [McpServerConfig(name="notes", command="x", trusted=True)]
    servers = servers_from_flags(
        configured,
        ["notes", "python3 a/server.py", "python3 b/server.py"],
        ["http://127.0.0.1:9/mcp", "http://[::1]:9/mcp", "https://tools.example.com/mcp"],
    )
    assert [s.name for s in servers] == ["notes", "server", "server-2", "remote", "remote-2", "tools"]
    assert servers[0].trusted and servers[0].source == "default"
