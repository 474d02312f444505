"""The installed `agent-tui` in an 80x24 (and a 40x10) terminal under tmux."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.tmux import Tmux
from tests.support.tmux import quit_cockpit, start_cockpit, wait_text_gone

pytestmark = pytest.mark.tmux


def event_types(path: Path) -> list[str]:
    return [json.loads(line)["type"] for line in path.read_text().splitlines() if line.strip()]


def test_one_step_at_80x24_shows_the_action_whole_and_help_and_quit(tmux: Tmux, tmp_path: Path) -> None:
    start_cockpit(tmux, tmp_path, 80, 24)
    tmux.wait_for("n step")
    tmux.keys("n")
    tmux.wait_for("1187 — delivered")

    def drawn(screen: str) -> bool:  # the step's action and the whole footer (a frame is drawn in parts)
        lines = screen.splitlines()
        return ("c continue" in screen and any("Action    get_order_status" in line for line in lines)
                and bool(lines) and all(key in lines[-1] for key in ("? help", "q quit", "n step")))

    screen = tmux.wait_until(drawn, "the paused step and its footer did not appear")
    lines = screen.splitlines()
    assert any('Action    get_order_status(order_id="1187")' in line for line in lines), screen
    footer = lines[-1]
    assert "? help" in footer and "q quit" in footer and "n step" in footer, footer
    quit_cockpit(tmux, tmp_path)


def test_enter_in_the_edit_dialog_runs_nothing(tmux: Tmux, tmp_path: Path) -> None:
    out = start_cockpit(tmux, tmp_path, 80, 24)
    tmux.wait_for("n step")
    tmux.keys("n")
    tmux.wait_for("1187 — delivered")
    tmux.keys("n")
    tmux.wait_for("Approve open_return_request")
    tmux.keys("e")
    tmux.wait_for("Edit the arguments of")
    tmux.keys("Enter")
    tmux.wait_for("ctrl+r runs with these")
    # The second Enter must run nothing: after leaving the dialog the call still waits,
    # which a run of it would have answered.
    tmux.keys("Enter")
    tmux.keys("Escape")
    screen = tmux.wait_until(lambda s: "Edit the arguments of" not in s and "awaiting approval" in s, "the call is not pending any more")
    assert "R-1" not in screen, screen
    assert "approval_decided" not in event_types(out)
    quit_cockpit(tmux, tmp_path)
    assert "approval_decided" not in event_types(out) and "R-1" not in out.read_text()


def test_save_a_copy_onto_an_existing_file_asks_and_enter_keeps_it(tmux: Tmux, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text("another run\n")
    start_cockpit(tmux, tmp_path, 80, 24)
    tmux.wait_for("n step")
    tmux.keys("n")
    tmux.wait_for("1187 — delivered")
    tmux.keys("s")
    tmux.wait_for("Save a copy of the transcript")
    tmux.keys("C-u")
    wait_text_gone(tmux, "run-copy.jsonl")
    tmux.keys("-l", str(other))
    tmux.wait_for("other.jsonl")
    tmux.keys("Enter")
    tmux.wait_for("already exists")
    tmux.keys("Enter")
    tmux.wait_for("Kept")
    assert other.read_text() == "another run\n"
    tmux.keys("Escape")
    wait_text_gone(tmux, "Save a copy of the transcript")
    quit_cockpit(tmux, tmp_path)
    assert other.read_text() == "another run\n"


def test_40x10_shows_the_too_small_screen(tmux: Tmux, tmp_path: Path) -> None:
    start_cockpit(tmux, tmp_path, 40, 10)
    tmux.wait_until(lambda screen: "terminal too small" in screen and "needs at least 60x16" in screen.replace("\n", " "),
                    "the too-small notice did not appear whole")
    tmux("resize-window", "-t", "cockpit", "-x", "80", "-y", "24")
    tmux.wait_for("n step")
    assert "terminal too small" not in tmux.screen()
    quit_cockpit(tmux, tmp_path)
