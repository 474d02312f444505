"""What the gateway keeps about its runs and the requests it holds (see `engine.gateway.controller`)."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.engine import Engine
from engine.core.events import DecisionMade, Outcome, PolicyFailed, RunEnded
from engine.core.policy import HumanPolicy
from engine.gateway.conversation import Conversation
from engine.gateway.early import EarlyStream
from engine.gateway.upstream import UpstreamReply
from engine.wires import Wire, chat
from engine.wires.neutral import Response
from engine.stored.transcript import TranscriptWriter


KEPT_ANSWER = 40
"""Characters of a finished run's answer kept for its line (the transcript has it whole)."""


@dataclass
class GatewayRun:
    """One run of the gateway: a turn of a conversation, with its engine and transcript."""

    number: int
    conversation: Conversation
    turn: int
    engine: Engine
    path: Path | None
    writer: TranscriptWriter | None
    human: HumanPolicy = field(default_factory=HumanPolicy)
    sent_ids: dict[int, str] = field(default_factory=dict)
    """The id each released call of the last response had (the agent's results name them)."""
    carried: dict[int, bool | None] = field(default_factory=dict)
    """Whether the response carrying each released call reached the agent: True (the server
    handed it over), None (given to a waiting request, not yet confirmed), False (no
    connection took it)."""
    missed: dict[int, str] = field(default_factory=dict)
    """Why a call with `carried` False did not reach the agent."""
    said: set[str] = field(default_factory=set)
    """What the upstream's wire could not carry, already noted on this run."""

    @property
    def conversation_number(self) -> int:
        return self.conversation.number

    @property
    def ended(self) -> RunEnded | None:
        return self.engine.state.ended

    @property
    def status(self) -> str:
        return self.engine.status

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def finished(self) -> FinishedRun:
        """What is kept of this run once the next one starts."""
        self.close()
        ended = self.ended
        file = str(self.path) if self.path is not None else None
        if ended is None:
            return FinishedRun(self.number, self.conversation.number, self.turn, file, self.status)
        answer = ended.answer
        if answer is not None and len(answer) > KEPT_ANSWER:
            answer = answer[:KEPT_ANSWER] + "..."  # ASCII: an ASCII answer stays one byte a character
        return FinishedRun(self.number, self.conversation.number, self.turn, file, self.status, ended.at, ended.outcome, ended.reason, ended.step, answer)


@dataclass(frozen=True, slots=True)
class FinishedRun:
    """A run of the gateway that the next one replaced: its line in the cockpit's list of
    runs and its transcript, without its engine, events or requests: about 450 bytes (its
    end's fields, not the event, which is made again when asked for; the path as text), kept
    for the newest `controller.KEPT_RUNS` ended runs (the older are counted, `OlderRuns`)."""

    number: int
    conversation_number: int
    turn: int
    file: str | None
    status: str
    at: float | None = None
    """When it ended (None: it had not, as when it could not start)."""
    outcome: Outcome | None = None
    reason: str = ""
    step: int = 0
    answer: str | None = None
    """Its first `KEPT_ANSWER` characters."""

    @property
    def path(self) -> Path | None:
        return Path(self.file) if self.file is not None else None

    @property
    def ended(self) -> RunEnded | None:
        if self.at is None or self.outcome is None:
            return None
        return RunEnded.trusted(at=self.at, outcome=self.outcome, reason=self.reason, step=self.step, answer=self.answer)

    def close(self) -> None:
        """Closed when it finished."""


@dataclass
class OlderRuns:
    """The finished runs the gateway no longer lists (`Gateway.runs` keeps the newest): how
    many, and the folders their transcripts are in (`agent-tui runs --dir`, `show`, `replay`
    open them there)."""

    count: int = 0
    folders: list[str] = field(default_factory=list)
    """Each folder once, in the order first met (the data folder's runs, or `-o`'s)."""
    unsaved: int = 0
    """Of `count`, those with no transcript (`save` off)."""

    def take_from(self, runs: list[GatewayRun | FinishedRun], keep: int) -> None:
        """Leave at most `keep` runs in `runs`: the oldest ended ones go, counted here (their
        transcripts stay where they were written); those going on stay however old."""
        excess = len(runs) - keep
        if excess <= 0:
            return
        kept: list[GatewayRun | FinishedRun] = []
        for run in runs:
            if excess > 0 and isinstance(run, FinishedRun):
                self.add(run)
                excess -= 1
            else:
                kept.append(run)
        runs[:] = kept

    def add(self, run: FinishedRun) -> None:
        self.count += 1
        path = run.path
        if path is None:
            self.unsaved += 1
        elif str(path.parent) not in self.folders:
            self.folders.append(str(path.parent))

    def words(self) -> str:
        """'1,204 older runs in FOLDER' (empty when there are none)."""
        if not self.count:
            return ""
        runs = f"{self.count:,} older run{'s' if self.count != 1 else ''}"
        where = " and ".join(self.folders)
        if not where:
            return f"{runs}, not saved"
        unsaved = f" ({self.unsaved:,} not saved)" if self.unsaved else ""
        return f"{runs} in {where}{unsaved}"


@dataclass
class Held:
    """An agent request waiting for its response."""

    body: dict[str, Any]
    """The request in the neutral form (`engine.wires.neutral`)."""
    future: Future[Response]
    wire: Wire = chat
    """The wire the agent speaks: its response is written in it."""
    early: EarlyStream | None = None
    """Where text of the upstream's stream goes to the agent before the reply is decided (the
    server's channel to the agent's connection); the response then carries only the rest."""

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))


@dataclass
class Turn:
    """What happened since the request being answered arrived."""

    decision: DecisionMade | None = None
    reply: UpstreamReply | None = None
    failure: PolicyFailed | None = None
    refused: dict[int, str] = field(default_factory=dict)
    asks: int = 0


@dataclass
class Line:
    """One conversation the gateway follows: its latest run, the request it holds, and the
    lock every change to them takes. A conversation's upstream call and its held calls hold
    only its own lock: the other conversations go on meanwhile."""

    conversation: Conversation
    run: GatewayRun | FinishedRun | None = None
    held: Held | None = None
    turn: Turn = field(default_factory=Turn)
    answered: tuple[int, Response] | None = None
    """The length of the conversation answered and its response, for the agent's retry."""
    credit: int = 0
    """Step mode: model turns the operator let happen (`n`) not yet taken."""
    parent: tuple[int, Path | None] | None = None
    """A sub-agent's conversation: the number and transcript of the run that was waiting for
    its calls' results when it began (not the run itself: its engine goes once it ends)."""
    active: int = 0
    """When its last request came (a counter across the gateway's conversations)."""
    wire: Wire | None = None
    """The wire its agent speaks (of its latest request)."""
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def open_run(self) -> GatewayRun | None:
        """Its run while that run goes on (neither ended nor finished)."""
        run = self.run
        return run if isinstance(run, GatewayRun) and run.ended is None else None
