"""The runs screen in a real terminal: `l` in the cockpit, enter on a run, and the replay
viewer runs over the cockpit as `agent-tui replay FILE`; its `q` comes back to the cockpit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.runs import stored_run
from tests.support.tmux import Tmux
from tests.support.tmux import quit_cockpit, start_cockpit, wait_text_gone

pytestmark = pytest.mark.tmux


def test_enter_on_a_run_in_the_cockpit_replays_it_and_q_comes_back(tmux: Tmux, tmp_path: Path) -> None:
    home = Path(os.environ["AGENT_TUI_HOME"])
    (home / "runs").mkdir(parents=True, exist_ok=True)
    stored_run(home / "runs", "calculator-run.jsonl")
    start_cockpit(tmux, tmp_path, 80, 24)  # the tmux server took this test's environment: its AGENT_TUI_HOME
    tmux.wait_for("n step")
    tmux.keys("l")
    tmux.wait_for("calculator-run.jsonl · 1 of 1 runs")
    tmux.keys("Down")
    tmux.wait_for("r resume")  # the table has the focus
    tmux.keys("Enter")
    tmux.wait_for_all("replay · event", "What is 17 * 23")
    tmux.keys("q")
    wait_text_gone(tmux, "replay · event")
    screen = tmux.wait_for("n step")
    assert "1 of 1 runs" not in screen, screen
    quit_cockpit(tmux, tmp_path)
