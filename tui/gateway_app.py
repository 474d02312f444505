"""The gateway's cockpit: the agent's model turns as steps, steered as any run.

The app draws what the `Gateway` reports (events of its runs, changes of
status) from messages posted by the gateway's threads; every operator call
that may reach the upstream (step, approve, reject, edit, take over) runs in
a thread worker. Untrusted text goes through `tui.plain` (cleaned) into a
`Log`, which never reads markup.
"""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Log, Static

from engine.core.answers import Answer
from engine.core.operator import EngineError
from engine.core.events import Event
from engine.gateway import Gateway, GatewayRun
from engine.core.policy import Decision
from engine.core.state import PendingApproval
from engine.core.text import clean
from engine.core.urls import safe_url
from tui.keys import QUIT_ON_CTRL_C, approval_bindings, quit_or_copy
from tui.plain import event_lines, header_lines, outcome_line
from tui.screens.approval import ApprovalForm, ApprovalResult, ApprovalScreen
from tui.screens.dialogs import BudgetScreen, PolicyPicker
from tui.screens.forms import EditArgsScreen, ReasonScreen, TakeOver, TakeOverScreen
from tui.widgets.footer import CockpitFooter

QUIT = ("q", "q", "quit", "quit")
WHEN_PENDING = frozenset({"approve", "approve_always", "reject", "edit", "review"})
FOOTER_ORDER = ("approve", "approve_always", "reject", "edit", "review", "budget", "step", "continue_run", "pause")
"""The footer's keys, first-needed first: the answers to a waiting call come before stepping."""


class GatewayEvent(Message):
    def __init__(self, run: GatewayRun, event: Event) -> None:
        super().__init__()
        self.run = run
        self.event = event


class GatewayChanged(Message):
    """The gateway's status may have changed (a request came, a response left)."""


class GatewayApp(App[None]):
    """The cockpit in front of a running `Gateway` (its server started by the caller)."""

    CSS_PATH = "app.tcss"
    TITLE = "agent-tui gateway"
    CSS = """
    #gw-status { height: 3; padding: 0 1; background: $boost; text-wrap: nowrap; text-overflow: ellipsis; }
    #gw-events { width: 3fr; }
    #gw-runs { width: 1fr; min-width: 24; padding: 0 1; border-left: solid $primary; }
    """
    BINDINGS = [
        Binding("n", "step", "step"),
        Binding("c", "continue_run", "continue"),
        Binding("escape", "pause", "pause"),
        *approval_bindings(),
        Binding("v", "review", "review"),
        Binding("h", "take_over", "take over"),
        Binding("p", "pick_upstream", "upstream"),
        Binding("b", "budget", "budget"),
        Binding("x", "abort", "abort"),
        Binding("q", "quit", "quit"),
        QUIT_ON_CTRL_C,
    ]

    async def action_ctrl_c(self) -> None:
        """Ctrl+C quits as q does (Textual's own only says "press ctrl+q"), or copies selected text."""
        await quit_or_copy(self)

    def __init__(self, gateway: Gateway, url: str) -> None:
        super().__init__()
        self.gateway = gateway
        self.url = url
        self.shown_run = 0
        self._applicable: tuple[bool, bool] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="gw-status", markup=False)
        with Horizontal():
            yield Log(id="gw-events", highlight=False)
            yield Static(id="gw-runs", markup=False)
        yield CockpitFooter(FOOTER_ORDER, (QUIT,))

    def on_mount(self) -> None:
        self.gateway.event_listeners.append(lambda run, event: self.post_message(GatewayEvent(run, event)))
        self.gateway.change_listeners.append(lambda: self.post_message(GatewayChanged()))
        self._refresh_status()

    # -- drawing ---------------------------------------------------------------

    def on_gateway_event(self, message: GatewayEvent) -> None:
        log = self.query_one("#gw-events", Log)
        run = message.run
        if run.number != self.shown_run:
            self.shown_run = run.number
            turn = f"conversation {run.conversation.number}, turn {run.turn}"
            log.write_line(f"── run {run.number}: {turn} (a new run and transcript) ──")
            for line in header_lines(run.engine.header):
                log.write_line(line)
        for line in event_lines(message.event):
            log.write_line(line)
        self._refresh_status()
        if message.event.type == "approval_requested" and not self.screen.is_modal:
            self.action_review()

    def on_gateway_changed(self, _message: GatewayChanged) -> None:
        self._refresh_status()

    def _refresh_status(self) -> None:
        gw = self.gateway
        status = gw.status()
        hints = {
            "waiting for the agent": "",
            "request held": "  n: ask the upstream",
            "awaiting_approval": "  a approve · r reject · e edit",
            "awaiting_budget": "  b: extend the budget or end the run",
            "policy_failed": "  the agent got the upstream's error; its retry continues",
        }
        line1 = Text(f"mode: {gw.mode} · gateway {self.url} → {gw.upstream.label} ({safe_url(gw.upstream.url)})")
        line2 = Text(f"status: {status}{hints.get(status, '')}", style="bold")
        engine = gw.engine
        if engine is not None:
            s = engine.state
            line2.append(f"   step {s.step} · tokens {s.tokens} · cost ${s.cost:.4f}", style="not bold")
        self.query_one("#gw-status", Static).update(Text("\n").join([line1, line2]))
        runs = Text("Runs of this gateway\n", style="bold")
        for run in gw.runs:
            end = run.ended
            state = outcome_line(end).removeprefix("outcome: ") if end else run.status
            runs.append(f"{run.number}. c{run.conversation_number} t{run.turn} {clean(state)[:40]}\n", style="not bold")
            runs.append(f"   {clean(str(run.path or 'not saved'))}\n", style="dim")
        self.query_one("#gw-runs", Static).update(runs)
        applicable = (self._pending() is not None, self._exhausted() is not None)
        if applicable != self._applicable:  # the footer lists the keys that apply now
            self._applicable = applicable
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The approval keys while a call waits, the budget key at a budget pause."""
        if action in WHEN_PENDING:
            return self._pending() is not None
        if action == "budget":
            return self._exhausted() is not None
        return True

    def _exhausted(self):
        engine = self.gateway.engine
        return engine.state.exhausted if engine is not None else None

    # -- operator --------------------------------------------------------------

    @work(thread=True, exit_on_error=False)
    def perform(self, what: str, op: Callable[[], Any]) -> None:
        try:
            op()
        except (ValueError, EngineError) as exc:
            self.call_from_thread(self.notify, clean(f"{what}: {exc}"), severity="warning", markup=False)

    def _pending(self):
        engine = self.gateway.engine
        return engine.state.pending if engine is not None and engine.status == "awaiting_approval" else None

    def action_step(self) -> None:
        self.perform("step", self.gateway.step)

    def action_continue_run(self) -> None:
        self.perform("continue", lambda: self.gateway.set_mode("continue"))

    def action_pause(self) -> None:
        self.perform("pause", lambda: self.gateway.set_mode("step"))

    # Each answer names the approval the operator saw: the gateway refuses it if an agent's
    # request has replaced that approval since (the operator never approves a call unseen).

    def answer_approval(self, answer: Answer | None, seen: PendingApproval) -> None:
        if answer is not None:
            self.perform(answer.what, lambda: self.gateway.answer(answer, expected=seen))

    def action_approve(self, seen: PendingApproval | None = None) -> None:
        pending = seen or self._pending()
        if pending is not None:
            self.answer_approval(Answer.approve(), pending)

    def action_approve_always(self, seen: PendingApproval | None = None) -> None:
        pending = seen or self._pending()
        if pending is not None:
            self.answer_approval(Answer.approve_always(), pending)

    def action_reject(self, seen: PendingApproval | None = None) -> None:
        pending = seen or self._pending()
        if pending is not None:
            self.push_screen(ReasonScreen(pending.tool), lambda answer: self.answer_approval(answer, pending))

    def action_edit(self, seen: PendingApproval | None = None) -> None:
        pending = seen or self._pending()
        if pending is None:
            return
        engine = self.gateway.engine
        form = EditArgsScreen(engine.tools[pending.tool], pending.args, engine.check_edit)
        self.push_screen(form, lambda answer: self.answer_approval(answer, pending))

    def action_review(self) -> None:
        pending = self._pending()
        if pending is None:
            return
        tool = self.gateway.engine.tools.get(pending.tool)
        kind = "asks unless a rule allows it"
        self.push_screen(ApprovalScreen(pending, tool.description if tool else "", kind), lambda result: self._answered(result, pending))

    def _answered(self, result: ApprovalResult | None, seen: PendingApproval) -> None:
        if isinstance(result, Answer):
            self.answer_approval(result, seen)
        elif result is ApprovalForm.REJECT:
            self.action_reject(seen)
        elif result is ApprovalForm.EDIT:
            self.action_edit(seen)

    def action_take_over(self) -> None:
        engine = self.gateway.engine
        if engine is None or self.gateway.held is None:
            self.notify("take over answers a held request: none is waiting", severity="warning", markup=False)
            return

        def written(answer: TakeOver | None) -> None:
            if answer is not None:
                decision: Decision = answer.decision
                self.perform("take over", lambda: self.gateway.take_over(decision))

        self.push_screen(TakeOverScreen(list(engine.tools.values())), written)

    def action_pick_upstream(self) -> None:
        names = [u.name for u in self.gateway.upstreams]

        def picked(name: str | None) -> None:
            if name is not None:
                self.perform("swap", lambda: self.gateway.swap(name))

        self.push_screen(PolicyPicker(names, self.gateway.upstream.name), picked)

    def action_budget(self) -> None:
        exhausted = self._exhausted()
        if exhausted is None:
            return

        def answered(answer: Any) -> None:
            if answer is None:
                return
            what, value = answer
            if what == "extend":
                self.perform("budget", lambda: self.gateway.extend_budget(exhausted.kind, value))
            else:
                self.perform("budget", self.gateway.end_at_budget)

        self.push_screen(BudgetScreen(exhausted), answered)

    def action_abort(self) -> None:
        if self.gateway.engine is not None and not self.gateway.engine.ended:
            self.perform("abort", self.gateway.abort)
