"""Leaving the cockpit and the replay viewer: q, Ctrl+C and Ctrl+Q ask while the run can go on,
a run left unfinished says how to resume it and exits with its own code, `--version`."""

from __future__ import annotations

import shlex
from argparse import Namespace
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from textual.notifications import Notify
from textual.widgets import Input, Static
from textual.widgets.input import Selection

import scenarios
from engine.sessions.run import new_run
from engine.stored.replay import Timeline
from tests.support.cockpit_worlds import settle, support_run
from tests.support.tmux import Tmux
from tests.support.tmux import start_cockpit
from tui.app import CockpitApp
from tui.cli.stops import resume_command
from tui.exits import EXIT_OK, EXIT_UNFINISHED
from tui.layout import TooSmallScreen
from tui.replay_app import ReplayApp
from tui.screens.approval import ApprovalScreen
from tui.screens.dialogs import ConfirmScreen

SIZE = (120, 40)


def notifications(messages: list[object]) -> list[str]:
    return [str(m.notification.message) for m in messages if isinstance(m, Notify)]


async def keys(pilot, *names: str) -> None:
    """Press each key in turn, waiting for what it started (an engine step, a dialog)."""
    for name in names:
        await pilot.press(name)
        await settle(pilot)


def question(app: CockpitApp) -> str:
    screen = app.screen
    assert isinstance(screen, ConfirmScreen), f"no question on the screen: {screen!r}"
    return str(screen.query_one(Static).content)


@pytest.mark.anyio
@pytest.mark.parametrize("key", ["q", "ctrl+c", "ctrl+q"])
async def test_each_quit_key_asks_while_the_run_can_go_on_and_y_leaves_it_unfinished(tmp_path: Path, key: str) -> None:
    app = CockpitApp(support_run(tmp_path))
    messages: list[object] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await keys(pilot, "n", key)
        assert "resumable" in question(app)
        assert not notifications(messages), "Textual's own 'press ctrl+q to quit' came instead"
        await pilot.press("y")
        await pilot.pause()
    assert app.return_code == EXIT_UNFINISHED
    assert app.run_.engine.state.ended is None


@pytest.mark.anyio
async def test_n_at_the_question_goes_back_to_the_approval_it_came_from(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "n", "n")
        assert isinstance(app.screen, ApprovalScreen)
        await keys(pilot, "ctrl+c")
        assert "resumable" in question(app)
        await keys(pilot, "n")
        assert isinstance(app.screen, ApprovalScreen) and app.is_running
        await keys(pilot, "a", "n")
        assert app.run_.engine.state.ended is not None


@pytest.mark.anyio
async def test_a_second_quit_key_at_the_question_quits(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "ctrl+c")
        assert "resumable" in question(app)
        await keys(pilot, "ctrl+c")
    assert app.return_code == EXIT_UNFINISHED


@pytest.mark.anyio
async def test_ctrl_c_copies_text_selected_in_an_input_instead(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "s")
        field = app.screen.query_one("#save-path", Input)
        field.select_all()
        await keys(pilot, "ctrl+c")
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.clipboard == field.value
        field.selection = Selection.cursor(0)
        await keys(pilot, "ctrl+c")
        assert "resumable" in question(app)


@pytest.mark.anyio
async def test_a_run_that_ended_quits_at_once_with_its_outcome_code(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "n", "n", "a", "n")
        assert app.run_.engine.state.ended.outcome == "answer"
        await keys(pilot, "ctrl+c")
        assert not app.is_running
    assert app.return_code == EXIT_OK


@pytest.mark.anyio
async def test_a_quit_key_on_the_too_small_screen_leaves_unfinished_without_a_question(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await keys(pilot, "ctrl+c")
        assert not app.is_running
    assert app.return_code == EXIT_UNFINISHED


@pytest.mark.anyio
async def test_ctrl_c_quits_the_replay_viewer_as_q_does(tmp_path: Path) -> None:
    path = tmp_path / "support.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    run.engine.run()
    run.close()
    app = ReplayApp(Timeline.open(path))
    messages: list[object] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not notifications(messages), "Textual's own 'press ctrl+q to quit' came instead"
        assert not app.is_running


def test_the_resume_command_quotes_the_path_and_gives_again_what_the_run_needs(tmp_path: Path) -> None:
    path = tmp_path / "my runs" / "it's.jsonl"
    path.parent.mkdir()
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    run.close()
    assert resume_command(run) == f"agent-tui run --resume {shlex.quote(str(path))}"
    plain = Namespace(scenario="support", config=None, mcp=[], mcp_url=[])
    assert resume_command(run, plain) == resume_command(run)
    given = Namespace(
        scenario="worlds/my world.py",
        config="my config.toml",
        mcp=["npx -y @modelcontextprotocol/server-filesystem /notes"],
        mcp_url=["https://me:hunter2@tools.example/mcp?key=k"],
    )
    command = resume_command(run, given)
    assert shlex.split(command) == [
        "agent-tui", "run", "worlds/my world.py", "--config", "my config.toml",
        "--mcp", "npx -y @modelcontextprotocol/server-filesystem /notes",
        "--mcp-url", "https://tools.example/mcp", "--resume", str(path),
    ]
    assert "hunter2" not in command


def test_version_prints_the_installed_version_and_exits_0() -> None:
    done = subprocess.run([sys.executable, "-m", "tui.cli", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"agent-tui {version('agent-tui')}\n"
    assert version("agent-tui") == "0.1.0"


@pytest.mark.tmux
def test_quitting_an_unfinished_run_says_how_to_resume_it_and_exits_6(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    out = start_cockpit(tmux, tmp_path, 80, 24)
    tmux.wait_for("n step")
    tmux.keys("n")
    tmux.wait_for("1187 — delivered")
    tmux.keys("C-c")
    tmux.wait_for("resumable")
    tmux.keys("y")
    assert tmux.wait_for_exit(tmp_path / "rc") == str(EXIT_UNFINISHED)
    tmux.wait_for("unfinished:")
    lines = tmux("capture-pane", "-p", "-J", "-t", "cockpit").splitlines()  # -J: a wrapped line whole
    assert f"unfinished: resume with agent-tui run --resume {shlex.quote(str(out))}" in lines, lines
    assert '"run_ended"' not in out.read_text()
