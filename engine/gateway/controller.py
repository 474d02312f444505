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
history. A request that continues nothing starts a new conversation, its own
run beside the others: many go on at once, each under its own lock (an upstream
call or a held call of one never waits for another's). A request without tools
that continues nothing while a run goes on (a title, a summary, a router) is a
side request: passed to the upstream and back, and noted on that run. Operator
calls come from any thread; without a `run` they apply to the selected
conversation (the latest, unless `select`ed), and an answer with `expected`
to the run whose pending approval it is.
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
from engine.core.events import Budget, DecisionMade, Event, Header, Observed, PolicyFailed, RuleInfo, RunEnded, ToolInfo
from engine.gateway.conversation import Conversation, NewMessages, message_text
from engine.gateway.schema import ToolsError, tools_from_request
from engine.gateway.client import UpstreamClient
from engine.gateway.upstream import Upstream, UpstreamPolicy
from engine.wires import Wire, chat, gemini
from engine.wires.neutral import Response, asks_for_json, checked_before
from engine.core.urls import safe_url
from engine.model.config import Secret
from engine.core.policy import Decision
from engine.core.state import PendingApproval, RunState, estimate_tokens
from engine.sessions.build import build_engine
from engine.sessions.run import default_transcript_path, free_path
from engine.sessions.seals import Sealer, key_or_problem, sealed_run
from engine.core.tools import Tool
from engine.stored.transcript import TranscriptWriter

from engine.gateway.early import EarlyStream
from engine.gateway.replies import end_response, policy_failure_response, refused_go_upstream, released_response, side_response
from engine.gateway.runs import FinishedRun, GatewayRun, Held, Line, OlderRuns, Turn

__all__ = ["FinishedRun", "Gateway", "GatewayRun", "Held", "Line", "Mode", "OlderRuns", "StaleApproval", "Turn"]

Mode = Literal["step", "continue"]
MAX_ASKS = 8
"""Times one request asks the upstream again after every call was refused."""
KEPT_CONVERSATIONS = 256
"""Ended conversations kept to match requests against."""
CHECKED_CONVERSATIONS = 8
"""The conversations taken last whose latest items a request's check skips when it begins with
them (an agent's conversation and its sub-agents'); one continuing an older one is checked whole."""
KEPT_SIDE_NOTES = 64
"""Side requests held (their notes) while no run of their agent goes on; past this many, they
are written as a run of their own."""
KEPT_RUNS = 256
"""Runs `Gateway.runs` lists, the newest, those going on among them (an older one going on is
listed too, beyond this many): as many as the ended
conversations kept, whose lines hold their last runs anyway (about 450 bytes each). An older
run is one no request continues; it is counted in `Gateway.older` and read from its transcript."""


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
        """The table (`lines`, `runs`, the selection), held briefly; each conversation has its
        own lock (`Line.lock`), taken before this one, never after."""
        self.runs: list[GatewayRun | FinishedRun] = []
        """The runs by number: the newest `KEPT_RUNS` (the run going on counted among them), and
        every one going on however old; those going on whole, the ended ones as `FinishedRun`s; the
        older are counted in `older` (their transcripts are on disk)."""
        self.older = OlderRuns()
        self.lines: list[Line] = []
        """The conversations followed (a request is matched against them), oldest first."""
        self.event_listeners: list[Callable[[GatewayRun, Event], None]] = []
        self.change_listeners: list[Callable[[], None]] = []
        self._selected: Line | None = None
        self._pinned = False
        self._paused: list[Line] = []
        """The conversations whose run paused for the operator (`_advance`), oldest first; those
        that no longer wait leave it when the selection is followed (`_follow`)."""
        self._conversations = 0
        self._requests = 0
        self._credit = 0
        self._out_number = 1
        self._tools_seen: tuple[Any, list[Tool]] | None = None
        self._checked_items: list[tuple[Line, Wire, list[Any]]] = []
        """The latest items each of the conversations taken last was sent, newest first (`_keep_checked`)."""
        self._infos_seen: tuple[list[Tool], list[ToolInfo]] | None = None
        """The last run header's record of its tools, and the tools it records (`_tool_infos`)."""
        self._key = key
        self._client = UpstreamClient(timeout)
        self._swapped = False
        self._agent_wire: Wire = chat
        """The wire of the latest agent request."""
        self._side_notes: dict[Wire, list[str]] = {}
        """The notes of side requests that came while no run went on, by the wire of the agent
        that sent them: written at the start of the next run of that wire, else as a run of
        their own (`_side_run`)."""
        self._seal_key: bytes | None = None
        """The operator's key that seals each run's header, read once (until read, None)."""

    # -- reading ---------------------------------------------------------------

    @property
    def selected(self) -> Line | None:
        """The conversation the operator's calls without a `run` apply to: the one chosen with
        `select`; else the one whose run started last, except that a run awaiting the operator
        keeps the selection, and takes it when the selected one no longer awaits (`_follow`)."""
        return self._selected

    @property
    def current(self) -> GatewayRun | None:
        """The selected conversation's run, while it is kept whole."""
        line = self._selected
        run = line.run if line is not None else None
        return run if isinstance(run, GatewayRun) else None

    @property
    def engine(self) -> Engine | None:
        run = self.current
        return run.engine if run is not None else None

    @property
    def held(self) -> Held | None:
        """The selected conversation's held request."""
        line = self._selected
        return line.held if line is not None else None

    @property
    def turn(self) -> Turn:
        line = self._selected
        return line.turn if line is not None else Turn()

    def open_runs(self) -> list[GatewayRun]:
        """The runs going on now (not ended), oldest first."""
        with self.lock:
            return [run for run in (line.open_run for line in self.lines) if run is not None]

    def select(self, run: GatewayRun | int) -> None:
        """Point the operator's calls without a `run` at `run`'s conversation (it stays selected)."""
        with self.lock:
            self._selected, self._pinned = self._line_of(run), True
        self._changed()

    def status(self, run: GatewayRun | int | None = None) -> str:
        """waiting for the agent, holding a request, or the engine's pause (of `run`, or the selected one)."""
        line = self._line_of(run) if run is not None else self._selected
        current = line.run if line is not None else None
        engine = current.engine if isinstance(current, GatewayRun) else None
        if engine is not None and engine.status in ("awaiting_approval", "awaiting_budget"):
            return engine.status
        if line is None or line.held is None:
            return "waiting for the agent"
        if engine is not None and engine.status == "policy_failed":
            return "policy_failed"
        return "request held" if self.mode == "step" else "asking the upstream"

    def model_names(self) -> list[str]:
        return [u.model or u.name for u in self.upstreams]

    def _line_of(self, run: GatewayRun | FinishedRun | int) -> Line:
        with self.lock:
            for line in self.lines:
                if line.run is run or (isinstance(run, int) and line.run is not None and line.run.number == run):
                    return line
        raise ValueError(f"no run {run if isinstance(run, int) else run.number} going on in the gateway")

    # -- requests --------------------------------------------------------------

    def submit(
        self, body: Any, wire: Wire = chat, headers: dict[str, str] | None = None, path: str = "", early: EarlyStream | None = None
    ) -> Future[Response]:
        """Take an agent's request in `wire` (its HTTP `headers`, sent to `path`); the future resolves to its response.
        `early`: the agent's connection, for a streamed reply's text before the reply is decided
        (`engine.gateway.early`; the response is then the rest when anything was sent)."""
        future: Future[Response] = Future()
        items = body.get(wire.ITEMS) if isinstance(body, dict) else None
        problem = wire.check_request(body, self._checked(wire, items))
        tools: list[Tool] = []
        if problem is None:
            body = wire.to_neutral(body, headers or {}, path)
            try:
                tools = self._tools(body.get("tools"))
            except ToolsError as exc:
                problem = str(exc)
        if problem is not None:
            future.set_result(wire.error_response(400, f"agent-tui gateway: {problem}"))
            return future
        messages = body["messages"]
        while True:
            with self.lock:
                self._agent_wire = wire
                line, new, beside = self._match(messages, bool(tools), asks_for_json(body))
                if line is not None and beside is None and isinstance(items, list):
                    self._keep_checked(line, wire, items)
            if line is None or beside is not None:
                self._side(body, beside, future, wire)
                return future
            with line.lock:
                if not new and not line.conversation.continues(messages):
                    continue  # it moved on while this request waited for its lock: match again
                try:
                    self._take(line, body, tools, future, new, wire, early)
                    self._advance(line)
                except (RecordError, OSError) as exc:  # the transcript cannot be written: nothing is released
                    self._cannot_record(line, future, exc)
            break
        self._follow()
        self._changed()
        return future

    def pass_through(self, wire: Wire, route: str, body: bytes, headers: dict[str, str]) -> Response:
        """A request that steers nothing (Anthropic's `count_tokens`, Gemini's `:countTokens`) sent
        as it is to the upstream of its wire, and its answer, the key masked, back; Gemini's is
        estimated here when no upstream speaks Gemini (its agent counts to decide when to compact)."""
        upstream = self._upstream_for(wire)
        if upstream.wire != wire.NAME and wire is gemini:
            return gemini.counted(body, estimate_tokens)
        if upstream.wire != wire.NAME:
            return wire.error_response(404, f"agent-tui gateway: no {wire.NAME} upstream to pass {route} to (the upstream {upstream.name} speaks {upstream.wire})")
        policy = UpstreamPolicy(upstream, dict, key=self._key, client=self._client)
        return policy.pass_through(route, body, headers)

    def _follow(self) -> None:
        """Unless the operator chose a conversation (`select`), move the selection to one whose
        run awaits the operator when the selected one's does not (the oldest such)."""
        with self.lock:
            if self._pinned or self._selected is None or _awaits_operator(self._selected):
                return
            self._paused = [line for line in self._paused if _awaits_operator(line)]
            if self._paused:
                self._selected = self._paused[0]

    def _checked(self, wire: Wire, items: Any) -> int:
        """How many of the request's first `items` its check need not read again: the longest
        of the items in `wire` checked last in the conversations taken last (`_keep_checked`) they begin with."""
        if not isinstance(items, list):
            return 0
        best = 0
        for _, kept_wire, kept in self._checked_items:
            if kept_wire is wire and len(items) >= len(kept) > best:
                best = checked_before(items, kept) or best
        return best

    def _keep_checked(self, line: Line, wire: Wire, items: list[Any]) -> None:
        """`items` (`Wire.ITEMS`, which `wire`'s check passed) as `line`'s latest, among those of the
        `CHECKED_CONVERSATIONS` conversations taken last (a new list: `_checked` reads it without
        the lock). Under the table lock."""
        kept = [(line, wire, list(items)), *(k for k in self._checked_items if k[0] is not line)]
        self._checked_items = kept[:CHECKED_CONVERSATIONS]

    def _match(self, messages: list[dict[str, Any]], tools: bool, json_asked: bool = False) -> tuple[Line | None, bool, Line | None]:
        """The conversation `messages` continue (the longest when several do), or a new one;
        or, for a request without tools beside a run going on, that run's conversation as the
        third value (a side request); None and None for a request without tools that asks for
        a JSON answer when no run goes on (a router's: a side request, `_hold_side_note`). Under
        the table lock."""
        self._requests += 1
        forms: dict[int, tuple[Any, ...]] = {}
        continued = [line for line in self.lines if line.conversation.continues(messages, forms)]
        if continued:
            line = max(continued, key=lambda m: len(m.conversation.known))
            line.active = self._requests
            return line, False, None
        going = [line for line in self.lines if line.open_run is not None]
        if not tools and going:
            beside = max(going, key=lambda m: m.active)
            return beside, False, beside
        if not tools and json_asked:
            return None, False, None
        waiting = [line for line in going if line.open_run.engine.released]
        self._conversations += 1
        line = Line(Conversation(self._conversations), active=self._requests)
        if waiting:
            parent = max(waiting, key=lambda m: m.active).run
            line.parent = (parent.number, parent.path)
        self.lines.append(line)
        self._forget_old()
        return line, True, None

    def _forget_old(self) -> None:
        """Keep at most `KEPT_CONVERSATIONS` ended conversations to match requests against
        (the oldest go: a request continuing one starts a new conversation)."""
        ended = [line for line in self.lines if line.open_run is None and line.held is None and line.run is not None]
        for line in ended[: max(0, len(ended) - KEPT_CONVERSATIONS)]:
            self.lines.remove(line)
            if self._selected is line:
                self._selected, self._pinned = None, False

    def _tools(self, spec: Any) -> list[Tool]:
        """The request's tools; the previous request's `Tool`s when it declared the same ones
        (an agent sends its tools every time: neither they nor their schemas' validators,
        cached per schema object, are built again), also after a request without tools between
        (a title, a summary), which leaves them kept."""
        if spec is None or spec == []:
            return []
        seen = self._tools_seen
        try:
            if seen is not None and seen[0] == spec:
                return seen[1]
        except RecursionError:
            pass  # nested past what comparing can follow: read as new (and refused there)
        tools = tools_from_request(spec)
        self._tools_seen = (spec, tools)
        return tools

    def _tool_infos(self, tools: list[Tool]) -> list[ToolInfo]:
        """What a run's header records of `tools`: the run before's record when they are the same
        list (`_tools` gives an agent's same tools as one; the records are frozen). Under the table lock."""
        seen = self._infos_seen
        if seen is not None and seen[0] is tools:
            return seen[1]
        infos = [t.info() for t in tools]
        self._infos_seen = (tools, infos)
        return infos

    def _side(self, body: dict[str, Any], beside: Line | None, future: Future[Response], wire: Wire) -> None:
        """A request without tools that continues no conversation, beside a run going on (a
        title, a summary, a router): passed to the upstream and back, and noted on that run
        (`beside`; None: a router's while no run goes on, noted on the next run its agent
        starts, `_hold_side_note`)."""
        policy = self._policy(self._upstream_for(wire), lambda: dict(body))
        response, said = side_response(policy, body, wire)
        future.set_result(response)
        count = len(body["messages"])
        text = f"a side request without tools ({count} message{'s' if count != 1 else ''}) went to the upstream: {said}"
        if beside is None:
            self._hold_side_note(wire, text)
            return

        def note() -> None:
            with beside.lock:
                run = beside.open_run
                if run is not None and run.engine.halted is None:
                    try:
                        run.engine.note(text)
                    except RecordError:
                        pass  # halted: its next request is told
            self._changed()

        threading.Thread(target=note, name="gateway-side-note", daemon=True).start()

    def _hold_side_note(self, wire: Wire, text: str) -> None:
        """Keep the note of a side request that came while no run went on, for the next run an
        agent of `wire` starts (`_start`); past `KEPT_SIDE_NOTES` they are written as a run of
        their own at once."""
        at = time.strftime("%H:%M:%S", time.localtime(self.clock()))
        with self.lock:
            notes = self._side_notes.setdefault(wire, [])
            notes.append(f"at {at}, while no run went on, {text}")
            full = len(notes) >= KEPT_SIDE_NOTES
        if full:
            self._side_run(wire, f"{KEPT_SIDE_NOTES} side requests came while no run went on")

    def _side_run(self, wire: Wire, reason: str) -> None:
        """The held notes of `wire`'s side requests written as a run of their own, which ends at
        once (`reason`): listed with the others, its transcript where theirs are (`show`,
        `agent-tui runs`). It is never selected: the gateway's outcome stays its runs'."""
        with self.lock:
            if not self._side_notes.get(wire):
                return
            self._conversations += 1
            line = Line(Conversation(self._conversations), wire=wire)
            self.lines.append(line)
        with line.lock:
            try:
                run = self._start(line, [], ["(side requests without tools that came while no run went on)"], select=False)
                run.engine.abort(reason)
            except (RecordError, OSError):  # no transcript can be written: the notes have nowhere to go
                with self.lock:
                    self._side_notes.pop(wire, None)
                    if line.run is None:
                        self.lines.remove(line)
            finally:
                if isinstance(line.run, GatewayRun):
                    line.run.close()
        self._changed()

    def _cannot_record(self, line: Line, future: Future[Response], exc: BaseException) -> None:
        """Answer the waiting request (and `future`) with an error: a turn the transcript
        cannot hold sends the agent no call and no answer."""
        from engine.core.guards import halt_reason

        run = line.run
        engine = run.engine if isinstance(run, GatewayRun) else None
        reason = engine.halted if engine is not None and engine.halted is not None else halt_reason(exc)
        wire = line.held.wire if line.held is not None else line.wire or self._agent_wire
        response = wire.error_response(503, f"agent-tui gateway: {reason}", "agent_tui", "transcript_unwritable")
        if line.held is not None:
            self._respond(line, response)
        if not future.done():
            future.set_result(response)

    def _take(
        self, line: Line, body: dict[str, Any], tools: list[Tool], future: Future[Response], new: bool, wire: Wire, early: EarlyStream | None = None
    ) -> None:
        messages = body["messages"]
        conversation = line.conversation
        line.wire = wire  # before a run starts: its upstream is of this wire (another agent's request may set the gateway's meanwhile)
        if line.held is not None:
            line.held.future.cancel()
            line.held = None
        if new or line.run is None:  # (None: its first run could not start; it starts now)
            found = conversation.take(messages)
            self._start(line, tools, found.user or [message_text(messages[-1].get("content"))])
        else:
            run = line.run
            fresh = len(messages) > len(conversation.known)
            if not fresh and line.answered is not None and line.answered[0] == len(conversation.known):
                self._hand(run, line.answered[1], future)  # the same request again: the same response
                return
            found = conversation.take(messages)
            ended = run.ended if run is not None else None
            if ended is not None and fresh and ended.outcome == "answer":
                self._start(line, tools, found.user or ["(the conversation goes on)"])
            elif fresh and isinstance(run, GatewayRun) and ended is None:
                run.engine.tools.update({t.name: t for t in tools})
                if line.turn.decision is not None and line.answered is None:
                    # The decision being answered has not gone out (a call waits for the
                    # operator): this newer request takes the older one's place and gets it.
                    self._note_user(run.engine, found.user)
                else:
                    line.turn = Turn()
                    line.answered = None
                    self._deliver(run, found)
        line.held = Held(body, future, wire, early)

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

    def _start(self, line: Line, tools: list[Tool], user: list[str], select: bool = True) -> GatewayRun:
        """The next run of `line`'s conversation; it begins with the notes of the side requests
        its agent (its wire) sent while no run went on. `select`: it may take the selection."""
        conversation = line.conversation
        conversation.turns += 1
        task = f"conversation-{conversation.number}-turn-{conversation.turns}"
        upstream = self._upstream_for(line.wire or self._agent_wire)
        policy = self._policy(upstream, lambda: self._upstream_body(line), line)
        options: dict[str, Any] = {
            "upstream": safe_url(upstream.url),
            "model": upstream.model,
            "conversation": conversation.number,
            "turn": conversation.turns,
        }
        if line.parent is not None:
            options["parent_run"], parent_path = line.parent
            options["parent_transcript"] = str(parent_path) if parent_path is not None else None
        with self.lock:
            number = len(self.runs) + self.older.count + 1  # every run started: those listed and the older
            header = Header(
                scenario="gateway",
                task=task,
                task_text="\n".join(user),
                options=options,
                tools=self._tool_infos(tools),
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
                if self._seal_key is None:
                    self._seal_key = key_or_problem()[0]
                header, sealer = sealed_run(self._seal_key, header)
                path, writer, taken = self._writer(number, task, header)
            engine = build_engine(
                header, tools, policy, writer=writer, sealer=sealer, clock=self.clock, interactive=True, approve=self.approve_mode,
                tools_elsewhere=True,
            )
            run = GatewayRun(number, conversation, conversation.turns, engine, path, writer)
            engine.listeners.append(lambda event: self._on_event(line, run, event))
            if isinstance(line.run, GatewayRun):
                self._listed(line.run, finished := line.run.finished())
                line.run = finished
            self._finish_ended()
            self.runs.append(run)
            self.older.take_from(self.runs, KEPT_RUNS)
            line.run = run
            line.turn = Turn()
            line.answered = None
            if select and (self._selected is None or (not self._pinned and not _awaits_operator(self._selected))):
                self._selected = line
            side_notes = self._side_notes.pop(line.wire or self._agent_wire, [])
        for text in side_notes:
            engine.note(text)
        if taken:
            names = ", ".join(p.name for p in taken)
            engine.note(f"{names} {'is' if len(taken) == 1 else 'are'} taken (another file or a link): this run's transcript is {path}")
        return run

    def _finish_ended(self) -> None:
        """Keep of each ended run only its line (`FinishedRun`, a few hundred bytes; the newest
        `KEPT_RUNS` of them are kept). A conversation busy now is left for next time."""
        for other in self.lines:
            run = other.run
            if isinstance(run, GatewayRun) and run.ended is not None and other.lock.acquire(blocking=False):
                try:
                    if other.run is run:
                        self._listed(run, finished := run.finished())
                        other.run = finished
                finally:
                    other.lock.release()

    def _listed(self, run: GatewayRun, finished: FinishedRun) -> None:
        """`finished` in `run`'s place in `runs` (the newest are at the end). Under the table lock."""
        for at in range(len(self.runs) - 1, -1, -1):
            if self.runs[at] is run:
                self.runs[at] = finished
                return

    def _writer(self, number: int, task: str, header: Header) -> tuple[Path, TranscriptWriter, list[Path]]:
        """The run's transcript: in the data folder, or `-o FILE` for the first run and the next
        free of FILE-2, FILE-3... for later ones (a name taken by anything is skipped, and listed)."""
        synced = self.approve_mode == "ask"  # an automatic answer needs no fsync before the call goes
        if self.out is None:
            path = default_transcript_path("gateway", task, header.started_at)
            return path, TranscriptWriter(path, header, sync_approvals=synced, sync_header=False), []
        if number == 1:
            return self.out, TranscriptWriter(self.out, header, sync_approvals=synced, sync_header=False), []
        taken: list[Path] = []
        wanted = max(number, self._out_number + 1)
        while True:
            path, n = free_path(self.out.parent, self.out.stem, self.out.suffix, wanted)
            taken += [self.out.with_name(f"{self.out.stem}-{k}{self.out.suffix}") for k in range(wanted, n)]
            try:
                writer = TranscriptWriter(path, header, sync_approvals=synced, sync_header=False)
            except FileExistsError:  # written by someone else since it was looked at
                taken.append(path)
                wanted = n + 1
                continue
            self._out_number = n
            return path, writer, taken

    def _upstream_for(self, wire: Wire) -> Upstream:
        """The upstream for an agent of `wire`: the one the operator chose, else the first of
        that wire (translated to the current one when there is none)."""
        if self._swapped or self.upstream.wire == wire.NAME:
            return self.upstream
        return next((u for u in self.upstreams if u.wire == wire.NAME), self.upstream)

    def _policy(self, upstream: Upstream, body: Callable[[], dict[str, Any]], line: Line | None = None) -> UpstreamPolicy:
        early = (lambda: _early_for(line, upstream)) if line is not None else None
        return UpstreamPolicy(upstream, body, key=self._key, client=self._client, early=early)

    def _upstream_body(self, line: Line) -> dict[str, Any]:
        held = line.held
        if held is None or not isinstance(line.run, GatewayRun):
            raise RuntimeError("no agent request to answer")
        return {**held.body, "messages": list(line.conversation.upstream)}

    def _on_event(self, line: Line, run: GatewayRun, event: Event) -> None:
        if run is line.run:
            turn = line.turn
            if isinstance(event, DecisionMade):
                policy = run.engine.policy
                reply = policy.last_reply if isinstance(policy, UpstreamPolicy) else None
                turn.decision, turn.reply, turn.refused = event, reply, {}
            elif isinstance(event, Observed) and not event.executed and event.index >= 0:
                turn.refused[event.index] = event.text
            elif isinstance(event, PolicyFailed):
                turn.failure = event
        for listener in self.event_listeners:
            listener(run, event)

    def _changed(self) -> None:
        for listener in self.change_listeners:
            listener()

    # -- answering (each under its conversation's lock) ------------------------

    def _advance(self, line: Line) -> None:
        """Move the held request on as far as the mode and the operator allow."""
        while line.held is not None and line.run is not None:
            run = line.run
            if not isinstance(run, GatewayRun):
                self._respond(line, end_response(line, self.upstream.model))
                return
            engine = run.engine
            status = engine.status
            if status == "halted":
                self._cannot_record(line, line.held.future, RecordError(engine.halted))
                return
            if status == "ended":
                self._respond(line, end_response(line, self.upstream.model))
                return
            if status == "awaiting_approval":
                self._note_paused(line)
                return
            if status == "awaiting_budget":
                if not self.headless:
                    self._note_paused(line)
                    return
                engine.end_at_budget()
                continue
            if status == "policy_failed" and line.turn.failure is not None:
                self._respond(line, policy_failure_response(line))
                return
            decision = line.turn.decision
            if decision is not None and not engine.state.queue:
                if line.turn.asks >= MAX_ASKS:
                    self._respond(line, line.held.wire.error_response(409, f"agent-tui gateway: every call was refused {MAX_ASKS} times in a row", "refused"))
                    return
                refused_go_upstream(line, decision, now=True)
                if line.held.early is not None:
                    line.held.early.asked_again()
                line.turn.decision = None
                line.turn.asks += 1
            elif decision is not None:
                self._respond(line, released_response(line, decision, self.upstream.model))
                return
            elif self.mode == "step" and line.credit == 0 and not self._take_credit():
                return
            else:
                line.credit = 0
            before = len(engine.events)
            try:
                engine.step()
                self._note_untranslated(run)
            except RecordError:
                continue  # halted: answered at the top of the loop
            if len(engine.events) == before:
                return

    def _note_paused(self, line: Line) -> None:
        """`line`'s run waits for the operator: among those `_follow` may select (in the order of `lines`)."""
        with self.lock:
            if not any(paused is line for paused in self._paused):
                self._paused.append(line)
                self._paused.sort(key=lambda paused: paused.conversation.number)

    def _note_untranslated(self, run: GatewayRun) -> None:
        """Say once on the run what the agent's request had that the upstream's wire cannot carry."""
        engine = run.engine
        policy = engine.policy
        if not isinstance(policy, UpstreamPolicy):
            return
        for what in policy.untranslated:
            if what not in run.said:
                run.said.add(what)
                engine.note(f"not sent to the upstream ({policy.wire.NAME} wire: no counterpart): {what}")

    def _respond(self, line: Line, response: Response, waiting: bool = True) -> None:
        """Answer the held request; `waiting` False when no agent's connection waits for it."""
        held, line.held = line.held, None
        run = line.run
        if response.status == 200:
            line.answered = (len(line.conversation.known), response)
            if isinstance(run, GatewayRun) and run.engine.released:
                self._carry(line, run, response, set(run.engine.released))
                if waiting:
                    run.carried.update((i, None) for i in run.engine.released)
        if held is not None and not held.future.done():
            held.future.set_result(response)

    def _carry(self, line: Line, run: GatewayRun, response: Response, calls: set[int]) -> None:
        """Follow whether `response`, carrying the released `calls`, reaches the agent."""
        for index in calls:
            run.carried[index] = False
            run.missed[index] = "no request was waiting for the response carrying it: the agent had left"

        def handed() -> None:
            for index in calls:
                if index in run.carried:  # else delivered (or recorded as never received) meanwhile
                    run.carried[index] = True

        def sent_now() -> bool:
            """On the server's loop: recorded at once when the conversation's lock is free."""
            if not line.lock.acquire(blocking=False):
                return False
            try:
                handed()
            finally:
                line.lock.release()
            return True

        def sent(ok: bool) -> None:
            with line.lock:
                if ok:
                    handed()
                    return
                mine = [i for i in calls if i in run.carried]
                if not mine:
                    return  # delivered (or recorded as never received) meanwhile
                for index in mine:
                    if run.carried[index] is not True:
                        run.carried[index] = False
                        run.missed[index] = "the agent's connection closed before the response carrying it was sent"
                if not run.engine.ended:
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

        response.on_sent, response.sent_now = sent, sent_now

    def _hand(self, run: GatewayRun | FinishedRun | None, response: Response, future: Future[Response]) -> None:
        """Give a kept response to a request that asks again: a connection now takes it."""
        if isinstance(run, GatewayRun):
            for index, carried in run.carried.items():
                if carried is False:
                    run.carried[index] = None
        future.set_result(response)

    def disconnected(self, future: Future[Response]) -> None:
        """The agent closed the connection before its response was ready."""
        with self.lock:
            line = next((m for m in self.lines if m.held is not None and m.held.future is future), None)
        if line is None:
            return
        with line.lock:
            if line.held is None or line.held.future is not future:
                return
            line.held = None
            run = line.run
            if isinstance(run, GatewayRun) and not run.engine.stopped:
                run.engine.note(
                    "the agent disconnected while its response was held; the next request continues the run",
                    error=True,
                )
        self._changed()

    # -- the operator ----------------------------------------------------------

    def _operating(self, run: GatewayRun | int | None, expected: PendingApproval | None) -> Line:
        """The conversation an operator's call applies to: `run`'s; else the one whose pending
        approval is `expected` (the call the operator was shown); else the selected one."""
        if run is not None:
            return self._line_of(run)
        with self.lock:
            if expected is not None:
                for line in self.lines:
                    going = line.open_run
                    if going is not None and going.engine.state.pending is expected:
                        return line
            if self._selected is None:
                raise ValueError("no run yet: the agent has not sent a request")
            return self._selected

    def _operate(self, op: Callable[[Line, Engine], object], expected: PendingApproval | None = None, run: GatewayRun | int | None = None) -> None:
        """Apply the operator's `op` to the run `_operating` finds; an answer that names the
        approval the operator saw is refused when it no longer waits (`answer`)."""
        line = self._operating(run, expected)
        with line.lock:
            current = line.run
            if not isinstance(current, GatewayRun):
                raise ValueError("no run going on in that conversation")
            engine = current.engine
            try:
                op(line, engine)
            except StaleApproval as exc:
                raise StaleApproval(exc.expected, "the agent's requests moved the gateway on; nothing ran") from None
            except RecordError:
                self._advance(line)  # the held request learns that nothing was released
                raise
            self._advance(line)
            if line.held is None and line.turn.decision is not None and engine.status == "ready":
                self._keep_unsent(line, engine)
        self._follow()
        self._changed()

    def _keep_unsent(self, line: Line, engine: Engine) -> None:
        """A decision finished while no request waits (the agent left): keep the response for its retry."""
        decision = line.turn.decision
        if engine.released and decision is not None and line.answered is None:
            line.held = Held({"stream": line.turn.reply.stream if line.turn.reply else False}, Future(), line.wire or self._agent_wire)
            self._respond(line, released_response(line, decision, self.upstream.model), waiting=False)

    def step(self, run: GatewayRun | int | None = None) -> None:
        """Step mode: let one model turn of `run` (or the selected one) happen now; when it holds
        no request, the next request of any conversation takes the turn."""
        self.mode = "step"
        line = self._line_of(run) if run is not None else self._selected
        if line is not None and (run is not None or line.held is not None):
            with line.lock:
                line.credit = 1
                self._advance(line)
        else:
            with self.lock:
                self._credit = 1
        self._changed()

    def _take_credit(self) -> bool:
        """Take the turn `step` left for the next request, if there is one."""
        with self.lock:
            taken, self._credit = self._credit > 0, 0
            return taken

    def set_mode(self, mode: Mode) -> None:
        """Step or continue, for every conversation."""
        self.mode = mode
        with self.lock:
            lines = list(self.lines)
        for line in lines:
            with line.lock:
                self._advance(line)
        self._changed()

    def answer(self, answer: Answer, expected: PendingApproval | None = None, run: GatewayRun | int | None = None) -> None:
        """Apply the operator's answer to the pending call of `run`, else of the run where
        `expected` (the pending approval the operator saw) waits, else of the selected run
        (see `_operating`). An abort ends that run whatever is pending (`abort`)."""
        if answer.choice == "abort":
            self.abort(answer.reason or ABORTED, run=run if run is not None else self._operating(None, expected).run)
        else:
            self._operate(lambda line, e: e.answer(answer, expected), expected, run)

    def go_on(self, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Continue mode: each request is answered without waiting for `step`."""
        self.set_mode("continue")

    def pause(self) -> None:
        self.set_mode("step")

    def folded_state(self, run: GatewayRun | int | None = None) -> RunState | None:
        """A copy of the state of `run` (or the selected one); None before the agent's first request."""
        line = self._line_of(run) if run is not None else self._selected
        current = line.run if line is not None else None
        if not isinstance(current, GatewayRun):
            return None
        with line.lock:
            return current.engine.state.copy()

    def extend_budget(self, kind: Any, limit: float, run: GatewayRun | int | None = None) -> None:
        self._operate(lambda line, e: e.extend_budget(kind, limit), run=run)

    def end_at_budget(self, run: GatewayRun | int | None = None) -> None:
        self._operate(lambda line, e: e.end_at_budget(), run=run)

    def abort(self, reason: str = ABORTED, run: GatewayRun | int | None = None) -> None:
        self._operate(lambda line, e: self._end_run(line.run, reason), run=run)

    def take_over(self, decision: Decision, run: GatewayRun | int | None = None) -> None:
        """The operator writes the reply to the held request (text, or calls of the request's tools)."""

        def write(line: Line, engine: Engine) -> None:
            if line.held is None or line.turn.decision is not None or engine.status not in ("ready", "policy_failed"):
                raise ValueError("take over needs a held request the model has not answered yet")
            current = line.run
            previous = engine.policy
            engine.swap_policy(current.human)
            current.human.supply(decision)
            line.turn.reply = None
            engine.step()
            engine.swap_policy(previous)

        self._operate(write, run=run)

    def swap_policy(self, name: str) -> None:
        """Send the next requests of every conversation to another upstream, with the whole history."""
        chosen = next((u for u in self.upstreams if u.name == name or u.label == name), None)
        if chosen is None:
            raise ValueError(f"no upstream named {name!r} (upstreams: {', '.join(u.name for u in self.upstreams)})")
        with self.lock:
            self.upstream = chosen
            self._swapped = True
            lines = list(self.lines)
        for line in lines:
            with line.lock:
                going = line.open_run
                if going is not None:
                    going.engine.swap_policy(self._policy(chosen, lambda line=line: self._upstream_body(line), line))
        self._changed()

    def interrupt(self) -> None:
        """Cut the upstream replies being read, from any thread (the gateway is stopping)."""
        self._client.interrupt()

    def stop(self, reason: str) -> RunEnded | None:
        """End the gateway: the open runs are aborted, held requests get a 503. Returns how the
        selected run (by default the last one started) ended."""
        with self.lock:
            lines = list(self.lines)
        for line in lines:
            with line.lock:
                run = line.run
                if isinstance(run, GatewayRun) and not run.engine.ended:
                    try:
                        self._end_run(run, reason)
                    except RecordError:
                        pass  # halted: nothing more can be recorded; the held request is told below
                if line.held is not None and not line.held.future.done():
                    line.held.future.set_result(line.held.wire.error_response(503, f"agent-tui gateway: {reason}", "unavailable"))
                    line.held = None
                if run is not None:
                    run.close()
        with self.lock:
            waiting = list(self._side_notes)
        for wire in waiting:
            self._side_run(wire, f"the gateway stopped before the agent's next run: {reason}")
        self._client.close()
        line = self._selected
        return line.run.ended if line is not None and line.run is not None else None


def _early_for(line: Line, upstream: Upstream) -> EarlyStream | None:
    """The held request's channel for text before the decision, when its reply may use it: a
    stream asked for by an agent whose wire the upstream speaks and whose streams append."""
    held = line.held
    if held is None or held.early is None or not held.stream or held.wire.NAME != upstream.wire or not held.wire.APPENDS_STREAMS:
        return None
    return held.early


def _awaits_operator(line: Line) -> bool:
    run = line.open_run
    return run is not None and run.engine.status in ("awaiting_approval", "awaiting_budget")
