"""The runs screen: `l` in the cockpit and the viewer (and the palette) opens it, typing
filters it, enter replays the run, `r` resumes and `f` forks it as `agent-tui run` does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input

import scenarios
from engine.sessions.run import new_run
from engine.stored.replay import Timeline
from tests.support.cockpit_worlds import fixed_clock
from tests.support.runs import stored_run
from tui.app import CockpitApp
from tui.cli import main
from tui.replay_app import ReplayApp
from tui.run_list import RunChoice
from tui.screens import runs as runs_screen
from tui.screens.runs import RunsApp, RunsScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder holding a finished calculator run, an unfinished support run and a finished one."""
    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path / "home"))
    runs = tmp_path / "home" / "runs"
    runs.mkdir(parents=True)
    stored_run(runs, "calc.jsonl", "calculator", at=1_790_000_000)
    stored_run(runs, "open.jsonl", "support", at=1_790_000_100, finish=False)
    stored_run(runs, "done.jsonl", "support", at=1_790_000_200)
    return runs


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The commands the screen runs beside the app (instead of a child process)."""
    commands: list[list[str]] = []
    monkeypatch.setattr(runs_screen, "run_elsewhere", lambda app, argv: commands.append(list(argv)) or 0)
    return commands


async def _shown(app, pilot) -> RunsScreen:
    for _ in range(200):
        await pilot.pause()
        if isinstance(app.screen, RunsScreen) and app.screen.loaded:
            return app.screen
    raise AssertionError(f"the runs screen did not show: {app.screen!r}")


async def test_l_in_the_cockpit_opens_the_runs_filter_narrows_and_enter_replays(home: Path, tmp_path: Path, launched) -> None:
    run = new_run(scenarios.get("calculator"), None, None, out=tmp_path / "live.jsonl", interactive=True, clock=fixed_clock)
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("l")
        screen = await _shown(app, pilot)
        table = screen.query_one(DataTable)
        assert table.row_count == 3 and isinstance(app.focused, Input)
        assert [Path(s.path).name for s in screen.shown] == ["done.jsonl", "open.jsonl", "calc.jsonl"]
        await pilot.press(*"calcul")
        await pilot.pause()
        assert table.row_count == 1 and [Path(s.path).name for s in screen.shown] == ["calc.jsonl"]
        await pilot.press("n")  # typed into the filter: never a step of the run below
        await pilot.pause()
        assert table.row_count == 0 and run.engine.state.step == 0
        await pilot.press("backspace", "enter")
        await pilot.pause()
        assert launched == [["replay", str(home / "calc.jsonl")]]
        assert not isinstance(app.screen, RunsScreen) and run.engine.state.step == 0
    run.close()


async def test_the_cockpits_own_run_is_this_run_and_r_does_not_resume_it(home: Path, launched) -> None:
    run = new_run(scenarios.get("calculator"), None, None, out=home / "live.jsonl", interactive=True, clock=lambda: 1_790_000_900)
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("l")
        screen = await _shown(app, pilot)
        table = screen.query_one(DataTable)
        assert Path(screen.shown[0].path).name == "live.jsonl" and screen.shown[0].resumable  # unfinished, as files go
        assert str(table.get_row_at(0)[list(runs_screen.SCREEN_COLUMNS).index("resume")]) == "this run"
        await pilot.press("down", "r")
        await pilot.pause()
        assert launched == [] and app.screen is screen
        assert any("the cockpit is running" in str(n.message) for n in app._notifications)
    run.close()


async def test_in_the_table_r_resumes_f_forks_and_a_finished_run_is_not_resumed(home: Path, launched) -> None:
    app = ReplayApp(Timeline.open(home / "calc.jsonl"))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("l")
        screen = await _shown(app, pilot)
        await pilot.press("down")  # from the filter to the table, on the newest run
        await pilot.pause()
        assert isinstance(app.focused, DataTable) and Path(screen.highlighted().path).name == "done.jsonl"
        await pilot.press("r")
        await pilot.pause()
        assert launched == [] and app.screen is screen  # it ended: said, not tried
        assert any("cannot be resumed" in str(n.message) for n in app._notifications)
        await pilot.press("down", "r")
        await pilot.pause()
        assert launched == [["run", "--resume", str(home / "open.jsonl")]]
        await pilot.press("l")
        screen = await _shown(app, pilot)
        await pilot.press("down", "down", "down", "f")
        await pilot.pause()
        assert launched[-1] == ["run", "--fork", str(home / "calc.jsonl")]


async def test_the_table_holds_the_newest_matches_up_to_its_limit_and_says_so(home: Path, monkeypatch) -> None:
    monkeypatch.setattr(runs_screen, "MAX_ROWS", 2)
    app = RunsApp(home)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await _shown(app, pilot)
        assert screen.query_one(DataTable).row_count == 2 and [Path(s.path).name for s in screen.shown] == ["done.jsonl", "open.jsonl"]
        assert "3 of 3 runs" in str(screen.query_one("#runs-detail").render()) and "the newest 2 shown" in str(screen.query_one("#runs-detail").render())
        await pilot.press(*"calc")
        await pilot.pause()
        assert screen.query_one(DataTable).row_count == 1 and "the newest" not in str(screen.query_one("#runs-detail").render())


async def test_the_palette_offers_your_runs(home: Path, launched) -> None:
    app = ReplayApp(Timeline.open(home / "calc.jsonl"))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"your runs")
        for _ in range(100):
            await pilot.pause()
            if app.screen.query("CommandList Option") or len(app.screen.query("CommandList")) and app.screen.query_one("CommandList").option_count:
                break
        await pilot.press("enter")
        screen = await _shown(app, pilot)
        assert screen.query_one(DataTable).row_count == 3


async def test_a_task_with_markup_and_controls_is_shown_as_data(tmp_path: Path) -> None:
    path = stored_run(tmp_path, "a.jsonl", "calculator", at=1_790_000_000)
    head, _, rest = path.read_bytes().partition(b"\n")
    header = json.loads(head)
    header["task_text"] = "[/] [bold]pay\x1b[2J now"
    path.write_bytes(json.dumps(header).encode() + b"\n" + rest)
    (tmp_path / "bad.jsonl").write_bytes(b"[/]\x1b]0;x\x07\n")
    app = RunsApp(tmp_path)
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await _shown(app, pilot)
        table = screen.query_one(DataTable)
        tasks = {str(table.get_row_at(i)[2]) for i in range(table.row_count)}
        assert "[/] [bold]pay now" in tasks
        assert not any("\x1b" in t for t in tasks)


def test_runs_open_replays_the_run_chosen_as_agent_tui_replay_does(home: Path, monkeypatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(RunsApp, "run", lambda self: RunChoice("replay", str(home / "done.jsonl")))
    monkeypatch.setattr("tui.cli.replay.open_replay", lambda timeline, at=None: opened.append(timeline.path) or 0)
    assert main(["runs", "--open"]) == 0
    assert [Path(p).name for p in opened] == ["done.jsonl"]


def test_runs_open_without_a_terminal_says_so(home: Path, capsys) -> None:
    assert main(["runs", "--open"]) == 2
    assert "needs a terminal" in capsys.readouterr().err


def test_a_choice_is_the_command_that_does_it() -> None:
    assert RunChoice("replay", "f.jsonl").argv() == ["replay", "f.jsonl"]
    assert RunChoice("replay", "f.jsonl", 2).argv() == ["replay", "f.jsonl", "--run", "2"]
    assert RunChoice("resume", "f.jsonl").argv() == ["run", "--resume", "f.jsonl"]
    assert RunChoice("fork", "f.jsonl", 2).argv() == ["run", "--fork", "f.jsonl", "--run", "2"]


async def test_a_run_with_a_start_no_date_names_is_listed_with_the_rest(home: Path) -> None:
    """A start time past the year 9999 once stopped the table from filling ("reading..." for good)."""
    head, _, rest = (home / "calc.jsonl").read_bytes().partition(b"\n")
    header = json.loads(head)
    header["started_at"] = 1e300
    (home / "odd.jsonl").write_bytes(json.dumps(header).encode() + b"\n" + rest)
    app = RunsApp(home)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await _shown(app, pilot)
        assert screen.query_one(DataTable).row_count == 4
        assert "odd.jsonl" in {Path(s.path).name for s in screen.shown}


async def test_a_folder_whose_reading_fails_says_so_instead_of_reading_on(home: Path, monkeypatch) -> None:
    def failing(folder: Path, *, given: bool) -> list:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(runs_screen, "read_folder", failing)
    app = RunsApp(home)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await _shown(app, pilot)
        detail = str(screen.query_one("#runs-detail").render())
        assert "cannot list the runs: RuntimeError: the disk went away" in detail and "…" not in detail


async def test_the_footer_offers_enter_to_replay_from_the_filter_and_the_table(home: Path, launched) -> None:
    """The field's and the table's own enter once hid the screen's from the footer."""
    app = RunsApp(home)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await _shown(app, pilot)
        for focus in ("#runs-filter", "#runs-table"):
            screen.query_one(focus).focus()
            await pilot.pause()
            shown = {b.binding.action for b in screen.active_bindings.values() if b.binding.show}
            assert "replay" in shown, (focus, shown)
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value is not None and app.return_value.action == "replay"
