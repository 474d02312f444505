"""The cockpit in front of a running gateway: its runs steered as any run.

`GatewayCockpit` is the cockpit (`tui.app.CockpitApp`): the same header,
transcript pane, panels, dialogs, help, palette and keys, over the same
`engine.core.operating.Operating` calls, which go to the `Gateway` here.
The app shows the gateway's current run: when the agent's requests start
the next one, the transcript pane and the folded state start again with it.

The gateway's threads (the agent's requests) and the app's workers (the
operator's calls) change the runs; the bridge turns what they report into
messages, and words the gateway's status and its list of runs on the thread
that reported them. On the UI thread the app reads only its folded copy of
the state and those words, never the live engine's state.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.message import Message
from textual.message_pump import MessagePump
from textual.widgets import Static

from engine.core.events import Event, Header
from engine.core.state import RunState, RunStatus
from engine.core.text import clean
from engine.core.urls import safe_url
from engine.gateway import Gateway, GatewayRun
from tui.app import FOOTER_ORDER, CockpitApp
from tui.bridge import EngineBridge, EngineEvent
from tui.cockpit_actions import action_applies
from tui.layout import fit
from tui.plain import outcome_line
from tui.screens.dialogs import PolicyPicker
from tui.screens.forms import TakeOver, TakeOverScreen
from tui.screens.runs import open_runs
from tui.widgets.footer import HELP_AND_QUIT, CockpitFooter
from tui.widgets.header import RunHeader, shown_path
from tui.widgets.run_panes import RunPanes
from tui.widgets.wrap import cut_end

GATEWAY_STATUS: dict[str, RunStatus] = {
    "waiting for the agent": "ready",
    "request held": "ready",
    "asking the upstream": "running",
    "awaiting_approval": "awaiting_approval",
    "awaiting_budget": "awaiting_budget",
    "policy_failed": "policy_failed",
}
"""The gateway's status as the run status that says which keys apply."""

RUN_WORDS = {
    "ready": "going on",
    "awaiting_input": "the operator's turn",
    "awaiting_approval": "awaiting approval",
    "awaiting_budget": "at the budget limit",
    "policy_failed": "policy failed",
    "running": "running",
    "ended": "ended",
    "halted": "halted: the transcript cannot be written",
}
"""A gateway run's status in words (the runs panel)."""


@dataclass(frozen=True)
class RunLine:
    """A run of the gateway as the runs panel lists it."""

    number: int
    conversation: int
    turn: int
    state: str
    file: str


@dataclass(frozen=True)
class GatewayView:
    """What the app shows of the gateway besides the run: worded on the reporting thread."""

    status: str
    mode: str
    upstream: str
    """The upstream's name, the policy of the next steps."""
    upstream_at: str
    """Where it is (its URL without credentials)."""
    upstreams: tuple[str, ...]
    runs: tuple[RunLine, ...]
    older: str = ""
    """How many older runs the gateway no longer lists, and where their transcripts are."""


def gateway_view(gateway: Gateway) -> GatewayView:
    """The gateway's status, mode, upstreams and runs now (taken under its lock)."""
    with gateway.lock:
        runs = []
        for run in gateway.runs:
            end = run.ended
            state = outcome_line(end).removeprefix("outcome: ") if end is not None else RUN_WORDS.get(run.status, run.status)
            file = run.path.name if run.path is not None else "not saved"
            runs.append(RunLine(run.number, run.conversation_number, run.turn, clean(state), clean(file)))
        upstream = gateway.upstream
        names = tuple(u.name for u in gateway.upstreams)
        older = clean(gateway.older.words())
        return GatewayView(gateway.status(), gateway.mode, clean(upstream.name), clean(safe_url(upstream.url)), names, tuple(runs), older)


@dataclass
class RunShown(Message):
    """The gateway's events now come from `run` (the agent's request started it)."""

    run: GatewayRun


@dataclass
class GatewayChanged(Message):
    """The gateway's status or list of runs may have changed."""

    view: GatewayView


class GatewayBridge(EngineBridge):
    """The bridge for a gateway: its operator calls go to the `Gateway`, and its runs' events,
    whichever thread makes them, come as messages (`RunShown` first when the run is new)."""

    def __init__(self, gateway: Gateway, target: MessagePump) -> None:
        super().__init__(gateway, target)
        self.gateway = gateway
        self.shown: GatewayRun | None = None
        self._showing = threading.Lock()
        """Held to tell and post a run newly shown: its `RunShown` goes once, before its first event
        (a second, after an event, would reset the view without it)."""

    def attach(self) -> tuple[GatewayRun | None, RunState | None, int]:
        """Listen from now on; the current run, a copy of its state and how many of its events
        that copy holds (the next come as messages)."""
        with self.gateway.lock:
            if not self._attached:
                self.gateway.event_listeners.append(self._forward_run_event)
                self.gateway.change_listeners.append(self._forward_change)
                self._attached = True
            run = self.shown = self.gateway.current
            if run is None:
                return None, None, 0
            return run, self.gateway.folded_state(), len(run.engine.events)

    def detach(self) -> None:
        if self._attached:
            self.gateway.event_listeners.remove(self._forward_run_event)
            self.gateway.change_listeners.remove(self._forward_change)
            self._attached = False

    def _forward_run_event(self, run: GatewayRun, event: Event) -> None:
        with self._showing:
            if run is not self.shown:
                self.shown = run
                self.target.post_message(RunShown(run))
            self.target.post_message(EngineEvent(event))

    def _forward_change(self) -> None:
        with self.gateway.lock:  # a request may have started a run that has no event yet
            run = self.gateway.current
            with self._showing:
                if run is not None and run is not self.shown:
                    self.shown = run
                    self.target.post_message(RunShown(run))
            self.target.post_message(GatewayChanged(gateway_view(self.gateway)))


class RunsPanel(Static):
    """The gateway's runs, the one shown marked; each line cut with `…` at the panel's edge."""

    def __init__(self) -> None:
        super().__init__("", id="runs", markup=False)
        self.lines: tuple[RunLine, ...] = ()
        self.current = 0
        self.older = ""

    def show_runs(self, lines: Sequence[RunLine], current: int, older: str = "") -> None:
        self.lines, self.current, self.older = tuple(lines), current, older
        self.refresh(layout=True)

    def render(self) -> Text:
        width = max(1, self.content_size.width)
        text = Text()
        if not self.lines:
            text.append(cut_end("none yet: the agent has sent no request", width), style="dim")
        for line in self.lines:
            mark = "▸ " if line.number == self.current else "  "
            text.append(cut_end(f"{mark}{line.number}. conversation {line.conversation}, turn {line.turn}", width) + "\n")
            text.append(cut_end(f"    {line.state}", width) + "\n")
            text.append(cut_end(f"    {line.file}", width) + "\n", style="dim")
        if self.older:
            text.append(cut_end(self.older, width), style="dim")
        text.rstrip()
        return text


class GatewayCockpit(CockpitApp):
    """The cockpit of a `Gateway` whose server the caller started (`url` is where it listens)."""

    QUEUES_STEPS = False

    TITLE = "agent-tui gateway"
    COMMANDS = App.COMMANDS

    def __init__(self, gateway: Gateway, url: str, *, clock: Any = None) -> None:
        App.__init__(self)
        self.gateway = gateway
        self.url = url
        self.run_shown: GatewayRun | None = None
        self.view = gateway_view(gateway)
        self.operating = gateway
        self.bridge = GatewayBridge(gateway, self)
        self._offered: object = None
        self._start_flags()
        self._start_view(None, RunState.start(self._waiting_header()), 0, clock or gateway.clock or time.time)

    def _waiting_header(self) -> Header:
        return Header(scenario="gateway", task="no run yet", task_text="(the agent's first request starts a run)", policy=self.view.upstream)

    @property
    def header(self) -> Header:
        return self.engine.header if self.engine is not None else self._waiting_header()

    # -- layout ----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield RunPanes(self.header, None)
        yield CockpitFooter(FOOTER_ORDER, HELP_AND_QUIT)

    async def mount_run(self) -> None:
        run, state, seen = self.bridge.attach()
        panel = RunsPanel()
        panel.border_title = "runs"
        await self.query_one("#side").mount(panel, before="#budget")
        if run is not None:
            await self._show_run(run, state, seen)
        else:
            self.reset_pane()
        fit(self, self.size)
        self.refresh_view()
        self.call_after_refresh(self._offer_pause)

    def unmount_run(self) -> None:
        """Nothing more: the bridge stopped listening to the gateway."""

    async def _show_run(self, run: GatewayRun, state: RunState | None, seen: int) -> None:
        """Show `run` from now on: its tools, and its events from the first (or the `seen`
        ones `state` holds)."""
        self.run_shown = run
        self._start_view(run.engine, state or RunState.start(run.engine.header), seen, self.clock)
        await self.query_one(RunPanes).show_tools(run.engine.header)
        self.reset_pane()
        self.refresh_view()

    def reset_pane(self) -> None:
        if self.engine is None:
            self.pane.reset(self.header, [])
        else:
            super().reset_pane()

    # -- what the gateway reports ------------------------------------------------

    @on(RunShown)
    async def _run_shown(self, message: RunShown) -> None:
        await self._show_run(message.run, None, 0)

    def _draw(self) -> None:
        """Draw; and open the dialog of a pause an agent's request stepped the run into (once
        for each pause: the operator may close it and answer later)."""
        super()._draw()
        s = self.view_state
        pause = s.pending if s.status == "awaiting_approval" else s.exhausted if s.status == "awaiting_budget" else None
        if pause is not None and pause is not self._offered and not self.busy and self._can_draw:
            self._offered = pause
            self._offer_pause()

    @on(GatewayChanged)
    def _gateway_changed(self, message: GatewayChanged) -> None:
        self.view = message.view
        self._draw_soon()

    def refresh_view(self) -> None:
        super().refresh_view()
        for panel in self.query(RunsPanel):
            panel.show_runs(self.view.runs, self.run_shown.number if self.run_shown is not None else 0, self.view.older)

    def show_header(self) -> None:
        run = self.run_shown
        words, cls = self._state_words()
        task = f"run {run.number}: conversation {run.conversation_number}, turn {run.turn}" if run is not None else "no run yet"
        self.query_one(RunHeader).show(
            scenario="gateway",
            task=task,
            task_text=self.header.task_text,
            policy=self.view.upstream,
            state=words,
            state_class=cls,
            path=shown_path(run.path) if run is not None else "none yet",
            servers=self.servers_line,
        )

    @property
    def servers_line(self) -> str:  # type: ignore[override]
        return clean(f"mode: {self.view.mode} · gateway {self.url} → {self.view.upstream} ({self.view.upstream_at})")

    # -- state -----------------------------------------------------------------

    @property
    def needs_task(self) -> bool:
        return False

    @property
    def human_in_control(self) -> bool:
        return False

    @property
    def run_status(self) -> RunStatus:
        """The folded copy's pause when it has one, else the gateway's status (where its request is)."""
        if self.busy:
            return "running"
        status = self.view_state.status
        if status in ("awaiting_approval", "awaiting_budget"):
            return status
        return GATEWAY_STATUS.get(self.view.status, "ready")

    def _state_words(self) -> tuple[str, str]:
        s = self.view_state
        status = self.run_status
        if status == "awaiting_approval" and s.pending is not None:
            return f"awaiting approval: {s.pending.tool}", "-approval"
        if status == "awaiting_budget" and s.exhausted is not None:
            return f"paused at the {s.exhausted.kind} limit: b to extend it or end the run", "-budget"
        if self.busy or self.view.status == "asking the upstream":
            return "asking the upstream (escape pauses after it)", "-running"
        if self.view.status == "request held":
            return "request held: n asks the upstream", "-paused"
        if self.view.status == "policy_failed":
            return "policy failed: the agent got the upstream's error; its retry continues", "-failed"
        return "waiting for the agent", "-paused"

    def action_applies(self, action: str) -> bool:
        """As in any run, but for what a gateway does not have (a task to set, a policy to hand
        back to) and its modes: escape makes it hold requests for `n`, `c` lets them through."""
        status = self.run_status
        if action in ("hand_back", "set_task"):
            return False
        if action == "interrupt":
            return self.view.mode == "continue"
        if action == "continue_run":
            return self.view.mode == "step" and action_applies(action, status, human_in_control=False)
        if action in ("take_over", "abort") and (self.engine is None or self.view_state.ended is not None):
            return False
        return action_applies(action, status, human_in_control=False)

    # -- actions ---------------------------------------------------------------

    def action_step(self) -> None:
        self.start("step", lambda op: op.step())

    def action_interrupt(self) -> None:
        """Escape: the gateway holds the next requests for `n` (step mode)."""
        self.run_worker(self.gateway.pause, thread=True, group="pause")
        self.notify("Step mode: each request waits for n.", markup=False)

    def action_take_over(self) -> None:
        if self.engine is None:
            self.notify("take over answers a held request: none is waiting", severity="warning", markup=False)
            return

        def written(answer: TakeOver | None) -> None:
            if answer is not None:
                decision = answer.decision
                self.start("take over", lambda _op: self.gateway.take_over(decision))

        self.push_screen(TakeOverScreen(list(self.engine.tools.values())), written)

    def policy_names(self) -> list[str]:
        return list(self.view.upstreams)

    def action_pick_policy(self) -> None:
        def picked(name: str | None) -> None:
            if name is not None:
                self.start(f"swap to {name}", lambda op: op.swap_policy(name))

        self.push_screen(PolicyPicker(self.policy_names(), self.view.upstream), picked)

    @property
    def edit_tools(self) -> tuple[Any, ...]:
        return ()

    def _cancel_policy_call(self) -> bool:
        return False

    def show_fault(self) -> bool:
        return False

    def action_save(self) -> None:
        if self.engine is None:
            self.notify("No run yet: the agent has sent no request.", markup=False)
            return
        super().action_save()

    @property
    def run_(self) -> Any:  # type: ignore[override]
        """The shown run where the cockpit asks for its file (`path`)."""
        return self.run_shown

    def action_runs(self) -> None:
        open_runs(self, live=self.run_shown.path if self.run_shown is not None else None)

    async def action_quit(self) -> None:
        """q, ctrl+c: the gateway stops (the caller ends its open run and says the outcome)."""
        self.exit()

    def terminate(self) -> None:
        """SIGTERM: close as `q` does (the caller stops the agent and the gateway, ending its open run)."""
        self.terminated = True
        self.exit()

