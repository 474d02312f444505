"""The cockpit: watch a run step by step and steer it.

The app owns the view state: a fold of the events the bridge delivers
(`engine.core.state.RunState`), updated on the UI thread only. Every engine call
that may run a policy or a tool goes through `_perform`, a thread worker; the
app learns what happened from the `EngineEvent` messages and the closing
`WorkDone` (see `tui.bridge`). While an operation runs (`busy`), only
interrupt, abort, save, help and quit apply.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable

from textual import events, on, work
from textual.worker import Worker, WorkerState
from textual.app import ComposeResult, SystemCommand
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer

from engine.core.answers import Answer
from engine.core.engine import Engine
from engine.core.events import Header
from engine.core.operating import Operating
from engine.core.policy import Cancellable, Policy
from engine.core.scenario import Scenario
from engine.sessions.run import Run
from engine.core.state import PendingApproval, RunState, RunStatus, run_status
from engine.core.text import clean
from engine.stored.lock import open_replace
from engine.stored.tail import Tail
from engine.stored.transcript import dump_event
from tui.bridge import EngineBridge, EngineEvent, EngineOp, EngineOperating, LeavingExecutor, ThoughtStreamed, WorkDone
from tui.cockpit_actions import COCKPIT_ACTIONS, COMMANDS, FOLD_COMMAND, action_applies
from tui.exits import EXIT_ABORTED, EXIT_CODES, EXIT_INTERNAL, EXIT_UNFINISHED, UsageError
from tui.keys import cockpit_bindings, quit_or_copy
from tui.layout import TooSmallScreen, fit
from tui.mcp_cockpit import McpCockpit
from tui.run_guard import ClosesOnSigterm, watch_run
from tui.screens.approval import ApprovalForm, ApprovalResult, ApprovalScreen
from tui.screens.dialogs import BudgetScreen, ConfirmScreen, HelpScreen, PolicyPicker, QuitScreen, SaveScreen
from tui.screens.forms import EditArgsScreen, ReasonScreen, TakeOverScreen
from tui.screens.runs import RunsCommands, open_runs
from tui.take_over import TakeOverCockpit
from tui.widgets.footer import HELP_AND_QUIT, CockpitFooter
from tui.widgets.header import RunHeader, shown_path
from tui.widgets.run_panes import RunPanes
from tui.widgets.transcript import Prefix, TranscriptPane

PolicyFactory = Callable[[], Policy]

FOOTER_ORDER = (*(name for name, _, _ in COMMANDS), "toggle_folds")
DRAW_DELAY = 1 / 30
"""Seconds from a step's first event to its frame, unless the step ends sooner."""


@dataclass
class Opening:
    """A stored run the cockpit opens: its `tail` (`engine.stored.tail.read_tail`) is the first
    frame, while `build` makes the Run off the UI thread (the whole read and every check of a
    resume); an exception from it is the message the cockpit shows."""

    tail: Tail
    scenario: Scenario | None
    build: Callable[[], Run]
    said: list[str] = field(default_factory=list)
    """What the build said (its warnings), for the caller to print once the cockpit closed."""


@dataclass
class Opened(Message):
    """The Opening's build returned `run`, or failed with `error`."""

    run: Run | None
    error: str | None = None


MAX_QUEUED_STEPS = 20
"""Steps `n` queues while one runs, at the most."""


class CockpitApp(ClosesOnSigterm, TakeOverCockpit, McpCockpit):
    """The live cockpit around one `Run` (its MCP parts in `tui.mcp_cockpit`)."""

    CSS_PATH = "app.tcss"
    TITLE = "agent-tui"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = cockpit_bindings()
    COMMANDS = {*McpCockpit.COMMANDS, RunsCommands}

    opening: Opening | None = None
    """The run being opened, until its build returns (the cockpit is busy "opening…")."""
    working_on = ""
    """The label of the operation `busy` is about ("step", "continue"...)."""
    steps_queued = 0
    """Steps asked for (n) while a step ran: each starts when the one before ends ready."""
    open_error: str | None = None
    """Why the Opening's build failed (the cockpit says it; only help and quit apply)."""

    def __init__(
        self,
        run: Run | Opening,
        *,
        clock: Callable[[], float] | None = None,
        model_policy_factory: PolicyFactory | None = None,
    ) -> None:
        super().__init__()
        self.model_policy_factory = model_policy_factory
        self._clock_given = clock
        self._start_flags()
        if isinstance(run, Opening):
            self.opening, self.run_, self.busy = run, None, True
            self._start_view(None, run.tail.state, len(run.tail.events), clock or time.time)
        else:
            self._start_run(run)

    def _start_run(self, run: Run) -> None:
        self.run_: Run | None = run
        local = EngineOperating(run.engine, self.make_policy)
        self.operating: Operating = local
        """What the operator's calls go to, off the UI thread."""
        self.bridge = EngineBridge(local, self, run.engine)
        self._start_view(run.engine, local.folded_state(), len(run.engine.events), self._clock_given or run.engine.clock or time.time)
        self.bridge.attach()

    def _start_view(self, engine: Engine | None, state: RunState, seen: int, clock: Callable[[], float]) -> None:
        """Show `engine`'s run: `state` is the app's own copy of its state (the worker changes
        the engine's; finished steps are shared, so a long run is not held twice), holding its
        first `seen` events (the worker may already have appended more)."""
        self.engine = engine
        self.clock = clock
        self.view_state: RunState = state
        self.halted: str | None = engine.halted if engine is not None else None
        """Why the transcript cannot be written (None: it can), as the last operation left it."""
        self.fault: str | None = engine.fault if engine is not None else None
        """Why a tool server failed in the last operation (None: none did)."""
        self.seen = seen
        self._drawn = self.seen
        self._streamed = ""
        self._previous_policy: Policy | None = None
        self._applicable: tuple[str, ...] | None = None

    def _start_flags(self) -> None:
        self._draw_timer: Timer | None = None
        self.busy = False
        self._leaving = False
        self.last_error: str | None = None

    # -- layout ----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield RunPanes(self.header, self.opening.scenario if self.opening is not None else self.run_.scenario)
        yield CockpitFooter(FOOTER_ORDER, HELP_AND_QUIT)

    @property
    def header(self) -> Header:
        return self.engine.header if self.engine is not None else self.opening.tail.header

    @property
    def path(self) -> Path | None:
        """The run's transcript file (None: not saved)."""
        return self.run_.path if self.run_ is not None else self.opening.tail.path

    async def on_mount(self) -> None:
        asyncio.get_running_loop().set_default_executor(LeavingExecutor(max_workers=4, thread_name_prefix="engine"))
        if self.opening is None:
            await self.mount_run()
            return
        self.reset_pane()
        fit(self, self.size)
        self.refresh_view()
        watch_run(self)
        self._open(self.opening)

    @work(thread=True, exclusive=True, exit_on_error=False, group="engine")
    def _open(self, opening: Opening) -> None:
        try:
            run = opening.build()
        except Exception as exc:  # a refusal (UsageError) says itself; anything else is named
            self.post_message(Opened(None, str(exc) if isinstance(exc, UsageError) else f"{type(exc).__name__}: {exc}"))
        else:
            if self._leaving or not self.post_message(Opened(run)):
                run.close()  # the cockpit closed while it was built: nobody shows it

    @on(Opened)
    async def _opened(self, message: Opened) -> None:
        """Show the run built, from its first event (the pane stays at the end), or say why there is none."""
        if message.run is None:
            self.open_error = message.error
            self.notify(clean(message.error or ""), title="The run could not be opened", severity="error", timeout=30, markup=False)
            self.refresh_view()
            return
        if self._leaving:
            message.run.close()
            return
        self.opening, self.busy = None, False
        self._start_run(message.run)
        await self.query_one(RunPanes).show_tools(self.header)
        await self.mount_run()

    async def mount_run(self) -> None:
        """Show the run, and listen to what outlives a step (SIGTERM, the MCP servers' progress)."""
        self.reset_pane()
        fit(self, self.size)
        self.refresh_view()
        watch_run(self)
        self.call_after_refresh(self._offer_pause)
        self.mcp_mount()

    def on_resize(self, event: events.Resize) -> None:
        if fit(self, event.size) and self.needs_task:  # it could not ask while the terminal was too small
            self.call_after_refresh(self.action_set_task)

    def exit(self, *args: Any, **kwargs: Any) -> None:
        self._leaving = True
        super().exit(*args, **kwargs)

    def terminate(self) -> None:
        """SIGTERM: stop what can be stopped (the step's interrupt, the policy's call) and leave
        with the aborted code, restoring the terminal; the caller ends the run."""
        self.terminated = True
        if self.run_ is not None:  # a run being opened has no steps to stop yet
            self.bridge.interrupt.set()
            self._cancel_policy_call()
        self.exit(return_code=EXIT_ABORTED)

    def on_unmount(self) -> None:
        self._leaving = True
        if self.opening is not None:
            return  # no run yet: nothing listens
        self.bridge.interrupt.set()
        self.bridge.detach()
        self.unmount_run()

    def unmount_run(self) -> None:
        self.mcp_unmount()

    # -- state -----------------------------------------------------------------

    @property
    def human_in_control(self) -> bool:
        return self.run_ is not None and self.engine.policy is self.run_.human

    @property
    def run_status(self) -> RunStatus:
        """The run's status (`engine.core.state.RunStatus`) as the cockpit shows it."""
        human = self.human_in_control and self.run_.human.needs_input
        return run_status(self.view_state.status, human_needs_input=human, busy=self.busy, halted=self.halted is not None)

    def _state_words(self) -> tuple[str, str]:
        s = self.view_state
        status = self.run_status
        if self.opening is not None:
            if self.open_error is not None:
                return "not opened: q quits", "-failed"
            return "opening…", "-running"
        if self.needs_task:  # before "your turn": n does nothing until the task is set
            return "no task yet: t sets it", "-input"
        if status == "running":
            if self.bridge.interrupt.is_set():
                return "stopping after this step (escape again cancels a model call)", "-running"
            return "running (escape interrupts)", "-running"
        if status == "awaiting_approval" and s.pending is not None:
            return f"awaiting approval: {s.pending.tool}", "-approval"
        if status == "awaiting_budget" and s.exhausted is not None:
            return f"paused at the {s.exhausted.kind} limit: b to extend it or end the run", "-budget"
        if status == "policy_failed":
            return "policy failed: n retries, p swaps, x aborts", "-failed"
        if status == "awaiting_input":
            back = ", h hands back" if self._fallback_name() is not None else ""
            return f"your turn: n types a step{back}", "-input"
        if status == "ended" and s.ended is not None:
            return f"ended: {s.ended.outcome} ({s.ended.reason})", "-ended"
        if status == "halted":
            return "halted: the transcript cannot be written", "-failed"
        if status == "ready" and self.fault:
            return "a tool server failed: n goes on, p swaps, x aborts", "-failed"
        return ("ready" if s.step == 0 else "paused"), "-paused"

    def reset_pane(self) -> None:
        """Show the first `seen` events of the run in the transcript pane (of an Opening, its tail's)."""
        events = self.engine.events if self.engine is not None else self.opening.tail.events
        self.pane.reset(self.header, Prefix(events, self.seen))

    def refresh_view(self) -> None:
        s = self.view_state
        self.show_header()
        self.query_one(RunPanes).show_state(s)
        # The footer rebuilds itself on every refresh; only ask when what applies changed.
        applicable = tuple(name for name, _, _ in COMMANDS if self.action_applies(name))
        if applicable != self._applicable:
            self._applicable = applicable
            self.refresh_bindings()

    def show_header(self) -> None:
        s = self.view_state
        header = self.header
        words, cls = self._state_words()
        self.query_one(RunHeader).show(
            scenario=header.scenario,
            task=header.task,
            task_text=header.task_text,
            policy=s.policy,
            state=words,
            state_class=cls,
            path=shown_path(self.path),
            servers=self.servers_line if self.run_ is not None else "",
        )

    # -- bindings --------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in COCKPIT_ACTIONS:
            return True
        if action == "step" and self._step_running():
            return True  # n again: one more step after this one (`steps_queued`)
        return self.action_applies(action)

    QUEUES_STEPS = True
    """Whether `n` while a step runs asks for one more (the gateway's cockpit steps an agent's
    requests, not a policy's decisions: not there)."""

    def _step_running(self) -> bool:
        return self.QUEUES_STEPS and self.busy and self.opening is None and self.working_on == "step"

    def action_applies(self, action: str) -> bool:
        if self.opening is not None:
            return action == "help"
        if action == "hand_back" and self._fallback_name() is None:
            return False
        return action_applies(action, self.run_status, human_in_control=self.human_in_control, needs_task=self.needs_task)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if screen is not self.screen_stack[0]:
            return
        for action, title, help_text in COMMANDS:
            if self.action_applies(action):
                yield SystemCommand(title, help_text, partial(self.run_action, action))
        yield SystemCommand(*FOLD_COMMAND[1:], self.query_one(TranscriptPane).action_toggle_folds)

    # -- running the engine ----------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="engine")
    def _perform(self, label: str, op: EngineOp) -> None:
        self.bridge.perform(label, op)

    def start(self, label: str, op: EngineOp) -> None:
        """Run `op(self.operating)` off the UI thread; refused while another operation runs."""
        if self.busy:
            self.notify("The engine is busy; escape interrupts a continue.", severity="warning", markup=False)
            return
        self.busy, self.working_on = True, label
        self.bridge.interrupt.clear()
        self._draw_soon()
        self._perform(label, op)

    @property
    def _can_draw(self) -> bool:
        """False once the app is leaving and its widgets are gone (a step may end just then)."""
        return not self._leaving and self.is_running and bool(self.query(RunHeader))

    @on(EngineEvent)
    def _engine_event(self, message: EngineEvent) -> None:
        event = message.event
        self.view_state.apply(event)
        self.seen += 1
        if event.type == "decision":
            self._streamed = ""
        self._draw_soon()

    def _draw_soon(self) -> None:
        """Draw what changed once, shortly: a quick step's events and its end come
        within that time and make one frame; a step that takes longer (a slow tool)
        still shows its decision while the tool runs."""
        if self._draw_timer is None:
            self._draw_timer = self.set_timer(DRAW_DELAY, self._draw, name="draw")

    def _draw(self) -> None:
        if self._draw_timer is not None:
            self._draw_timer.stop()
            self._draw_timer = None
        if not self._can_draw:
            return
        if self._drawn != self.seen:
            self._drawn = self.seen
            self.reset_pane()
        self.refresh_view()

    @on(ThoughtStreamed)
    def _thought_streamed(self, message: ThoughtStreamed) -> None:
        self._streamed += message.delta
        if self._can_draw:
            self.pane.stream(self._streamed)

    @on(WorkDone)
    def _work_done(self, message: WorkDone) -> None:
        self.busy = False
        if self.engine is not None:  # a local run's: read on the worker thread when the operation ended
            self.halted, self.fault = message.halted, message.fault
        if not self._can_draw:
            return
        self.clear_progress()
        if self._streamed:
            self._streamed = ""
            self.pane.stream("")
        self._draw()
        if message.error:
            self.last_error = message.error
            self.notify(clean(message.error), title=f"{clean(message.label)} failed", severity="error", timeout=10, markup=False)
            self.steps_queued = 0
        self._offer_pause()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Once the engine's worker has ended (after its WorkDone: a step started from there would
        cancel it, the group being exclusive), the next step queued, if any."""
        if event.worker.group == "engine" and event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self._next_queued_step()

    def _next_queued_step(self) -> None:
        """Start a step asked for while the last one ran, when the run is ready for it and nothing is
        open over the cockpit nor running; any pause (an approval, the budget, the end, a failure, a
        tool server's fault, a person's turn) drops the rest: only the operator answers it."""
        if not self.steps_queued:
            return
        if self.run_status != "ready" or self.fault is not None or self.busy or len(self.screen_stack) > 1:
            self.steps_queued = 0
            return
        self.steps_queued -= 1
        self.start("step", lambda op: op.step())

    def _offer_pause(self) -> None:
        """After an operation: open the dialog the new state asks for."""
        if len(self.screen_stack) > 1:
            return
        status = self.run_status
        if status == "awaiting_approval":
            self.action_review()
        elif status == "awaiting_budget":
            self.action_budget()
        elif status == "ready":
            self.show_fault()
        elif status == "policy_failed" and self.view_state.last_policy_error:
            self.notify(
                clean(self.view_state.last_policy_error),
                title="The policy failed: n retries, p swaps, x aborts",
                severity="error",
                timeout=10,
                markup=False,
            )

    # -- actions ---------------------------------------------------------------

    def action_step(self) -> None:
        if self._step_running():
            self.steps_queued = min(self.steps_queued + 1, MAX_QUEUED_STEPS)
            more = f"{self.steps_queued} more step{'s' if self.steps_queued != 1 else ''}"
            self.notify(f"{more} after this one (a pause stops them; escape drops them).", timeout=2, markup=False)
            return
        if self.run_status == "awaiting_input":
            self.push_screen(TakeOverScreen(list(self.engine.tools.values()), stay=True), self._took_over)
            return
        self.start("step", lambda op: op.step())

    def action_continue_run(self) -> None:
        self.start("continue", lambda op: op.go_on(self.bridge.should_stop))

    def action_interrupt(self) -> None:
        """First escape: stop after the current step (and drop the steps queued). Second: cancel
        the policy's call in flight."""
        self.steps_queued = 0
        if self.bridge.interrupt.is_set():
            if self._cancel_policy_call():
                self.notify("Cancelling the policy's call in flight.", markup=False)
        else:
            self.bridge.interrupt.set()
        self.refresh_view()

    def _cancel_policy_call(self) -> bool:
        """Ask a policy that supports it (a model) to drop its request in flight."""
        policy = self.engine.policy if self.engine is not None else None
        if not isinstance(policy, Cancellable):
            return False
        try:
            policy.cancel()
        except Exception:
            return False
        return True

    # Each answer names the approval the operator saw (the folded copy's, or the dialog's):
    # it is refused when another has taken its place since (no call runs unseen).

    def answer_approval(self, answer: Answer | None, seen: PendingApproval | None = None) -> None:
        """Apply the operator's answer to the approval `seen` (by default the folded copy's
        pending one) off the UI thread (None: no answer)."""
        pending = seen or self.view_state.pending
        if answer is not None:
            self.start(answer.what, lambda op: op.answer(answer, pending))

    def action_approve(self) -> None:
        self.answer_approval(Answer.approve())

    def action_approve_always(self) -> None:
        self.answer_approval(Answer.approve_always())

    def action_reject(self, seen: PendingApproval | None = None) -> None:
        pending = seen or self.view_state.pending
        if pending is None:
            return
        self.push_screen(ReasonScreen(pending.tool), partial(self.answer_approval, seen=pending))

    def action_edit(self, seen: PendingApproval | None = None) -> None:
        pending = seen or self.view_state.pending
        if pending is None:
            return
        tool = self.engine.tools[pending.tool]
        self.push_screen(EditArgsScreen(tool, pending.args, self.engine.check_edit), partial(self.answer_approval, seen=pending))

    def action_review(self) -> None:
        pending = self.view_state.pending
        if pending is None:
            return
        tool = self.engine.tools.get(pending.tool)
        screen = ApprovalScreen(pending, tool.description if tool else "", tool.kind if tool else "", self.edit_tools)
        self.push_screen(screen, partial(self._approval_answered, seen=pending))

    @property
    def edit_tools(self) -> tuple[Any, ...]:
        """Which tools edit files (their approval shows a diff)."""
        return self.run_.edit_tools

    def _approval_answered(self, result: ApprovalResult | None, seen: PendingApproval | None = None) -> None:
        if isinstance(result, Answer):
            self.answer_approval(result, seen)
        elif result is ApprovalForm.REJECT:
            self.action_reject(seen)
        elif result is ApprovalForm.EDIT:
            self.action_edit(seen)

    def action_budget(self) -> None:
        exhausted = self.view_state.exhausted
        if exhausted is None:
            return

        def answered(answer: tuple[str, float | None] | None) -> None:
            if answer is None:
                return
            what, limit = answer
            if what == "extend" and limit is not None:
                self.start("extend budget", lambda op: op.extend_budget(exhausted.kind, limit))
            elif what == "end":
                self.start("end at budget", lambda op: op.end_at_budget())

        self.push_screen(BudgetScreen(exhausted), answered)

    def policy_names(self) -> list[str]:
        """The scenario's policies, "human", and "model" when one is configured."""
        names = self.run_.policy_names()
        if self.model_policy_factory is not None and "model" not in names:
            names.append("model")
        return names

    def make_policy(self, name: str) -> Policy:
        if name == "model" and self.model_policy_factory is not None:
            return self.model_policy_factory()
        return self.run_.make_policy(name)

    def action_pick_policy(self) -> None:
        def picked(name: str | None) -> None:
            if name is None:
                return
            if name == "human" and not self.human_in_control:
                self._previous_policy = self.engine.policy
            self.start(f"swap to {name}", lambda op: op.swap_policy(name))

        self.push_screen(PolicyPicker(self.policy_names(), self.view_state.policy), picked)

    def action_abort(self) -> None:
        if self.busy:
            self.bridge.abort_requested.set()
            self.bridge.interrupt.set()
            self._cancel_policy_call()
            self.notify("Aborting after the current step.", markup=False)
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.start("abort", lambda op: op.abort())

        self.push_screen(ConfirmScreen("Abort the run? It ends now with outcome 'aborted'.", yes="Abort"), confirmed)

    def save_copy(self, path: Path) -> None:
        """Write the header and every event seen so far to `path` (JSONL)."""
        log = self.engine.events
        lines = [dump_event(self.engine.header), *(log.raw(i).decode() for i in range(self.seen))]
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_replace(path)  # never through a link, never over a run that holds its file
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")

    def action_save(self) -> None:
        if self.run_.path is not None:
            default = str(self.run_.path.with_name(self.run_.path.stem + "-copy.jsonl"))
        else:
            default = str(Path.cwd() / "transcript.jsonl")

        def saved(path: Path | None) -> None:
            if path is not None:
                self.notify(clean(f"Saved a copy to {path}"), markup=False)

        self.push_screen(SaveScreen(default, self.save_copy, live=self.run_.path), saved)

    def action_runs(self) -> None:
        """Your runs (tui.screens.runs): one opened, resumed or forked runs beside this one."""
        open_runs(self, live=self.run_.path)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def action_ctrl_c(self) -> None:
        await quit_or_copy(self)

    async def action_quit(self) -> None:
        """q, ctrl+c and ctrl+q: leave a run that ended at once; of one that can go on, ask
        first (it stays resumable). A second quit key at the question, or one on the
        too-small screen (where no question fits), leaves without asking; so does one while the
        run is still being opened (nothing of it changed yet)."""
        if self.view_state.ended is not None or self.halted is not None or self.open_error is not None or self.opening is not None:
            self._leave()
        elif isinstance(self.screen, (QuitScreen, TooSmallScreen)):
            self._leave()
        else:
            self.push_screen(QuitScreen(resumable=self.path is not None), lambda yes: self._leave() if yes else None)

    def _leave(self) -> None:
        """Exit with the run's code: its outcome's, 1 when halted, EXIT_UNFINISHED when it can go on."""
        if self.busy and self.opening is None:
            self.bridge.interrupt.set()
            self._cancel_policy_call()
        ended = self.view_state.ended
        if ended is not None:
            code = EXIT_CODES[ended.outcome]
        else:
            code = EXIT_INTERNAL if self.halted is not None else EXIT_UNFINISHED
        self.exit(return_code=code)
