"""The runs screen: your past runs in a table, filtered as you type, opened to replay,
resume or fork.

The cockpit and the replay viewer push it with `l` (and from the palette);
`agent-tui runs --open` shows it alone (`RunsApp`). The filter field has the
focus first: what you type narrows the table, up and down move in it, enter
replays the highlighted run. In the table (tab or down from the field) enter
replays, `r` resumes and `f` forks, `/` goes back to the field, escape closes.

A choice is a `RunChoice`, whose command is `agent-tui replay FILE`,
`run --resume FILE` or `run --fork FILE`: the standalone screen exits with it
and the command runs it; in the cockpit and the viewer it runs as that command
in a child process while the app is suspended, and the app comes back after.
The folder is read in a worker thread; text from the files is data (Text).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import Worker, WorkerState

from engine.core.text import clean
from tui.exits import UsageError
from tui.cockpit_actions import key_of
from tui.run_guard import ClosesOnSigterm
from tui.run_list import RunChoice, cells, read_folder, runs_folder

SCREEN_COLUMNS = ("when", "source", "task", "outcome", "steps", "resume", "tokens", "cost", "policy", "file")
"""The columns in the order the table shows them: what tells runs apart first at 80 columns."""
TASK_WIDTH = 22
MAX_ROWS = 100
"""The most rows the table holds (the newest matches): filling 10,000 rows takes seconds, and
typing a few letters narrows any folder to what you look for."""
RUNS_KEY = key_of("runs").keys[0]
"""The key that opens this screen in the cockpit and in the replay viewer."""


class RunsScreen(ModalScreen["RunChoice | None"]):
    """The runs of `folder`, newest first; dismissed with what to do with one, or None.

    Modal, so that the keys of the app below (the cockpit's `n`, `a`...) do not reach its run."""

    DEFAULT_CSS = """
    RunsScreen { layout: vertical; align: left top; background: $background; }
    RunsScreen #runs-filter { height: 3; }
    RunsScreen #runs-table { height: 1fr; }
    RunsScreen #runs-detail { height: 2; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("enter", "replay", "replay", priority=True),  # (above the field's and the table's own enter: in the footer too)
        Binding("escape", "close", "close"),
        Binding("q", "close", "close", show=False),
        Binding("r", "resume", "resume"),
        Binding("f", "fork", "fork"),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("down", "to_table", "table", show=False),
    ]

    def __init__(self, folder: Path | None = None, text: str = "", *, given: bool = False, live: Path | None = None) -> None:
        super().__init__()
        self.folder = folder if folder is not None else runs_folder(None)
        self.live = _resolved(live)
        """The file of the run the cockpit below is running: shown as "this run", never resumed."""
        self.given = given
        self.initial = text
        self.summaries: list[Any] = []
        self.shown: list[Any] = []
        self.matching = 0
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Input(self.initial, placeholder="filter: task, scenario, policy, outcome · ↓ the table · enter replays", id="runs-filter")
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        yield Static(Text(f"reading {self.folder}…"), id="runs-detail", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for column in SCREEN_COLUMNS:
            table.add_column(column, key=column)
        self.query_one(Input).focus()
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load(self) -> None:
        """Read the folder off the UI thread; the table fills when it is read."""
        try:
            summaries, problem = read_folder(self.folder, given=self.given), None
        except UsageError as exc:
            summaries, problem = [], str(exc)
        self.app.call_from_thread(self._loaded, summaries, problem)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A reading that failed says so under the table (its worker ends without a word)."""
        if event.state is WorkerState.ERROR and event.worker.name == "load":
            error = event.worker.error
            self.loaded = True
            self.query_one("#runs-detail", Static).update(
                Text(clean(f"{self.folder}: cannot list the runs: {type(error).__name__}: {error}"), style="red"))

    def _loaded(self, summaries: list[Any], problem: str | None) -> None:
        self.summaries, self.loaded = summaries, True
        self.refilter(self.query_one(Input).value)
        if problem is not None:
            self.query_one("#runs-detail", Static).update(Text(clean(problem)))

    @on(Input.Changed, "#runs-filter")
    def _typed(self, event: Input.Changed) -> None:
        if self.loaded:
            self.refilter(event.value)

    def refilter(self, text: str) -> None:
        """Show the runs `text` matches (all of them for no text)."""
        from engine.stored.catalog import matches

        matching = [s for s in self.summaries if not text or matches(s, text)]
        self.matching, self.shown = len(matching), matching[:MAX_ROWS]
        table = self.query_one(DataTable)
        table.clear()
        for n, summary in enumerate(self.shown):
            row = cells(summary, self.folder, short=True)
            if len(row["task"]) > TASK_WIDTH:
                row["task"] = row["task"][: TASK_WIDTH - 1] + "…"
            row["outcome"] = ("! " if summary.problem is not None else "") + (summary.outcome or "unreadable")  # the detail: below
            if self._is_live(summary):
                row["resume"] = "this run"
            marked = {"outcome": "red"} if summary.problem is not None else {}
            table.add_row(*(Text(row[column], style=marked.get(column, "")) for column in SCREEN_COLUMNS), key=str(n))
        self._describe()

    @on(DataTable.RowHighlighted, "#runs-table")
    def _highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._describe()

    def _describe(self) -> None:
        """The two lines under the table: the highlighted run's file (in the folder) and how
        many runs match, then its whole task (or why it cannot be read)."""
        summary = self.highlighted()
        total = f"{self.matching} of {len(self.summaries)} runs"
        if self.matching > len(self.shown):
            total += f" (the newest {len(self.shown)} shown: type to narrow)"
        if summary is None:
            text = Text(f"{total} in {self.folder}" if self.summaries else f"no runs in {self.folder}")
        else:
            text = Text(cells(summary, self.folder)["file"])
            text.append(f" · {total}\n", style="dim")
            detail = f"{summary.outcome}: {summary.detail} · " if summary.detail and summary.detail != "final answer" else ""
            text.append(clean(detail + (summary.problem or summary.task)), style="red" if summary.problem else "")
        self.query_one("#runs-detail", Static).update(text)

    def highlighted(self) -> Any | None:
        table = self.query_one(DataTable)
        if not self.shown or not 0 <= table.cursor_row < len(self.shown):
            return None
        return self.shown[table.cursor_row]

    @on(Input.Submitted, "#runs-filter")
    @on(DataTable.RowSelected, "#runs-table")
    def action_replay(self) -> None:
        self._choose("replay")

    def action_resume(self) -> None:
        summary = self.highlighted()
        if summary is not None and self._is_live(summary):
            self.notify("This is the run the cockpit is running: close this list (escape) to go on with it.", markup=False)
            return
        if summary is not None and not summary.resumable:
            why = "it ended" if summary.outcome not in ("", "unfinished") else (summary.problem or "its world is elsewhere")
            self.notify(clean(f"This run cannot be resumed: {why}. Fork it (f) or replay it (enter)."), markup=False, severity="warning")
            return
        self._choose("resume")

    def action_fork(self) -> None:
        self._choose("fork")

    def _is_live(self, summary: Any) -> bool:
        return self.live is not None and summary.run is None and _resolved(Path(summary.path)) == self.live

    def _choose(self, action: str) -> None:
        summary = self.highlighted()
        if summary is None:
            return
        if summary.problem is not None and not summary.outcome:
            self.notify(clean(summary.problem), title="Cannot open this file", severity="error", markup=False)
            return
        self.dismiss(RunChoice(action, summary.path, summary.run))

    def action_filter(self) -> None:
        self.query_one(Input).focus()

    def action_to_table(self) -> None:
        self.query_one(DataTable).focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The filter field types r, f and /; they act on the table once it has the focus.
        if action in ("resume", "fork", "filter") and isinstance(self.focused, Input):
            return False
        return True


def run_elsewhere(app: App[Any], argv: Sequence[str]) -> int | None:
    """Run `agent-tui ARGV` in a child process with the app suspended; its exit code, or
    None when this terminal cannot be handed over (the app runs headless)."""
    from textual.app import SuspendNotSupported

    command = [sys.executable, "-m", "tui.cli", *argv]
    try:
        with app.suspend():
            code = subprocess.call(command)
            if code not in (0, 3, 4, 5):  # a refusal or a usage error: keep its message on screen
                print(f"\nagent-tui {' '.join(argv)} exited with {code}; press enter to go back", file=sys.stderr)
                try:
                    input()
                except EOFError:
                    pass
            return code
    except SuspendNotSupported:
        return None


def _resolved(path: Path | None) -> Path | None:
    try:
        return None if path is None else path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return path


def open_runs(app: App[Any], live: Path | None = None) -> None:
    """Push the runs screen on `app` (the cockpit, the viewer; `live`: the file of the cockpit's
    run); a choice runs as its command."""

    def chosen(choice: RunChoice | None) -> None:
        if choice is None:
            return
        code = run_elsewhere(app, choice.argv())
        if code is None:
            app.notify(clean(f"Run it from a terminal: agent-tui {' '.join(choice.argv())}"), markup=False)

    app.push_screen(RunsScreen(live=live), chosen)


class RunsCommands(Provider):
    """The palette's entry for the runs screen, in the cockpit and the viewer."""

    async def search(self, query: str) -> Hits:
        title, help_text = "Your runs", "The runs in the data folder: replay, resume or fork one"
        score = self.matcher(query).match(title)
        if score > 0:
            yield Hit(score, self.matcher(query).highlight(title), lambda: open_runs(self.app), help=help_text)

    async def discover(self) -> Hits:
        yield Hit(1.0, "Your runs", lambda: open_runs(self.app), help="The runs in the data folder: replay, resume or fork one")


class RunsApp(ClosesOnSigterm, App["RunChoice | None"]):
    """`agent-tui runs --open`: the runs screen alone; exits with the operator's choice."""

    TITLE = "agent-tui runs"

    def __init__(self, folder: Path, text: str = "", *, given: bool = False) -> None:
        super().__init__()
        self.folder, self.text, self.given = folder, text, given

    def on_mount(self) -> None:
        self.push_screen(RunsScreen(self.folder, self.text, given=self.given), self.exit)
