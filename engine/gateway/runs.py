"""What the gateway keeps about its runs and the requests it holds (see `engine.gateway.controller`)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.engine import Engine
from engine.core.events import DecisionMade, PolicyFailed, RunEnded
from engine.core.policy import HumanPolicy
from engine.gateway.conversation import Conversation
from engine.gateway.upstream import UpstreamReply
from engine.gateway.wire import Response
from engine.stored.transcript import TranscriptWriter


KEPT_ANSWER = 200
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
        if ended is not None and ended.answer is not None and len(ended.answer) > KEPT_ANSWER:
            ended = RunEnded.trusted(**{**ended.__dict__, "answer": ended.answer[:KEPT_ANSWER] + "…"})
        return FinishedRun(self.number, self.conversation.number, self.turn, self.path, ended, self.status)


@dataclass(frozen=True)
class FinishedRun:
    """A run of the gateway that the next one replaced: its line in the cockpit's list of
    runs and its transcript, without its engine, events or requests (a gateway that serves
    for days keeps a few hundred bytes per run)."""

    number: int
    conversation_number: int
    turn: int
    path: Path | None
    ended: RunEnded | None
    status: str

    def close(self) -> None:
        """Closed when it finished."""


@dataclass
class Held:
    """An agent request waiting for its response."""

    body: dict[str, Any]
    future: Future[Response]

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
