"""What an ACP agent says, as the policy's thread takes it from the connection's queue.

`Update` (a session notification), `Note` (what the agent did wrong, in agent-tui's words),
`Gate` (a request that waits for an answer, given once from any thread), `TurnEnded`
(the prompt's reply) and `Gone` (the agent's process or connection went away).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Update:
    update: Any
    """One `session/update` notification's update (an SDK model)."""


@dataclass
class Note:
    text: str
    error: bool = True


@dataclass
class TurnEnded:
    stop_reason: str
    usage: Any = None


@dataclass
class Gone:
    why: str


@dataclass
class Gate:
    """A request of the agent that waits for agent-tui's answer."""

    kind: str  # "permission", "read", "write", "terminal"
    params: dict[str, Any]
    future: Future[Any] = field(default_factory=Future)
    result: Any = None
    """What the tool that served it made (a file's whole content), when it ran."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, value: Any) -> bool:
        """Send `value` (an SDK response, or an exception the SDK turns into a JSON-RPC error)
        as the reply; False when the request was answered already (a reply is sent once)."""
        with self._lock:
            if self.future.done():
                return False
            if isinstance(value, BaseException):
                self.future.set_exception(value)
            else:
                self.future.set_result(value)
            return True

    @property
    def answered(self) -> bool:
        return self.future.done()


Item = Update | Note | TurnEnded | Gone | Gate
