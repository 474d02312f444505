"""The installed `agent-tui` at 80x24 under tmux: the footer's keys are whole words,
and `f` at the end of a replayed run offers the fork it can make."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import scenarios
from engine.sessions.run import new_run
from tests.support.tmux import Tmux, installed_agent_tui, recording_exit
from tests.support.tmux import quit_cockpit, start_cockpit, wait_text_gone

pytestmark = pytest.mark.tmux

COCKPIT_KEYS = {
    "n step", "c continue", "a approve", "A approve always", "r reject", "e edit", "v review", "b budget",
    "p policy", "h take over", "h hand back", "x abort", "s save", "o expand/fold", "? help", "q quit",
}
REPLAY_KEYS = {
    "←/→ event", "shift+←/→ step", "space play", "f fork", "g go to step", "[/] marker", "/ search", "? help", "q quit",
}


def footer_items(screen: str) -> list[str]:
    """The footer's keys as drawn: the last line, split where two spaces or more part them."""
    return [item for item in re.split(r"\s{2,}", screen.splitlines()[-1].strip()) if item]


def test_the_cockpit_footer_shows_whole_keys_at_80x24(tmux: Tmux, tmp_path: Path) -> None:
    start_cockpit(tmux, tmp_path, 80, 24)
    tmux.wait_for("n step")
    tmux.keys("n")
    tmux.wait_for("1187 — delivered")
    items = footer_items(tmux.wait_for("c continue"))
    assert set(items) <= COCKPIT_KEYS and items[-2:] == ["? help", "q quit"], items
    tmux.keys("n")
    tmux.wait_for("Approve open_return_request")
    tmux.keys("Escape")
    wait_text_gone(tmux, "Approve open_return_request")
    items = footer_items(tmux.wait_for("a approve"))
    assert set(items) <= COCKPIT_KEYS and items[:4] == ["a approve", "A approve always", "r reject", "e edit"], items
    quit_cockpit(tmux, tmp_path)


def test_replay_at_80x24_f_at_the_end_forks_before_the_answer(tmux: Tmux, tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    run = new_run(scenarios.get("library"), None, "good", out=saved)
    run.engine.run()
    run.close()
    command = f"env -u COLUMNS -u LINES TERM=xterm-256color {shlex.quote(installed_agent_tui())} replay {shlex.quote(str(saved))}"
    tmux("new-session", "-d", "-s", "cockpit", "-x", "80", "-y", "24", "sleep 600")
    tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
    tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, tmp_path / "rc"))
    items = footer_items(tmux.wait_for("f fork"))
    assert set(items) <= REPLAY_KEYS and items[:2] == ["←/→ event", "shift+←/→ step"], items
    tmux.keys("End")
    tmux.wait_for("ended: answer")
    tmux.keys("f")
    tmux.wait_for_all("Step 4 is the final answer: fork from the end of step", "step 3 · ×1 · paused · fork point")
    tmux.keys("Escape")
    wait_text_gone(tmux, "Step 4 is the final answer")
    tmux.wait_for("ended: answer")
    tmux.keys("q")
    assert tmux.wait_for_exit(tmp_path / "rc") == "0"
