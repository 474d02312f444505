"""The replay viewer: a saved run, read-only, with the cockpit's panes.

The transcript pane, tool panel, budget gauges (and the grid map) show the
state at the current position, folded from the same events by the same code
as a live run. Keys move through the run event by event or step by step, jump
to markers or to a step, search, play at a chosen speed, and fork: continue
live from the current position with another policy (the observations before
it come from the file; no tool runs again).
"""

from __future__ import annotations

import gc
from functools import partial
from typing import Callable, Iterable

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.events import Resize
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer

from engine.stored.reader import TranscriptError
from engine.stored.markers import Marker
from engine.stored.replay import Timeline
from engine.core.scenario import Scenario
from engine.sessions.run import Run
from engine.core.state import RunState
from engine.core.text import clean
from tui.collector_pace import AfterFrameCollector
from tui.cockpit_actions import FOLD_COMMAND
from tui.exits import Terminated
from tui.keys import QUIT_ON_CTRL_C, quit_or_copy
from tui.layout import fit
from tui.replay_fork import _fork_from, fork_target, imported_fork_policies
from tui.replay_tail import Tail, read_tail
from tui.run_guard import ClosesOnSigterm, sigterm_closes
from tui.screens.dialogs import HelpScreen, PolicyPicker
from tui.screens.runs import RUNS_KEY, RunsCommands, open_runs
from tui.widgets.ask_line import AskLine
from tui.widgets.footer import HELP_AND_QUIT, CockpitFooter
from tui.widgets.header import RunHeader, shown_path
from tui.widgets.run_panes import RunPanes
from tui.widgets.timeline import TimelineBar
from tui.widgets.transcript import FigureColumns, Prefix, TranscriptPane

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
EVENTS_PER_SECOND = 2.0
FOLD_AHEAD = 64
"""A seek at most this many events forward folds them onto a copy of the state
shown, instead of from the timeline's nearest checkpoint (up to
`checkpoint_every` events back): stepping and playing stay quick anywhere."""

REPLAY_HELP = """\
right / left             one event forward / back
shift+right / shift+left  one step forward / back
home / end               the start / the end
up / down, pgup / pgdn   scroll the transcript
g                        go to step N
space                    play / pause
+ / -                    faster / slower
] / [                    next / previous marker (approval, rejection, error, policy swap, budget)
/                        search the text of the run (again: the next match)
f                        fork: continue live from here with a policy you pick; where a fork
                         could do nothing (the end, a final answer), from the nearest point before
o                        expand every folded observation, or fold them again
l                        your runs: open another, resume or fork one
ctrl+p                   every command of this screen, searchable
?                        this help
q / ctrl+c               quit
"""

REPLAY_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("forward", "Next event", "One event forward"),
    ("back", "Previous event", "One event back"),
    ("next_step", "Next step", "The end of this step, or of the next one"),
    ("prev_step", "Previous step", "The end of the step before"),
    ("start", "Start", "The run before its first event"),
    ("end", "End", "The whole run"),
    ("goto", "Go to step", "Show the run up to the end of step N"),
    ("play", "Play", "Play the run event by event"),
    ("pause", "Pause", "Stop playing where the run is"),
    ("next_marker", "Next marker", "The next approval, rejection, error, policy swap or budget"),
    ("prev_marker", "Previous marker", "The marker before"),
    ("search", "Search", "Find a word in the run's text"),
    ("fork", "Fork", "Continue live from here with a policy you pick"),
    FOLD_COMMAND,
)
"""(action, palette title, palette help): the palette offers what the keys do."""


class ReplayScreen(Screen[object]):
    """The viewer's main screen: while `ask_line` asks, the keys are its answer."""

    def __init__(self, ask_line: AskLine) -> None:
        super().__init__(id="replay")
        self.ask_line = ask_line

    def on_key(self, event: events.Key) -> None:
        self.ask_line.take_key(event)

    def on_paste(self, event: events.Paste) -> None:
        self.ask_line.take_paste(event)


class ReplayApp(ClosesOnSigterm, App[object]):
    """Replay one Timeline. Exits with a forked Run when the operator forks.

    `position` and `speed_index` are reactive: setting one redraws the view
    (and a new speed re-times a playing replay).
    """

    position: var[int] = var(0, always_update=True, init=False)
    speed_index: var[int] = var(SPEEDS.index(1.0), init=False)

    CSS_PATH = ["app.tcss", "replay.tcss"]
    TITLE = "agent-tui replay"
    BINDINGS = [
        # One footer key for each pair: `←/→ event` fits where `→ event →  ← ← event` did not.
        Binding("right", "forward", "event", key_display="←/→"),
        Binding("left", "back", "← event", show=False),
        Binding("shift+right", "next_step", "step", key_display="shift+←/→"),
        Binding("shift+left", "prev_step", "← step", show=False),
        Binding("home", "start", "start", show=False),
        Binding("end", "end", "end", show=False),
        Binding("up", "scroll_up", "scroll up", show=False),
        Binding("down", "scroll_down", "scroll down", show=False),
        Binding("pageup", "page_up", "page up", show=False),
        Binding("pagedown", "page_down", "page down", show=False),
        Binding("space", "play", "play"),
        Binding("space", "pause", "pause"),  # (one of the two applies: `check_action`)
        Binding("f", "fork", "fork"),
        Binding("f", "fork_unavailable", "fork", show=False),
        Binding("g", "goto", "go to step"),
        Binding("right_square_bracket", "next_marker", "marker", key_display="[/]"),
        Binding("left_square_bracket", "prev_marker", "← marker", show=False),
        Binding("slash", "search", "search"),
        Binding("plus,equals_sign", "faster", "faster", show=False),
        Binding("minus", "slower", "slower", show=False),
        Binding("o", "toggle_folds", "expand/fold", show=False),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        QUIT_ON_CTRL_C,
        Binding(RUNS_KEY, "runs", "your runs", show=False),
    ]
    COMMANDS = {*App.COMMANDS, RunsCommands}

    def __init__(
        self,
        timeline: Timeline,
        at: int | None = None,
        *,
        fork: Callable[[Timeline, int, str], object] | None = None,
        policy_names: list[str] | None = None,
        scenario: Scenario | None = None,
    ) -> None:
        super().__init__()
        self.timeline = timeline
        self.header = timeline.header
        self.start_at = at
        self.fork_fn = fork
        self.fork_policies = policy_names or []
        self.figures = FigureColumns()
        """The pane's figures of every event the index pass reads, so it counts
        rows without parsing an event again."""
        if timeline.indexed_count == 0:
            timeline.index_hooks.append(self.figures.note)
        self.player: Timer | None = None
        self.query_text = ""
        self.marker_note = ""
        self.state: RunState | None = None
        self.tail: Tail | None = None
        """The last events, shown alone at the end until the index pass has folded the run."""
        self.reading: Timer | None = None
        self.ask_line = AskLine(self._show_question)
        """Go-to-step's and search's question, on the timeline's status line."""
        self.collector = AfterFrameCollector()
        """Collects young objects after frames, not between a key and its frame (tui.collector_pace)."""
        self.scenario = scenario if scenario is not None else _scenario_named(self.header.scenario)

    # -- layout ----------------------------------------------------------------

    def get_default_screen(self) -> Screen[object]:
        return ReplayScreen(self.ask_line)

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield RunPanes(self.header, self.scenario)
        yield TimelineBar(id="timeline")
        yield CockpitFooter((), HELP_AND_QUIT)

    def on_mount(self) -> None:
        pane = self.query_one(TranscriptPane)
        # The pane's own arrow and home/end scrolling would shadow the timeline keys. The
        # main screen may already be under the too-small screen (a first resize comes first).
        pane.can_focus = False
        self.screen_stack[0].set_focus(None)
        for warning in self.timeline.warnings:
            self.notify(clean(warning), title="Loaded with a warning", severity="warning", timeout=10, markup=False)
        fit(self, self.size)
        self.collector.start()
        start = self.start_at or 0
        tail = read_tail(self.timeline) if start >= len(self.timeline) else None
        if tail is not None:
            self._show_tail(tail)
        else:
            self.seek(start)
        if not self.timeline.indexed:
            # after the first frame: the worker holds the GIL most of the time
            self.call_after_refresh(self._index)

    def on_resize(self, event: Resize) -> None:
        fit(self, event.size)

    @work(thread=True, exclusive=True, exit_on_error=False, group="index")
    def _index(self) -> None:
        self.timeline.build_index()
        self.call_from_thread(self._indexed)
        self.timeline.pack()  # held as long as the viewer: compressed, once the whole run is shown

    def _indexed(self) -> None:
        # What indexing made lives as long as the viewer: keep it out of the
        # collector's full passes (a seek would otherwise pause for them).
        gc.collect()
        gc.freeze()
        if self.timeline.errors:  # a bad line: refused, in the words `show` refuses it with
            self.exit(TranscriptError(self.timeline.errors[0]), return_code=2)
            return
        if self.tail is not None:
            self.seek(len(self.timeline))  # the whole run now: every event in the pane, the panels folded
        else:
            self.refresh_view()

    def _show_tail(self, tail: Tail) -> None:
        """The end of the run from its last events alone (see tui.replay_tail); the
        panels folded from the whole run stay hidden until the index pass is done."""
        self.tail = tail
        self.query_one(RunPanes).add_class("-reading")
        self.set_reactive(ReplayApp.position, len(self.timeline))  # no watcher: it would count every event
        self.query_one(TranscriptPane).reset(self.header, tail.events)
        self.refresh_view()
        self.reading = self.set_interval(0.25, self._reading_progress, name="reading")

    def _reading_progress(self) -> None:
        """How far the index pass got, in the status line, while the tail is shown (`seek` stops it)."""
        self.refresh_view()

    # -- moving ----------------------------------------------------------------

    def on_unmount(self) -> None:
        gc.unfreeze()
        self.collector.stop()

    def seek(self, position: int, *, note: str = "") -> None:
        """Show the run after its first `position` events; `note` names the marker jumped to."""
        position = max(0, min(position, len(self.timeline)))
        self.marker_note = note
        if self.tail is not None:
            self.tail = None
            self.query_one(RunPanes).remove_class("-reading")
            if self.reading is not None:
                self.reading.stop()
                self.reading = None
        self.state = self._state_at(position)
        self.position = min(position, len(self.timeline))  # indexing stops at a bad line: the file ends there
        self.call_after_refresh(self.collector.after_frame)

    def _state_at(self, position: int) -> RunState:
        """The folded state after `position` events: from the state shown when it is a
        few indexed events behind, else from the timeline."""
        shown, at = self.state, self.position
        if shown is not None and at < position <= min(at + FOLD_AHEAD, self.timeline.indexed_count):
            state = shown.copy()
            for event in self.timeline.events(at, position):
                state.apply(event)
            return state
        return self.timeline.state_at(position)

    def watch_position(self, position: int) -> None:
        pane = self.query_one(TranscriptPane)
        pane.follow = True  # the event moved to shows at the foot, also after scrolling up to read
        pane.reset(self.header, Prefix(self.timeline, position, self.figures))
        self.refresh_view()

    def refresh_view(self) -> None:
        state, tail = self.state, self.tail
        if tail is not None:
            step, policy, ended = tail.step, tail.policy, tail.ended
        elif state is not None:
            step, policy = state.step, state.policy
            ended = None if state.ended is None else f"{state.ended.outcome} ({state.ended.reason})"
        else:
            return
        total = len(self.timeline)
        where = f"replay · event {self.position}/{total} · step {step}"
        if ended is not None and self.position == total:
            where += f" · ended: {ended}"
        path = shown_path(self.timeline.path) if self.timeline.path is not None else "imported"
        self.query_one(RunHeader).show(
            scenario=self.header.scenario,
            task=self.header.task,
            task_text=self.header.task_text,
            policy=policy,
            state=where,
            state_class="-ended" if self.position == total else "-paused",
            path=path,
        )
        if tail is None and state is not None:
            self.query_one(RunPanes).show_state(state)
        playing = "playing" if self.player is not None else "paused"
        indexed = "" if self.timeline.indexed else f" · indexing {self.timeline.indexed_count}/{total}"
        status = f"event {self.position}/{total} · step {step} · ×{SPEEDS[self.speed_index]:g} · {playing}{indexed}"
        if self.marker_note:
            status += f" · {clean(self.marker_note)}"
        markers = self.timeline.markers() if self.timeline.indexed else []
        self.query_one(TimelineBar).show(position=self.position, total=total, markers=markers, status=status)

    def action_forward(self) -> None:
        self.seek(self.position + 1)

    def action_back(self) -> None:
        self.seek(self.position - 1)

    def action_next_step(self) -> None:
        self.seek(self.timeline.next_step(self.position))

    def action_prev_step(self) -> None:
        self.seek(self.timeline.prev_step(self.position))

    def action_start(self) -> None:
        self.seek(0)

    def action_end(self) -> None:
        self.seek(len(self.timeline))

    def action_next_marker(self) -> None:
        self._seek_marker(self.timeline.next_marker(self.position), "after")

    def action_prev_marker(self) -> None:
        self._seek_marker(self.timeline.prev_marker(self.position), "before")

    def _seek_marker(self, marker: Marker | None, where: str) -> None:
        """Show the run at `marker`, named in the status; None: say there is no marker `where` this point."""
        if marker is None:
            self.notify(f"No marker {where} this point.", markup=False)
            return
        self.seek(marker.position, note=f"{marker.kind}: {marker.label}")

    def action_goto(self) -> None:
        steps = self.timeline.steps()

        def check(value: str) -> str | None:
            if not value.isdigit() or not 0 <= int(value) <= steps:
                return f"a step number from 0 to {steps}"
            return None

        def chosen(value: str | None) -> None:
            if value is not None:
                self.seek(self.timeline.position_after_step(int(value)))

        self.ask_line.ask(f"Go to step (0-{steps}):", chosen, check=check)

    def _show_question(self, line: Text | None) -> None:
        self.query_one(TimelineBar).question = line

    def action_search(self) -> None:
        def chosen(value: str | None) -> None:
            if not value:
                return
            self.query_text = value
            hits = self.timeline.search(value, start=self.position)
            if not hits and self.position > 0:
                hits = self.timeline.search(value, start=0)
            if not hits:
                self.notify(clean(f"No event mentions {value!r}."), markup=False)
                return
            self.seek(hits[0] + 1, note=f"found {value!r}")
            self.query_one(TranscriptPane).reveal(hits[0], value)

        self.ask_line.ask("Search the run:", chosen, value=self.query_text)

    # -- playing ---------------------------------------------------------------

    def action_play(self) -> None:
        if self.player is not None:
            self._stop_playing()
        else:
            if self.position >= len(self.timeline):
                self.seek(0)
            self.player = self.set_interval(1 / (EVENTS_PER_SECOND * SPEEDS[self.speed_index]), self._tick)
            self.refresh_bindings()  # space now pauses
        self.refresh_view()

    def action_pause(self) -> None:
        self._stop_playing()
        self.refresh_view()

    def _stop_playing(self) -> None:
        if self.player is not None:
            self.player.stop()
            self.player = None
            self.refresh_bindings()  # space plays again

    def _tick(self) -> None:
        if self.position >= len(self.timeline):
            self._stop_playing()
            self.refresh_view()
            return
        self.seek(self.position + 1)

    def validate_speed_index(self, index: int) -> int:
        return max(0, min(len(SPEEDS) - 1, index))

    def watch_speed_index(self, index: int) -> None:
        if self.player is not None:
            self._stop_playing()
            self.player = self.set_interval(1 / (EVENTS_PER_SECOND * SPEEDS[index]), self._tick)
            self.refresh_bindings()
        self.refresh_view()

    def action_faster(self) -> None:
        self.speed_index += 1

    def action_slower(self) -> None:
        self.speed_index -= 1

    # -- fork ------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`f` forks where the run can be forked; elsewhere it says why not (`fork_unavailable`).
        Space plays, or pauses while playing."""
        forkable = self.fork_fn is not None and bool(self.fork_policies)
        if action in ("play", "pause"):
            return (self.player is None) == (action == "play")
        if action == "fork":
            return forkable
        if action == "fork_unavailable":
            return not forkable
        return True

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if screen is not self.screen_stack[0]:
            return
        for action, title, help_text in REPLAY_COMMANDS:
            if self.check_action(action, ()):
                yield SystemCommand(title, help_text, partial(self.run_action, action))

    def action_fork_unavailable(self) -> None:
        self.notify(
            clean(f"This run cannot be forked: its scenario {self.header.scenario!r} is not installed here."),
            severity="warning",
            markup=False,
        )

    def action_fork(self) -> None:
        if self.fork_fn is None or not self.fork_policies:
            self.action_fork_unavailable()
            return
        if self.tail is not None or self.state is None:
            self.notify("Still reading the run: f forks once it is read (the status line says how far).", markup=False)
            return
        self._stop_playing()
        back, note = self.position, self.marker_note
        target, title = fork_target(self.timeline, self.position, self.state)
        if target != self.position:
            self.seek(target, note="fork point")  # the pane shows what the fork keeps
        state = self.state

        def picked(name: str | None) -> None:
            if name is None:
                if target != back:
                    self.seek(back, note=note)
                return
            try:
                run = self.fork_fn(self.timeline, target, name)
            except Exception as exc:  # a refused fork is reported, never fatal
                self.notify(clean(str(exc)), title="Cannot fork here", severity="error", timeout=10, markup=False)
                return
            self.exit(run)

        current = state.policy if state is not None else ""
        self.push_screen(PolicyPicker(self.fork_policies, current, title=title, hint="enter: fork with it · escape: cancel",
                                      keep_current=False), picked)

    def action_scroll_up(self) -> None:
        self.query_one(TranscriptPane).scroll_up(animate=False)

    def action_scroll_down(self) -> None:
        self.query_one(TranscriptPane).scroll_down(animate=False)

    def action_page_up(self) -> None:
        self.query_one(TranscriptPane).scroll_page_up(animate=False)

    def action_page_down(self) -> None:
        self.query_one(TranscriptPane).scroll_page_down(animate=False)

    def action_toggle_folds(self) -> None:
        self.query_one(TranscriptPane).action_toggle_folds()

    def action_runs(self) -> None:
        open_runs(self)

    def action_help(self) -> None:
        self.push_screen(HelpScreen("Replay keys", REPLAY_HELP))

    async def action_ctrl_c(self) -> None:
        await quit_or_copy(self)


def _scenario_named(name: str) -> Scenario | None:
    """The scenario a stored run names, if it can be loaded (an imported log names none)."""
    import scenarios

    if name == "imported":
        return None
    try:
        return scenarios.get_named(name)  # a stored run never names code to load
    except scenarios.ScenarioError:
        return None


def run_viewer(timeline: Timeline, at: int | None = None) -> object | None:
    """Run the viewer; the run the operator forked (the caller opens the cockpit on it), or None.
    TranscriptError for a file with a bad line (found once the viewer has read every line)."""
    scenario = _scenario_named(timeline.header.scenario)
    if timeline.header.scenario == "imported":
        names, fork = imported_fork_policies(), _fork_from
    else:
        names = [*scenario.policies, "human"] if scenario is not None else []
        fork = _fork_from if scenario is not None else None
    app = ReplayApp(timeline, at, fork=fork, policy_names=names, scenario=scenario)
    with sigterm_closes(app):
        result = app.run()
    if app.terminated:
        if isinstance(result, Run):
            result.close()  # forked as SIGTERM came: left unfinished, as its file says
        raise Terminated
    if isinstance(result, TranscriptError):
        raise result  # a bad line the index pass found: the file is refused, as `show` refuses it
    return result if isinstance(result, Run) else None
