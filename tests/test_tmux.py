"""The installed `agent-tui` in a real terminal: tmux runs it, sends keys, reads the screen.

Needs tmux (CI installs it); without it this test fails rather than skips, so a
missing terminal never passes silently.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

pytestmark = pytest.mark.tmux


class Tmux:
    """One private tmux server (its own socket) with one 120x40 session."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def wait_for_exit(self, rc_file: Path, timeout: float = 30.0) -> str:
        """Wait until the program has exited; its exit status as the wrapping shell saw it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if rc_file.exists() and rc_file.read_text().strip():
                return rc_file.read_text().strip()
            time.sleep(0.1)
        raise AssertionError(f"agent-tui did not exit within {timeout} s; the screen:\n{self.screen()}")

    def quit_unfinished(self, rc_file: Path) -> None:
        """q on a run that can go on: the cockpit asks, y leaves it resumable with exit 6."""
        self.keys("q")
        self.wait_for("resumable")
        self.keys("y")
        assert self.wait_for_exit(rc_file) == "6"

    def __call__(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "cockpit")

    def keys(self, *keys: str) -> None:
        self("send-keys", "-t", "cockpit", *keys)

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        return self.wait_until(lambda screen: text in screen, f"{text!r} did not appear", timeout)

    def wait_until(self, ready: Callable[[str], bool], failure: str, timeout: float = 20.0) -> str:
        """The first screen for which `ready` holds (polled; never a fixed wait)."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if ready(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{failure} within {timeout} s; the screen:\n{screen}")


def recording_exit(command: str, rc_file: Path) -> str:
    """`command` in a shell that writes its exit status to `rc_file` (tmux's own record races)."""
    return f"sh -c {shlex.quote(f'{command}; echo $? > {shlex.quote(str(rc_file))}')}"


@pytest.fixture
def tmux(tmp_path: Path):
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: install it (apt-get install tmux) to run the terminal test")
    server = Tmux(f"agent-tui-test-{os.getpid()}-{tmp_path.name}")
    yield server
    subprocess.run(["tmux", "-L", server.socket, "kill-server"], capture_output=True, timeout=10)


def installed_agent_tui() -> str:
    found = shutil.which("agent-tui", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"the agent-tui console script is not installed next to {sys.executable}: pip install -e .")
    return found


def test_step_to_the_approval_and_approve_in_a_real_terminal(tmux: Tmux, tmp_path: Path) -> None:
    home = tmp_path / "home"
    # A tmux server started under pytest may hand the pane COLUMNS/LINES of 80x24, which
    # would override the real pane size for the app; drop them.
    command = f"env -u COLUMNS -u LINES AGENT_TUI_HOME={shlex.quote(str(home))} TERM=xterm-256color {shlex.quote(installed_agent_tui())}"
    # The pane gets its size first; the app starts in it afterwards (respawn), so it
    # never races tmux's initial resize.
    tmux("new-session", "-d", "-s", "cockpit", "-x", "120", "-y", "40", "sleep 600")
    tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
    assert tmux("display-message", "-p", "-t", "cockpit", "#{pane_width}x#{pane_height}").strip() == "120x40"
    rc_file = tmp_path / "rc"
    tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, rc_file))

    tmux.wait_for("policy: scripted")
    tmux.wait_for("n step")
    tmux.keys("n")
    tmux.wait_for("1187 — delivered")
    tmux.keys("n")
    screen = tmux.wait_for("Approve open_return_request")
    assert "irreversible" in screen
    # Enter must not approve: the key after it opens the edit dialog only while the call
    # is still pending, and the call still waits when that dialog is left.
    tmux.keys("Enter")
    tmux.keys("e")
    assert "R-1" not in tmux.wait_for("Edit the arguments of"), "Enter must not approve"
    tmux.keys("Escape")
    tmux.wait_until(lambda s: "awaiting approval" in s and "Edit the arguments of" not in s, "the call is not pending any more")
    tmux.keys("a")
    tmux.wait_for("R-1 for 1187")
    tmux.keys("n")
    screen = tmux.wait_for("ended: answer")
    assert "R-1" in screen
    tmux.keys("q")
    assert tmux.wait_for_exit(rc_file) == "0"

    runs = list((home / "runs").glob("*.jsonl"))
    assert len(runs) == 1
    lines = runs[0].read_text().splitlines()
    assert '"run_ended"' in lines[-1]


def test_quit_while_a_policy_hangs_leaves_at_once(tmux: Tmux, tmp_path: Path) -> None:
    """A hung policy call without cancel must not keep the cockpit from closing."""
    world = Path(__file__).parent / "data" / "hang_world.py"
    out = tmp_path / "hang.jsonl"
    command = (
        f"env -u COLUMNS -u LINES TERM=xterm-256color {shlex.quote(installed_agent_tui())} "
        f"run {shlex.quote(str(world))} --out {shlex.quote(str(out))}"
    )
    tmux("new-session", "-d", "-s", "cockpit", "-x", "120", "-y", "40", "sleep 600")
    tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
    rc_file = tmp_path / "rc"
    tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, rc_file))
    tmux.wait_for("n step")
    tmux.keys("n")
    tmux.wait_for("running")
    tmux.quit_unfinished(rc_file)
    assert out.read_text().splitlines()[0].startswith('{"type":"header"')
