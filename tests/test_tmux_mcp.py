"""The installed `agent-tui` under tmux (a private socket) with MCP servers: the reference
filesystem server driven by a scripted policy (step, pause at write_file, approve, the file
exists), a run started without a task asks for one, and quit mid-call leaves no server."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.support.mcp_helpers import NOTES_SCENARIO, SERVER, filesystem_bin, notes_command, read_pid, trusted_flags, wait_gone
from tests.support.tmux import Tmux
from tests.support.tmux import start_command

pytestmark = pytest.mark.tmux


def test_filesystem_server_step_pause_approve(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "notes.txt").write_text("first note\n")
    rc_file = start_command(
        tmux, tmp_path,
        f"run {shlex.quote(NOTES_SCENARIO)} --task files --policy files --option dir={shlex.quote(str(folder))} "
        f"{shlex.join(trusted_flags(tmp_path, 'filesystem', filesystem_bin(), str(folder)))}",
    )
    # the tool panel groups the server's tools; the header names the server's log
    tmux.wait_for_all("n step", "── filesystem", "write_file", "mcp: filesystem log: ", timeout=60)
    tmux.keys("n")
    tmux.wait_for("[FILE] notes.txt")
    tmux.keys("n")
    tmux.wait_for("Approve write_file")
    assert not (folder / "hello.txt").exists()
    tmux.keys("a")
    tmux.wait_for("Successfully wrote")
    assert (folder / "hello.txt").read_text() == "hello from agent-tui\n"
    tmux.quit_unfinished(rc_file)


def test_no_task_is_asked_for_at_80x24(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "run.jsonl"
    rc_file = start_command(tmux, tmp_path, f"run --mcp {shlex.quote(notes_command())} --out {shlex.quote(str(out))}", size=(80, 24))
    tmux.wait_for("What should the agent do?", timeout=60)
    tmux.keys("-l", "list my notes")
    tmux.keys("Enter")
    # The typed text shows in the form before Enter is read: wait for the form to close.
    tmux.wait_until(
        lambda s: "list my notes" in s and "What should the agent do?" not in s and "no task yet" not in s,
        "the task was not taken",
        timeout=60,
    )
    tmux.quit_unfinished(rc_file)
    assert json.loads(out.read_text().splitlines()[0])["task_text"] == "list my notes"


def test_quit_during_a_call_leaves_no_server(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    pidfile = tmp_path / "server.pid"
    rc_file = start_command(
        tmux, tmp_path,
        f"run {shlex.quote(NOTES_SCENARIO)} --task slow --policy slow {shlex.join(trusted_flags(tmp_path, 'notes', sys.executable, SERVER, '--pidfile', str(pidfile)))}",
    )
    tmux.wait_for("n step", timeout=60)
    server = read_pid(pidfile)
    tmux.keys("n")
    tmux.wait_for("running")
    tmux.quit_unfinished(rc_file)
    assert wait_gone(server), f"server {server} outlived the cockpit"
