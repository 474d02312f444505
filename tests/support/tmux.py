"""A private tmux server per test (its own socket, never the default one) and the cockpit started in it."""


from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

import pytest

from tests.support.cli import installed_agent_tui


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

    def wait_given_back(self, timeout: float = 10.0) -> None:
        """Wait until tmux sees the alternate screen off: it reads the pane's output on its own
        time, so the program may have exited before tmux has read its last bytes."""
        deadline = time.monotonic() + timeout
        while self("display-message", "-p", "-t", "cockpit", "#{alternate_on}").strip() != "0":
            if time.monotonic() > deadline:
                raise AssertionError(f"the terminal was not given back within {timeout} s; the screen:\n{self.screen()}")
            time.sleep(0.05)

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

    def wait_for_all(self, *texts: str, timeout: float = 20.0) -> str:
        """The first screen that shows every one of `texts`. A frame reaches the terminal in
        parts: the first screen with one of them may be captured before the rest is drawn."""
        return self.wait_until(lambda screen: all(text in screen for text in texts), f"{texts!r} did not all appear", timeout)

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





def start_cockpit(tmux: Tmux, tmp_path: Path, width: int, height: int) -> Path:
    """The cockpit on the default run in a `width`x`height` pane; its transcript path."""
    out = tmp_path / "run.jsonl"
    command = (
        f"env -u COLUMNS -u LINES TERM=xterm-256color {shlex.quote(installed_agent_tui())} "
        f"run support --out {shlex.quote(str(out))}"
    )
    tmux("new-session", "-d", "-s", "cockpit", "-x", str(width), "-y", str(height), "sleep 600")
    tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
    size = tmux("display-message", "-p", "-t", "cockpit", "#{pane_width}x#{pane_height}").strip()
    assert size == f"{width}x{height}"
    tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, tmp_path / "rc"))
    return out


def quit_cockpit(tmux: Tmux, tmp_path: Path) -> None:
    tmux.quit_unfinished(tmp_path / "rc")


def wait_text_gone(tmux: Tmux, text: str, timeout: float = 20.0) -> str:
    return tmux.wait_until(lambda screen: text not in screen, f"{text!r} still on the screen", timeout)



def start_command(tmux: Tmux, tmp_path: Path, args: str, size: tuple[int, int] = (120, 40)) -> Path:
    """Run `agent-tui ARGS` in the session `cockpit`; the file its exit status goes to."""
    home = tmp_path / "home"
    command = (
        f"env -u COLUMNS -u LINES AGENT_TUI_HOME={shlex.quote(str(home))} TERM=xterm-256color "
        f"{shlex.quote(installed_agent_tui())} {args}"
    )
    tmux("new-session", "-d", "-s", "cockpit", "-x", str(size[0]), "-y", str(size[1]), "sleep 600")
    tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
    rc_file = tmp_path / "rc"
    tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, rc_file))
    return rc_file
