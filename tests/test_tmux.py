"""The installed `agent-tui` in a real terminal: tmux runs it, sends keys, reads the screen.

Needs tmux (CI installs it); without it this test fails rather than skips, so a
missing terminal never passes silently.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from tests.support.tmux import Tmux, installed_agent_tui, recording_exit

pytestmark = pytest.mark.tmux


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
    tmux.wait_for_all("Approve open_return_request", "irreversible")
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
    tmux.wait_for_all("ended: answer", "R-1")
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
