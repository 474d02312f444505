"""The step-at-a-time state machine around a policy and its tools.

`step()` advances the run to its next pause point: the policy is asked once,
then its actions run (or the engine stops in `awaiting_approval` until the
operator approves, rejects, edits or aborts). Every change is an event; state
is the fold of those events (`engine.core.state`). Nothing a policy or tool does
raises out of the engine: failures become observations or `policy_error`
events.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from engine.core.amounts import amount
from engine.core.answers import Answer, ApproveMode, auto_answer
from engine.core.approvals import decide_effect
from engine.core.events import (
    Action,
    ApprovalDecided,
    ApprovalRequested,
    Budget,
    BudgetExhausted,
    BudgetKind,
    BudgetWarning,
    DecisionMade,
    Event,
    Header,
    Observed,
    Outcome,
    PolicyFailed,
    RunEnded,
    ToolStarted,
    Usage,
)
from engine.core.decisions import check_decision, unknown_outcome_text, usage_problem
from engine.core.guards import Interrupted, RecordError, halt_reason, serialised
from engine.core.operator import Operator
from engine.core.eventlog import EventLog
from engine.core.parse import parse_decision_text
from engine.core.sink import EventSink
from engine.core.policy import AwaitingInput, HumanPolicy, Policy, PolicyError, RunView
from engine.core.collector import HeapFreezer
from engine.core.state import PendingApproval, RunState, RunStatus, estimate_tokens, fold, run_status, written_words
from engine.core.tools import DEFAULT_OBSERVATION_CAP, Tool, cap_text, execute, unknown_tool_text, validate_args

Listener = Callable[[Event], None]
BUDGET_KINDS: tuple[BudgetKind, ...] = ("steps", "tokens", "cost", "seconds")
HEADLESS_CACHE = 16
"""Events a headless engine keeps as objects in its event log (the rest as their lines): nothing
reads a headless run's events back while it runs (its listeners are handed each one), and
objects kept longer only give the garbage collector more to walk. The cockpit keeps the log's
own default."""


class Engine:
    """Drives one run.

    `interactive=True` (the cockpit) pauses at a budget limit and after a policy
    error; headless runs end there with a recorded reason. `approve` sets how
    approvals are answered: "ask" pauses for the operator, "all" and "none"
    answer automatically, and the answer is still recorded as an event.
    Before a tool runs, a `ToolStarted` note goes to `intent_listeners` (the
    transcript writer); `unfinished` is such a note a crashed run left without
    its observation: that action is answered "unknown outcome", never re-run.
    `sink` (the transcript writer) receives each event's JSON line, the one
    the event log keeps: an event is serialised once.
    The operator's calls are `operator`'s (`engine.core.operator.Operator`); the engine
    keeps its methods of the same names, which hand them on.
    With `tools_elsewhere` (the gateway) a call cleared to run is released, not
    run (`released`: index -> arguments); its result comes later by `deliver`.
    `events` are those of a run that goes on (resume, fork); `state`, their fold
    under this `header` when the caller has made it, is taken over instead of
    folding them again, and `event_lines`, their JSON lines when the caller
    wrote them (a fork), are kept instead of serialising them again.
    """

    def __init__(
        self,
        header: Header,
        tools: Sequence[Tool],
        policy: Policy,
        *,
        events: Sequence[Event] = (),
        listeners: Sequence[Listener] = (),
        clock: Callable[[], float] = time.time,
        interactive: bool = False,
        approve: ApproveMode = "ask",
        observation_cap: int | None = DEFAULT_OBSERVATION_CAP,
        unfinished: ToolStarted | None = None,
        sink: EventSink | None = None,
        tools_elsewhere: bool = False,
        state: RunState | None = None,
        event_lines: Sequence[bytes] | None = None,
    ) -> None:
        self.header = header
        self.tools = {t.name: t for t in tools}
        self.policy = policy
        self.clock = clock
        self.interactive = interactive
        self.approve_mode: ApproveMode = approve
        self.observation_cap = observation_cap
        self.unfinished = unfinished
        self.ask_again: set[tuple[int, int]] = set()
        """(step, index) of actions an earlier session had reached (resume): an approval
        they need is asked of the operator whatever `approve` says, never given on its own."""
        self.seal_approval: Callable[[ApprovalDecided], ApprovalDecided] | None = None
        """Seals an "approve always" before it is recorded, so that a resume believes it
        (`engine.sessions.seals.Sealer`, set by the session that opens the transcript)."""
        self.sink = sink
        self.tools_elsewhere = tools_elsewhere
        self.released: dict[int, dict[str, Any]] = {}
        self.intent_listeners: list[Callable[[ToolStarted], None]] = []
        self.listeners: list[Listener] = list(listeners)
        self.stream_listeners: list[Callable[[str], None]] = []
        self.fault: str | None = None
        """The last tool fault (a server that died, hung or sent garbage): `run` stops at
        it so the cockpit pauses; the next `step` clears it."""
        self.prices: dict[str, tuple[float, float]] = {}
        """Dollars per 1,000 input and output tokens by policy name; a decision of a
        policy listed here records its own cost (so swapping models counts each at its price)."""
        events = events if isinstance(events, Sequence) else list(events)
        self.events = EventLog(events, lines=event_lines) if interactive else EventLog(events, lines=event_lines, cache_size=HEADLESS_CACHE)
        self.state = fold(header, events) if state is None else state
        self.state.history.read_from(self.events.read)  # a long run's old steps are read back from the log
        self._params_of = {t.name: [p.name for p in t.params] for t in tools}
        self._limits_checked_at = -1
        self._limits_of: Budget | None = None
        self._limits: list[tuple[BudgetKind, float]] = []
        self.halted: str | None = None
        """Why the transcript stopped taking events; once set, nothing more runs."""
        self.running: ToolStarted | None = None
        """The call whose tool is running now (on whichever thread steps the engine)."""
        self._running_lock = threading.Lock()
        self.operator = Operator(self)
        """The operator's calls on this run; `answer` is the one way an approval is answered."""

    # -- reading ---------------------------------------------------------------

    @property
    def status(self) -> RunStatus:
        """ready, awaiting_input, awaiting_approval, awaiting_budget, policy_failed, ended or halted."""
        if self.halted is not None:
            return "halted"
        human = isinstance(self.policy, HumanPolicy) and self.policy.needs_input
        return run_status(self.state.status, human_needs_input=human)

    @property
    def ended(self) -> bool:
        return self.state.status == "ended"

    @property
    def stopped(self) -> bool:
        """Ended, or halted because the transcript cannot take any more."""
        return self.halted is not None or self.state.status == "ended"

    def view(self) -> RunView:
        said = self.state.said_before
        return RunView(
            task="\n\n".join([self.header.task_text, *said]) if said else self.header.task_text,
            tools=list(self.tools.values()),
            history=self.state.history,
            step=self.state.step + 1,
            stream=self._stream,
            time_left=self._time_left(),
        )

    def _time_left(self) -> float | None:
        limit = self.state.budget.max_seconds
        return None if limit is None else max(0.0, limit - self.state.seconds)

    # -- recording -------------------------------------------------------------

    def _emit(self, event: Event, *, decision_words: int | None = None) -> None:
        """Record `event`, then let it count: an event the transcript cannot take halts the run."""
        event, line = serialised(event)
        if self.sink is not None or self.halted is not None:
            self._write(event.type, line)
        self.events.append(event, line)
        self.state.apply(event, decision_words=decision_words)
        if self.listeners:
            for listener in self.listeners:
                listener(event)

    def _write(self, event_type: str, line: bytes) -> None:
        if self.halted is not None:
            self._halt_again()
        if self.sink is not None:
            try:
                self.sink.write(event_type, line)
            except Exception as exc:
                self._halt(exc)

    def _flush(self) -> None:
        if self.sink is not None and self.halted is None:
            try:
                self.sink.flush()
            except Exception as exc:
                self._halt(exc)

    def _halt_again(self) -> None:
        """Refuse to go on after a halt (the operator's calls and the writer both ask)."""
        raise RecordError(self.halted)

    def _halt(self, exc: BaseException) -> None:
        """Fail closed: nothing runs after an event the transcript could not take."""
        self.halted = halt_reason(exc)
        raise RecordError(self.halted) from None

    def _stream(self, delta: str) -> None:
        for listener in self.stream_listeners:
            listener(delta)

    def _end(self, outcome: Outcome, reason: str, answer: str | None = None) -> None:
        self._emit(RunEnded.trusted(at=float(self.clock()), outcome=outcome, reason=reason, step=self.state.step, answer=answer))

    # -- the step --------------------------------------------------------------

    def step(self) -> str:
        """Advance to the next pause point and return the status."""
        status = self._advance()
        self._flush()
        return status

    def _advance(self) -> str:
        status = self.status
        if status in ("ended", "halted", "awaiting_approval", "awaiting_budget", "awaiting_input"):
            return status
        self.fault = None
        if self.state.queue:
            self._run_queue()
        else:
            if self._check_limits():
                return self.status
            self._decide()
        if not self.ended and self.state.status == "ready" and not self.state.queue:
            self._check_limits()
        return self.status

    def run(self, should_stop: Callable[[], bool] = lambda: False, max_steps: int | None = None) -> str:
        """`continue`: step until a pause, the end, or `should_stop()` turns true.

        A headless run keeps its growing history out of the garbage collector's
        way (`engine.core.collector.HeapFreezer`): a full collection never walks
        100,000 steps of history; the heap is handed back when the run returns.
        """
        taken = 0
        freezer = HeapFreezer(self.state.events) if not self.interactive else None
        try:
            while True:
                before = self.state.events
                status = self._advance()
                taken += 1
                if freezer is not None:
                    freezer.grown(self.state.events)
                if status != "ready" or should_stop() or self.state.events == before or self.fault is not None:
                    return status
                if max_steps is not None and taken >= max_steps:
                    return status
        finally:
            self._flush()
            if freezer is not None:
                freezer.close()

    def _decide(self) -> None:
        step = self.state.step + 1
        policy = self.policy
        input_tokens = self.state.context_tokens
        if self.sink is not None:
            self._flush()
        started = self.clock()
        try:
            decision = policy.decide(self.view())
            check_decision(decision)
        except AwaitingInput:
            return
        except PolicyError as exc:
            self._policy_failed(step, policy.name, str(exc))
            return
        except Exception as exc:  # a broken policy must not break the run
            detail = str(exc)
            self._policy_failed(step, policy.name, f"policy raised {type(exc).__name__}" + (f": {detail}" if detail else ""))
            return
        duration = float(max(0.0, self.clock() - started))
        thought, actions, answer = decision.thought, list(decision.actions), decision.answer
        parse_error: str | None = None
        if decision.text is not None and not actions and answer is None:
            parsed = parse_decision_text(decision.text, self._params_of)
            thought = thought or parsed.thought
            actions, answer, parse_error = parsed.actions, parsed.answer, parsed.error
        if not actions and answer is None and parse_error is None:
            parse_error = "ERROR: the decision had neither an action nor an answer"
        actions = [a if a.call_id is not None else a.with_call_id(f"s{step}.{i}") for i, a in enumerate(actions)]
        words = written_words(decision.text, thought, actions, answer)
        usage = decision.usage
        untrusted = None if usage is None else usage_problem(usage)  # a server never switches budgets off
        if usage is None or untrusted is not None:
            usage = Usage.trusted(input_tokens=input_tokens, output_tokens=estimate_tokens(words), estimated=True)
            if untrusted is not None:
                thought = f"{thought}\n[agent-tui: {untrusted}; the usage was estimated instead]".lstrip("\n")
        price = self.prices.get(policy.name)
        cost = decision.cost if decision.cost is not None else None if price is None else (
            usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1000
        # Every field is of its type here (check_decision, the parser), so the event is
        # built without validation; only a policy's name is checked.
        made = DecisionMade.trusted if isinstance(policy.name, str) else DecisionMade
        self._emit(
            made(
                at=float(self.clock()),
                step=step,
                policy=policy.name,
                thought=thought,
                actions=actions,
                answer=answer,
                parse_error=parse_error,
                raw=decision.text,
                usage=usage,
                duration=duration,
                cost=cost,
            ),
            decision_words=words,
        )
        if answer is not None:
            self._end("answer", "final answer", answer=answer)
            return
        if parse_error is not None:
            self._emit(Observed.trusted(at=float(self.clock()), step=step, index=0, tool=None, text=parse_error, error=True))
            return
        if self.header.repetition_threshold is not None and self._braked(actions):
            return
        self._run_queue()

    def _braked(self, actions: Sequence[Action]) -> bool:
        """The repetition brake, right after a decision: True when it ended the run."""
        threshold = self.header.repetition_threshold
        if threshold is None or self.state.repeat_count < threshold:
            return False
        shown = ", ".join(a.render() for a in actions)
        self._end("stopped", f"repetition: the same action {self.state.repeat_count} times in a row ({shown})")
        return True

    def _policy_failed(self, step: int, name: str, message: str) -> None:
        self._emit(PolicyFailed(at=self.clock(), step=step, policy=name, message=message))
        if not self.interactive:
            self._end("stopped", f"policy error: {message}")

    def _run_queue(self) -> None:
        """Process the current decision's remaining actions until a pause or the end.

        The queue keeps a released call (its result comes later) and drops an observed one,
        so the first call still to process is found past the released ones seen so far:
        one pass over the queue however many calls a decision has."""
        position = 0
        while not self.ended:
            queue = self.state.queue
            while position < len(queue) and queue[position][0] in self.released:
                position += 1
            if position == len(queue):
                return
            index, action = queue[position]
            started = self.unfinished
            if started is not None and (started.step, started.index) == (self.state.step, index):
                # The run stopped while this call ran (resume after a crash): never run it again.
                self.unfinished = None
                self._observe(index, started.tool, dict(started.args), unknown_outcome_text(started), error=True)
                continue
            if not self._process(index, action):
                return

    def _observe(self, index: int, tool: str | None, args: dict[str, Any], text: str, **flags: Any) -> None:
        """An observation the engine made (its fields are of their types: built without validation)."""
        self._emit(Observed.trusted(at=float(self.clock()), step=self.state.step, index=index, tool=tool, args=args, text=text, **flags))

    def _process(self, index: int, action: Action) -> bool:
        """Handle one action; False when the run paused or ended."""
        tool = self.tools.get(action.tool)
        if tool is None:
            self._observe(index, action.tool, action.args, unknown_tool_text(action.tool, self.tools), error=True)
            return True
        if action.args_error is not None:
            self._observe(index, tool.name, action.args, f"ERROR: {action.args_error}", error=True)
            return True
        try:
            args = validate_args(tool, action.args)
        except ValueError as exc:
            self._observe(index, tool.name, action.args, f"ERROR: invalid arguments for {tool.name}: {exc}", error=True)
            return True
        if tool.kind == "exit":
            value = args.get(tool.answer_param) if tool.answer_param else None
            text = "" if value is None else str(value)
            if tool.outcome == "answer":
                self._end("answer", f"{tool.name} called", answer=text)
            else:
                self._end("handed_off", f"{tool.name}: {text}" if text else tool.name)
            return False
        again = bool(self.ask_again) and (self.state.step, index) in self.ask_again
        # An action an earlier session reached is judged by the header's rules alone: an
        # "approve always" read from the file never clears the call it was recorded for.
        effect, why = decide_effect(self.header.rules if again else self.state.rules, tool, args, action.args)
        if effect == "deny":
            self._observe(index, tool.name, args, f"DENIED: {tool.name} is not allowed here ({why})", error=True)
            return True
        if effect == "ask":
            self._emit(
                ApprovalRequested(at=self.clock(), step=self.state.step, index=index, tool=tool.name, args=args, reason=why)
            )
            automatic = None if again else auto_answer(self.approve_mode)
            if automatic is None:
                return False
            self.operator.apply(automatic)
            return automatic.choice == "reject" or self.fault is None
        self._execute(index, tool, args)
        return self.fault is None

    def _execute(self, index: int, tool: Tool, args: dict[str, Any]) -> None:
        intent: ToolStarted | None = None
        if self.intent_listeners or self.sink is not None:
            intent, line = serialised(
                ToolStarted.trusted(at=float(self.clock()), step=self.state.step, index=index, tool=tool.name, args=args)
            )
            self._write(intent.type, line)  # on disk before the tool can act, or the tool never runs
            for listener in self.intent_listeners:
                listener(intent)
        if self.tools_elsewhere:
            self.released[index] = args
            return
        self.running = intent
        try:
            result = execute(tool, args, cap=self.observation_cap, clock=self.clock)
        except (KeyboardInterrupt, Interrupted):
            if intent is not None:  # Ctrl+C or SIGTERM while the tool ran: record what a kill leaves
                self._unknown_outcome(intent)
            raise
        if intent is not None:
            with self._running_lock:
                if self.running is not intent:
                    return  # another thread recorded this call's outcome as unknown and ended the run
                self.running = None
        self._emit(Observed.trusted(
            at=float(self.clock()), step=self.state.step, index=index, tool=tool.name, args=args, text=result.text,
            error=result.error, executed=result.executed, truncated=result.truncated, duration=float(max(0.0, result.duration)),
        ))
        if result.fault:
            self.fault = result.text
            if not self.interactive:
                self._end("stopped", f"tool fault: {result.text.removeprefix('ERROR: ')}")

    def _unknown_outcome(self, intent: ToolStarted) -> None:
        """The call `intent` was cut off while its tool ran: its outcome is unknown."""
        with self._running_lock:
            if self.running is not intent:
                return
            self.running = None
        self._observe(intent.index, intent.tool, dict(intent.args), unknown_outcome_text(intent), error=True)

    # -- the operator's calls (`operator`'s, kept here for `from engine import Engine` users) --

    def answer(self, answer: Answer, expected: PendingApproval | None = None) -> RunStatus:
        """Apply the operator's `answer` to the pending approval (see `Operator.answer`)."""
        return self.operator.answer(answer, expected)

    def approve(self, always: bool = False, by: str = "operator") -> RunStatus:
        return self.operator.answer(Answer.approve_always(by) if always else Answer.approve(by))

    def reject(self, reason: str, by: str = "operator") -> RunStatus:
        return self.operator.answer(Answer.reject(reason, by))

    def modify(self, args: dict[str, Any], by: str = "operator") -> RunStatus:
        """Run the pending action with edited arguments (validated first; ValueError if not valid)."""
        return self.operator.answer(Answer.edit(args, by))

    def check_edit(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validate edited arguments for the pending action; raises ValueError."""
        return self.operator.check_edit(args)

    def abort(self, reason: str = "aborted by the operator") -> RunStatus:
        return self.operator.abort(reason)

    def swap_policy(self, policy: Policy) -> None:
        self.operator.swap_policy(policy)

    def extend_budget(self, kind: BudgetKind, limit: float) -> RunStatus:
        return self.operator.extend_budget(kind, limit)

    def end_answered(self) -> RunStatus:
        return self.operator.end_answered()

    def end_if_braked(self) -> bool:
        return self.operator.end_if_braked()

    def end_at_budget(self) -> RunStatus:
        return self.operator.end_at_budget()

    def stop(self, reason: str) -> str:
        """End the run from another thread (SIGTERM while the cockpit waits on a tool):
        a call still running is recorded with an unknown outcome, then the run is aborted."""
        running = self.running
        if running is not None:
            self._unknown_outcome(running)
        return self.abort(reason)

    def deliver(self, index: int, text: str, error: bool = False, executed: bool = True) -> None:
        """The result of a released call, run elsewhere (`tools_elsewhere`); `executed=False`
        when the call never reached whoever runs it."""
        text, truncated = cap_text(text, self.observation_cap)
        tool = next(a.tool for i, a in self.state.queue if i == index)  # the first, when results come in order
        self._emit_outside(index, tool, self.released.pop(index), text, error=error, executed=executed, truncated=truncated)

    def note(self, text: str, error: bool = False) -> None:
        """An observation that answers no action (a user's message, an agent that went away)."""
        self._emit_outside(-1, None, {}, text, error=error)

    def _emit_outside(self, index: int, tool: str | None, args: dict[str, Any], text: str, **flags: Any) -> None:
        """An observation whose text came from outside the engine: validated, unless each value
        is of its field's own type (a `str` text, as the gateway's results are; the rest is the engine's)."""
        own = type(text) is str and type(index) is int and (tool is None or type(tool) is str) and type(args) is dict
        made = Observed.trusted if own and all(type(flag) is bool for flag in flags.values()) else Observed
        self._emit(made(at=float(self.clock()), step=self.state.step, index=index, tool=tool, args=args, text=text, **flags))

    # -- limits ----------------------------------------------------------------

    def _check_limits(self) -> bool:
        """Warn at 80 % of a limit; at the limit pause (interactive) or end. True if stopped.

        Nothing is checked twice: when no event came since the last check, the
        answer is the same (no limit reached, or the run would have stopped).
        """
        if self._limits_checked_at == self.state.events:
            return False
        budget = self.state.budget
        if budget is not self._limits_of:  # a budget is frozen: a new limit is a new object
            self._limits = [(kind, budget.limit(kind)) for kind in BUDGET_KINDS if budget.limit(kind) is not None]
            self._limits_of = budget
        for kind, limit in self._limits:
            used = self.state.used(kind)
            if used >= limit:
                if self.interactive:
                    self._emit(BudgetExhausted(at=self.clock(), kind=kind, used=used, limit=limit))
                else:
                    self._end("stopped", f"{kind} budget reached: {amount(kind, used)} of {amount(kind, limit)}")
                return True
            if used >= budget.warn_at * limit and kind not in self.state.warned:
                self._emit(BudgetWarning(at=self.clock(), kind=kind, used=used, limit=limit))
        self._limits_checked_at = self.state.events
        return False
