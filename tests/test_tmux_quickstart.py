"""The README's quick start, walked as written, in an 80x24 terminal under tmux.

The first command of the quick start ends in the installed `agent-tui` with no
arguments; the prose after it names the keys to press and what the screen shows.
This test reads both from README.md, so a quick start that drifts from the
program fails here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.support.tmux import Tmux, installed_agent_tui, recording_exit

pytestmark = pytest.mark.tmux

README = Path(__file__).resolve().parent.parent / "README.md"


def quick_start() -> tuple[str, str]:
    """The quick start's first shell command and the prose that follows it."""
    text = README.read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    command, prose = re.search(r"```sh\n(.+?)\n```\n(.+?)\n\n", section, re.S).groups()
    return command, prose


def test_the_quick_start_command_ends_in_the_cockpit_on_its_default() -> None:
    command, _ = quick_start()
    assert command.split(" && ")[-1] == ".venv/bin/agent-tui", command


def test_the_quick_start_as_written_at_80x24(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    _, prose = quick_start()
    for promise in ("`n` to step", "`a` approves", "`q` quits", "open_return_request"):
        assert promise in prose, f"the quick start no longer says {promise!r}"

    home = tmp_path / "home"
    command = f"env -u COLUMNS -u LINES AGENT_TUI_HOME={shlex.quote(str(home))} TERM=xterm-256color {shlex.quote(installed_agent_tui())}"
    tmux("new-session", "-d", "-s", "cockpit", "-x", "80", "-y", "24", "sleep 600")
    tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
    rc_file = tmp_path / "rc"
    tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, rc_file))

    tmux.wait_for_all("n step", "transcript", "steps")  # the transcript, and the gauges in their strip
    tmux.keys("n")
    tmux.wait_for("1187 — delivered")
    tmux.keys("n")
    tmux.wait_for("Approve open_return_request")  # step 2 pauses before the irreversible call
    tmux.keys("a")
    tmux.wait_for("R-1 for 1187")
    tmux.keys("n")
    tmux.wait_for("ended: answer")
    tmux.keys("q")
    assert tmux.wait_for_exit(rc_file) == "0"

    saved = list((home / "runs").glob("*.jsonl"))
    assert len(saved) == 1
    # "its path is printed when you quit" (Your runs): on the terminal once the app has left it
    # (the program has exited, so this screen is final; -J joins the lines a long path wrapped,
    # -S -100 takes the rows scrolled above the pane too)
    assert str(saved[0]) in tmux("capture-pane", "-p", "-J", "-S", "-100", "-t", "cockpit")
