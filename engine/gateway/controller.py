"""The gateway: an agent's requests and the operator's decisions driving ordinary runs.

A gateway run is an engine run whose policy is the upstream model
(`UpstreamPolicy`) and whose tools are the agent's, run by the agent
(`Engine(tools_elsewhere=True)`). An agent request is one model turn:

1. the request's new messages are delivered: tool results become the
   observations of the calls released before, a new user message is noted;
2. the engine steps (at once in continue mode, on the operator's `n` in step
   mode): the upstream is asked, its reply is the decision, each tool call is
   allowed by a rule or held for approval;
3. when every call is decided the response goes back: the released calls (as
   the upstream wrote them, or rebuilt if edited or partly rejected). When
   none was released the rejections go upstream as tool messages and the
   upstream is asked again, so the agent never sees a rejected call.

A reply without tool calls is the run's answer; a later request continuing
the same conversation starts the next run (a new transcript) with the whole
history. A request that continues nothing starts a new conversation. All
methods take one lock; operator calls come from any thread.
"""

from __future__ import annotations

import time
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from engine.core.answers import ABORTED, Answer
from engine.core.engine import ApproveMode, Engine
from engine.core.guards import RecordError
from engine.core.operator import StaleApproval
from engine.core.events import Budget, BudgetExhausted, DecisionMade, Event, Header, Observed, PolicyFailed, RuleInfo, RunEnded
from engine.gateway.conversation import Conversation, NewMessages, check_request, message_text
from engine.gateway.schema import ToolsError, tools_from_request
from engine.gateway.client import UpstreamClient
from engine.gateway.upstream import Upstream, UpstreamPolicy
from engine.gateway.wire import Response, built_reply, error_response, passthrough, tool_call
from engine.core.urls import safe_url
from engine.model.config import Secret
from engine.core.policy import Decision
from engine.core.state import PendingApproval, RunState
from engine.sessions.build import build_engine
from engine.sessions.run import default_transcript_path, free_path
from engine.sessions.seals import Sealer, key_or_problem, sealed_run
from engine.core.tools import Tool
from engine.stored.transcript import TranscriptWriter

from engine.gateway.runs import FinishedRun, GatewayRun, Held, Turn

__all__ = ["FinishedRun", "Gateway", "GatewayRun", "Held", "Mode", "StaleApproval", "Turn"]

Mode = Literal["step", "continue"]
MAX_ASKS = 8
"""Times one request asks the upstream again after every call was refused."""


def call_ids(actions: Sequence[Any]) -> list[str]:
    """The id each of a decision's calls goes to the agent (and upstream) with: the upstream's,
    except that a call with no id, or one an earlier call of the decision already has, gets
    a distinct one (two calls sharing an id would get one result between them)."""
    taken = {a.call_id for a in actions if a.call_id}
    used: set[str] = set()
    tried: dict[str, int] = {}
    out: list[str] = []
    for i, action in enumerate(actions):
        given = action.call_id or f"call_{i}"
        chosen = given
        while chosen in used or (chosen != action.call_id and chosen in taken):
            tried[given] = tried.get(given, 1) + 1
            chosen = f"{given}_{tried[given]}"
        used.add(chosen)
        out.append(chosen)
    return out


class Gateway:
    def __init__(
        self,
        upstreams: Sequence[Upstream],
        *,
        rules: Sequence[RuleInfo] = (),
        budget: Budget | None = None,
        approve: ApproveMode = "ask",
        headless: bool = False,
        mode: Mode = "continue",
        out: str | Path | None = None,
        save: bool = True,
        key: Secret | None = None,
        timeout: float = 600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not upstreams:
            raise ValueError("the gateway needs an upstream")
        self.upstreams = list(upstreams)
        self.upstream = self.upstreams[0]
        self.rules = list(rules)
        self.budget = budget or Budget()
        self.approve_mode: ApproveMode = approve
        self.headless = headless
        self.mode: Mode = mode
        self.out = Path(out) if out is not None else None
        self.save = save
        self.clock = clock
        self.lock = threading.RLock()
        self.runs: list[GatewayRun | FinishedRun] = []
        """Every run: the finished ones as `FinishedRun`s, the current one (last) whole."""
        self._current: GatewayRun | None = None
        self.held: Held | None = None
        self.turn = Turn()
        self.answered: tuple[int, Response] | None = None
        self.event_listeners: list[Callable[[GatewayRun, Event], None]] = []
        self.change_listeners: list[Callable[[], None]] = []
        self._conversations = 0
        self._out_number = 1
        self._tools_seen: tuple[Any, list[Tool]] | None = None
        self._credit = 0
        self._key = key
        self._client = UpstreamClient(timeout)

    # -- reading ---------------------------------------------------------------

    @property
    def current(self) -> GatewayRun | None:
        return self._current

    @property
    def engine(self) -> Engine | None:
        run = self.current
        return run.engine if run is not None else None

    def status(self) -> str:
        """waiting for the agent, holding a request, or the engine's pause."""
        engine = self.engine
        if engine is not None and engine.status in ("awaiting_approval", "awaiting_budget"):
            return engine.status
        if self.held is None:
            return "waiting for the agent"
        if engine is not None and engine.status == "policy_failed":
            return "policy_failed"
        return "request held" if self.mode == "step" else "asking the upstream"

    def model_names(self) -> list[str]:
        return [u.model or u.name for u in self.upstreams]

    # -- requests --------------------------------------------------------------

    def submit(self, body: Any) -> Future[Response]:
        """Take an agent's chat completions request; the future resolves to its response."""
        future: Future[Response] = Future()
        problem = check_request(body)
        tools: list[Tool] = []
        if problem is None:
            try:
                tools = self._tools(body.get("tools"))
            except ToolsError as exc:
                problem = str(exc)
        if problem is not None:
            future.set_result(error_response(400, f"agent-tui gateway: {problem}"))
            return future
        with self.lock:
            try:
                self._take(body, tools, future)
                self._advance()
            except (RecordError, OSError) as exc:  # the transcript cannot be written: nothing is released
                self._cannot_record(future, exc)
        self._changed()
        return future

    def _tools(self, spec: Any) -> list[Tool]:
        """The request's tools; the previous request's `Tool`s when it declared the same ones
        (an agent sends its tools every time: neither they nor their schemas' validators,
        cached per schema object, are built again)."""
        seen = self._tools_seen
        try:
            if seen is not None and seen[0] == spec:
                return seen[1]
        except RecursionError:
            pass  # nested past what comparing can follow: read as new (and refused there)
        tools = tools_from_request(spec)
        self._tools_seen = (spec, tools)
        return tools

    def _cannot_record(self, future: Future[Response], exc: BaseException) -> None:
        """Answer the waiting request (and `future`) with an error: a turn the transcript
        cannot hold sends the agent no call and no answer."""
        from engine.core.guards import halt_reason

        engine = self.engine
        reason = engine.halted if engine is not None and engine.halted is not None else halt_reason(exc)
        response = error_response(503, f"agent-tui gateway: {reason}", "agent_tui", "transcript_unwritable")
        if self.held is not None:
            self._respond(response)
        if not future.done():
            future.set_result(response)

    def _take(self, body: dict[str, Any], tools: list[Tool], future: Future[Response]) -> None:
        messages = body["messages"]
        run = self.current
        if self.held is not None:
            self.held.future.cancel()
            self.held = None
        if run is not None and run.conversation.continues(messages):
            conversation = run.conversation
            fresh = len(messages) > len(conversation.known)
            if not fresh and self.answered is not None and self.answered[0] == len(conversation.known):
                self._hand(run, self.answered[1], future)  # the same request again: the same response
                return
            found = conversation.take(messages)
            if run.engine.ended and fresh and run.engine.state.ended.outcome == "answer":
                run = self._start(conversation, tools, found.user or ["(the conversation goes on)"])
            elif fresh and not run.engine.ended:
                run.engine.tools.update({t.name: t for t in tools})
                if self.turn.decision is not None and self.answered is None:
                    # The decision being answered has not gone out (a call waits for the
                    # operator): this newer request takes the older one's place and gets it.
                    self._note_user(run.engine, found.user)
                else:
                    self.turn = Turn()
                    self.answered = None
                    self._deliver(run, found)
        else:
            if run is not None and not run.engine.ended:
                self._end_run(run, "the agent started another conversation")
            self._conversations += 1
            conversation = Conversation(self._conversations)
            found = conversation.take(messages)
            run = self._start(conversation, tools, found.user or [message_text(messages[-1].get("content"))])
        self.held = Held(body, future)

    def _deliver(self, run: GatewayRun, found: NewMessages) -> None:
        """The new messages into the run: each released call's result, or why there is none
        (a call is recorded as run only if the response carrying it reached the agent, or the
        agent's history shows it), then the user's turns."""
        engine = run.engine
        for index in sorted(engine.released):
            call_id = run.sent_ids.get(index, "")
            text = found.results.get(call_id) if call_id else None
            if text is not None:
                engine.deliver(index, text)
            elif call_id in found.calls or run.carried.get(index) is True:
                engine.deliver(index, "ERROR: the agent sent no result for this call", error=True)
            else:
                why = run.missed.get(index) if run.carried.get(index) is False else None
                self._never_reached(engine, index, why or "the agent's next request neither answers it nor shows it received it")
        run.carried, run.missed = {}, {}
        self._note_user(engine, found.user)

    @staticmethod
    def _never_reached(engine: Engine, index: int, why: str) -> None:
        engine.deliver(index, f"NOT RUN: the call never reached the agent ({why}); nothing ran", error=True, executed=False)

    def _end_run(self, run: GatewayRun, reason: str) -> None:
        """Abort `run`; first a released call no response was made for is recorded as never
        reaching the agent (one given to a connection may have: it stays unknown)."""
        engine = run.engine
        for index in sorted(engine.released):
            if index not in run.carried:
                self._never_reached(engine, index, f"the run ended before a response carried it: {reason}")
        engine.abort(reason)

    def _note_user(self, engine: Engine, user: list[str]) -> None:
        for text in user:
            engine.note(f"USER: {text}")

    def _start(self, conversation: Conversation, tools: list[Tool], user: list[str]) -> GatewayRun:
        conversation.turns += 1
        number = len(self.runs) + 1
        task = f"conversation-{conversation.number}-turn-{conversation.turns}"
        policy = self._policy(self.upstream)
        header = Header(
            scenario="gateway",
            task=task,
            task_text="\n".join(user),
            options={
                "upstream": safe_url(self.upstream.url),
                "model": self.upstream.model,
                "conversation": conversation.number,
                "turn": conversation.turns,
            },
            tools=[t.info() for t in tools],
            budget=self.budget,
            rules=self.rules,
            policy=policy.name,
            repetition_threshold=None,
            started_at=self.clock(),
        )
        path: Path | None = None
        writer: TranscriptWriter | None = None
        sealer: Sealer | None = None
        taken: list[Path] = []
        if self.save:
            header, sealer = sealed_run(key_or_problem()[0], header)
            path, writer, taken = self._writer(number, task, header)
        engine = build_engine(
            header, tools, policy, writer=writer, sealer=sealer, clock=self.clock, interactive=True, approve=self.approve_mode,
            tools_elsewhere=True,
        )
        run = GatewayRun(number, conversation, conversation.turns, engine, path, writer)
        engine.listeners.append(lambda event: self._on_event(run, event))
        if self._current is not None:
            self.runs[-1] = self._current.finished()
        self.runs.append(run)
        self._current = run
        self.turn = Turn()
        self.answered = None
        if taken:
            names = ", ".join(p.name for p in taken)
            engine.note(f"{names} {'is' if len(taken) == 1 else 'are'} taken (another file or a link): this run's transcript is {path}")
        return run

    def _writer(self, number: int, task: str, header: Header) -> tuple[Path, TranscriptWriter, list[Path]]:
        """The run's transcript: in the data folder, or `-o FILE` for the first run and the next
        free of FILE-2, FILE-3... for later ones (a name taken by anything is skipped, and listed)."""
        if self.out is None:
            path = default_transcript_path("gateway", task, header.started_at)
            return path, TranscriptWriter(path, header), []
        if number == 1:
            return self.out, TranscriptWriter(self.out, header), []
        taken: list[Path] = []
        wanted = max(number, self._out_number + 1)
        while True:
            path, n = free_path(self.out.parent, self.out.stem, self.out.suffix, wanted)
            taken += [self.out.with_name(f"{self.out.stem}-{k}{self.out.suffix}") for k in range(wanted, n)]
            try:
                writer = TranscriptWriter(path, header)
            except FileExistsError:  # written by someone else since it was looked at
                taken.append(path)
                wanted = n + 1
                continue
            self._out_number = n
            return path, writer, taken

    def _policy(self, upstream: Upstream) -> UpstreamPolicy:
        return UpstreamPolicy(upstream, self._upstream_body, key=self._key, client=self._client)

    def _upstream_body(self) -> dict[str, Any]:
        held, run = self.held, self.current
        if held is None or run is None:
            raise RuntimeError("no agent request to answer")
        return {**held.body, "messages": list(run.conversation.upstream)}

    def _on_event(self, run: GatewayRun, event: Event) -> None:
        if run is self.current:
            if isinstance(event, DecisionMade):
                policy = run.engine.policy
                reply = policy.last_reply if isinstance(policy, UpstreamPolicy) else None
                self.turn.decision, self.turn.reply, self.turn.refused = event, reply, {}
            elif isinstance(event, Observed) and not event.executed and event.index >= 0:
                self.turn.refused[event.index] = event.text
            elif isinstance(event, PolicyFailed):
                self.turn.failure = event
        for listener in self.event_listeners:
            listener(run, event)

    def _changed(self) -> None:
        for listener in self.change_listeners:
            listener()

    # -- answering -------------------------------------------------------------

    def _advance(self) -> None:
        """Move the held request on as far as the mode and the operator allow."""
        while self.held is not None and self.current is not None:
            engine = self.current.engine
            status = engine.status
            if status == "halted":
                self._cannot_record(self.held.future, RecordError(engine.halted))
                return
            if status == "ended":
                self._respond(self._end_response())
                return
            if status == "awaiting_approval":
                return
            if status == "awaiting_budget":
                if not self.headless:
                    return
                engine.end_at_budget()
                continue
            if status == "policy_failed" and self.turn.failure is not None:
                self._respond(self._failure_response())
                return
            decision = self.turn.decision
            if decision is not None and not engine.state.queue:
                if self.turn.asks >= MAX_ASKS:
                    self._respond(error_response(409, f"agent-tui gateway: every call was refused {MAX_ASKS} times in a row", "refused"))
                    return
                self._refused_go_upstream(decision, now=True)
                self.turn.decision = None
                self.turn.asks += 1
            elif decision is not None:
                self._respond(self._released_response(decision))
                return
            elif self.mode == "step" and self._credit == 0:
                return
            else:
                self._credit = 0
            before = len(engine.events)
            try:
                engine.step()
            except RecordError:
                continue  # halted: answered at the top of the loop
            if len(engine.events) == before:
                return

    def _refused_go_upstream(self, decision: DecisionMade, now: bool) -> None:
        ids = call_ids(decision.actions)
        calls = [tool_call(ids[i], a.tool, a.args) for i, a in enumerate(decision.actions) if i in self.turn.refused]
        answers = [(ids[i], self.turn.refused[i]) for i, a in enumerate(decision.actions) if i in self.turn.refused]
        if calls:
            self.current.conversation.rejected(decision.thought, calls, answers, now)

    def _released_response(self, decision: DecisionMade) -> Response:
        engine = self.current.engine
        released = engine.released
        reply = self.turn.reply
        ids = call_ids(decision.actions)
        renamed = [(i, a.call_id, ids[i]) for i, a in enumerate(decision.actions) if a.call_id != ids[i]]
        self.current.sent_ids = {i: ids[i] for i in released}
        unchanged = (
            reply is not None
            and not renamed
            and len(released) == len(decision.actions)
            and all(released[i] == a.args for i, a in enumerate(decision.actions))
        )
        if unchanged and reply.stream == self.held.stream and reply.raw_safe:
            return passthrough(reply.raw, reply.stream)
        if renamed:
            said = "; ".join(f"call {i + 1} had {old!r}, sent as {new!r}" for i, old, new in renamed)
            engine.note(f"the upstream gave several calls the same id (or none): each gets its own ({said})")
        self._refused_go_upstream(decision, now=False)
        calls = [tool_call(ids[i], a.tool, released[i]) for i, a in enumerate(decision.actions) if i in released]
        return self._built(decision.thought or None, calls, decision)

    def _built(self, content: str | None, calls: list[dict[str, Any]], decision: DecisionMade | None) -> Response:
        body = self.held.body
        usage = decision.usage if decision is not None and not decision.usage.estimated else None
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        model = str(self.upstream.model or body.get("model") or "agent-tui")
        return built_reply(content, calls, model=model, stream=self.held.stream, usage=usage, include_usage=include)

    def _end_response(self) -> Response:
        ended: RunEnded = self.current.engine.state.ended
        decision, reply = self.turn.decision, self.turn.reply
        if ended.outcome == "answer" and decision is not None and decision.answer is not None:
            if reply is not None and reply.stream == self.held.stream and reply.raw_safe:
                return passthrough(reply.raw, reply.stream)
            return self._built(decision.answer, [], decision)
        code = "budget_exhausted" if "budget reached" in ended.reason else "run_ended"
        return error_response(400, f"agent-tui gateway: the run has ended ({ended.outcome}): {ended.reason}", "agent_tui", code)

    def _failure_response(self) -> Response:
        failure = self.turn.failure
        self.turn.failure = None
        policy = self.current.engine.policy
        kept = policy.last_failure if isinstance(policy, UpstreamPolicy) else None
        if kept is not None:
            body = kept.body
            return Response(kept.status, body, "application/json", dict(kept.headers))
        return error_response(502, f"agent-tui gateway: {failure.message if failure else 'the policy failed'}", "upstream_error")

    def _respond(self, response: Response, waiting: bool = True) -> None:
        """Answer the held request; `waiting` False when no agent's connection waits for it."""
        held, self.held = self.held, None
        run = self.current
        if response.status == 200:
            self.answered = (len(run.conversation.known), response)
            if run.engine.released:
                self._carry(run, response, set(run.engine.released))
                if waiting:
                    run.carried.update((i, None) for i in run.engine.released)
        if held is not None and not held.future.done():
            held.future.set_result(response)

    def _carry(self, run: GatewayRun, response: Response, calls: set[int]) -> None:
        """Follow whether `response`, carrying the released `calls`, reaches the agent."""
        for index in calls:
            run.carried[index] = False
            run.missed[index] = "no request was waiting for the response carrying it: the agent had left"

        def sent(ok: bool) -> None:
            with self.lock:
                mine = [i for i in calls if i in run.carried]
                if not mine:
                    return  # delivered (or recorded as never received) meanwhile
                for index in mine:
                    if ok:
                        run.carried[index] = True
                    elif run.carried[index] is not True:
                        run.carried[index] = False
                        run.missed[index] = "the agent's connection closed before the response carrying it was sent"
                if not ok and not run.engine.ended:
                    tools = dict(run.engine.state.queue)
                    shown = ", ".join(tools[i].tool for i in sorted(mine) if i in tools)
                    try:
                        run.engine.note(
                            f"the agent's connection closed before the response carrying {shown} reached it; "
                            "the agent's retry of the same request gets it",
                            error=True,
                        )
                    except RecordError:
                        pass  # halted: the next request is told
            self._changed()

        response.on_sent = sent

    def _hand(self, run: GatewayRun, response: Response, future: Future[Response]) -> None:
        """Give a kept response to a request that asks again: a connection now takes it."""
        for index, carried in run.carried.items():
            if carried is False:
                run.carried[index] = None
        future.set_result(response)

    def disconnected(self, future: Future[Response]) -> None:
        """The agent closed the connection before its response was ready."""
        with self.lock:
            if self.held is None or self.held.future is not future:
                return
            self.held = None
            engine = self.engine
            if engine is not None and not engine.stopped:
                engine.note(
                    "the agent disconnected while its response was held; the next request continues the run",
                    error=True,
                )
        self._changed()

    # -- the operator ----------------------------------------------------------

    def _operate(self, op: Callable[[Engine], object]) -> None:
        """Apply the operator's `op` to the current run; an answer that names the approval the
        operator saw is refused when an agent's new request has replaced it since (`answer`)."""
        with self.lock:
            engine = self.engine
            if engine is None:
                raise ValueError("no run yet: the agent has not sent a request")
            try:
                op(engine)
            except StaleApproval as exc:
                raise StaleApproval(exc.expected, "the agent's requests moved the gateway on; nothing ran") from None
            except RecordError:
                self._advance()  # the held request learns that nothing was released
                raise
            self._advance()
            if self.held is None and self.turn.decision is not None and engine.status == "ready":
                self._keep_unsent(engine)
        self._changed()

    def _keep_unsent(self, engine: Engine) -> None:
        """A decision finished while no request waits (the agent left): keep the response for its retry."""
        decision = self.turn.decision
        if engine.released and decision is not None and self.answered is None:
            self.held = Held({"stream": self.turn.reply.stream if self.turn.reply else False}, Future())
            self._respond(self._released_response(decision), waiting=False)

    def step(self) -> None:
        """Step mode: let one model turn happen (now, or for the next request)."""
        with self.lock:
            self.mode, self._credit = "step", 1
            if self.engine is not None:
                self._advance()
        self._changed()

    def set_mode(self, mode: Mode) -> None:
        with self.lock:
            self.mode = mode
            if self.engine is not None:
                self._advance()
        self._changed()

    def answer(self, answer: Answer, expected: PendingApproval | None = None) -> None:
        """Apply the operator's answer to the pending call; `expected`: the pending approval the
        operator saw (see `_operate`). An abort ends the run whatever is pending (`abort`)."""
        if answer.choice == "abort":
            self.abort(answer.reason or ABORTED)
        else:
            self._operate(lambda e: e.answer(answer, expected))

    def approve(self, always: bool = False, expected: PendingApproval | None = None) -> None:
        self.answer(Answer.approve_always() if always else Answer.approve(), expected)

    def reject(self, reason: str, expected: PendingApproval | None = None) -> None:
        self.answer(Answer.reject(reason), expected)

    def modify(self, args: dict[str, Any], expected: PendingApproval | None = None) -> None:
        self.answer(Answer.edit(args), expected)

    def go_on(self, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Continue mode: each request is answered without waiting for `step`."""
        self.set_mode("continue")

    def pause(self) -> None:
        self.set_mode("step")

    def swap_policy(self, name: str) -> None:
        self.swap(name)

    def folded_state(self) -> RunState | None:
        """A copy of the current run's state (None before the agent's first request)."""
        with self.lock:
            engine = self.engine
            return engine.state.copy() if engine is not None else None

    def extend_budget(self, kind: Any, limit: float) -> None:
        self._operate(lambda e: e.extend_budget(kind, limit))

    def end_at_budget(self) -> None:
        self._operate(lambda e: e.end_at_budget())

    def abort(self, reason: str = ABORTED) -> None:
        self._operate(lambda e: self._end_run(self.current, reason))

    def take_over(self, decision: Decision) -> None:
        """The operator writes the reply to the held request (text, or calls of the request's tools)."""

        def write(engine: Engine) -> None:
            if self.held is None or self.turn.decision is not None or engine.status not in ("ready", "policy_failed"):
                raise ValueError("take over needs a held request the model has not answered yet")
            run = self.current
            previous = engine.policy
            engine.swap_policy(run.human)
            run.human.supply(decision)
            self.turn.reply = None
            engine.step()
            engine.swap_policy(previous)

        self._operate(write)

    def swap(self, name: str) -> None:
        """Send the next requests to another upstream, with the whole history."""
        chosen = next((u for u in self.upstreams if u.name == name or u.label == name), None)
        if chosen is None:
            raise ValueError(f"no upstream named {name!r} (upstreams: {', '.join(u.name for u in self.upstreams)})")
        with self.lock:
            self.upstream = chosen
            engine = self.engine
            if engine is not None and not engine.ended:
                engine.swap_policy(self._policy(chosen))
        self._changed()

    def stop(self, reason: str) -> RunEnded | None:
        """End the gateway: the open run is aborted, a held request gets a 503. Returns how the last run ended."""
        with self.lock:
            run = self.current
            if run is not None and not run.engine.ended:
                try:
                    self._end_run(run, reason)
                except RecordError:
                    pass  # halted: nothing more can be recorded; the held request is told below
            if self.held is not None and not self.held.future.done():
                self.held.future.set_result(error_response(503, f"agent-tui gateway: {reason}", "unavailable"))
                self.held = None
            if run is not None:
                run.close()
            self._client.close()
            return run.engine.state.ended if run is not None else None
