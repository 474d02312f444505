"""Pictures of the runs screen. Regenerate with `--snapshot-update` and look at every
changed SVG before accepting it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input

import scenarios
from engine.sessions.run import new_run
from tui.screens.runs import RunsApp, RunsScreen

START = 1_790_000_000.0


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder `runs` (a relative path, so the picture names no temporary folder) of five
    runs a minute apart and one file that is not a transcript; times shown in UTC."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    folder = Path("runs")
    folder.mkdir()
    made = [("calculator", True), ("support", False), ("support", True), ("research", True), ("library", True)]
    for n, (name, finish) in enumerate(made):
        at = START + 60 * n
        run = new_run(scenarios.get(name), None, None, out=folder / f"{n}-{name}.jsonl", approve="all",
                      interactive=not finish, clock=lambda at=at: at)
        run.engine.run() if finish else run.engine.step()
        run.close()
    (folder / "notes.txt").write_text("not a run\n")
    os.utime(folder / "notes.txt", (START - 60, START - 60))  # listed by its file's time: before the runs
    yield folder
    monkeypatch.delenv("TZ")
    time.tzset()


def test_runs_screen_at_80x24(snap_compare, runs: Path) -> None:
    """The runs screen at 80x24: the filter field on top (focused, empty, its hint shown),
    then the table, newest first: library, research, support (answer), support (unfinished,
    resume yes), calculator, and last the unreadable notes.txt in red, "! unreadable".
    Columns when (MM-DD HH:MM, UTC), source, task (cut with …), outcome, steps, resume,
    tokens; under the table the highlighted run's file and its whole task, then the keys."""
    app = RunsApp(runs)

    async def run_before(pilot) -> None:
        for _ in range(200):
            await pilot.pause()
            if isinstance(app.screen, RunsScreen) and app.screen.loaded:
                break
        screen = app.screen
        assert isinstance(screen, RunsScreen) and screen.query_one(DataTable).row_count == 6
        screen.query_one(Input).cursor_blink = False
        names = [Path(s.path).name for s in screen.shown]
        assert names == ["4-library.jsonl", "3-research.jsonl", "2-support.jsonl", "1-support.jsonl", "0-calculator.jsonl", "notes.txt"]
        assert screen.shown[3].resumable and screen.shown[-1].problem is not None
        # the table sizes its columns to their cells on a later refresh: wait for that state
        table = screen.query_one(DataTable)
        widest = {key: max(len(str(row[n])) for row in (table.get_row_at(i) for i in range(table.row_count)))
                  for n, key in enumerate(table.columns)}
        for _ in range(200):
            if all(table.columns[key].content_width >= width for key, width in widest.items()):
                break
            await pilot.pause()
        assert all(table.columns[key].content_width >= width for key, width in widest.items())
        # and then lays itself out again with those widths: wait for that state too
        for _ in range(200):
            if table.virtual_size.width >= sum(widest.values()):
                break
            await pilot.pause()
        assert table.virtual_size.width >= sum(widest.values())
        # and draws its rows with them (a loaded machine draws a frame later): wait for that too
        for _ in range(200):
            if "How many copies" in " ".join(" ".join(table.render_line(y).text.split()) for y in range(table.size.height)):
                break
            await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
