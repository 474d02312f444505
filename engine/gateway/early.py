"""A streamed reply's text on its way to the agent before the reply is decided.

When the agent streams, its upstream speaks the same wire, and that wire's streams
can be continued by appending events (`Wire.APPENDS_STREAMS`: chat completions'
chunks, Gemini's whole-response events), the upstream's stream lines that hold no
tool call go to the agent as they come (`EarlyStream`). The first line with a
call, or the one that completes the reply, stops that: it and everything after it wait for the decision, and the
response then carries only the rest (`replies`: the upstream's remaining bytes,
or a rebuilt tail without the text already sent). A line goes out only once the
key mask's span of text has come after it and no key is in reach of what was
sent: a key spelled across pieces never reaches the agent; where one shows, the
rest of that reply waits and is rebuilt, masked.
"""

from __future__ import annotations

from typing import Callable

from engine.model.keymask import KeyMask


_CALL_WORDS = (b'"tool_calls"', b'"function_call"', b'"functionCall"', b"\\u")
"""A line holding any of these waits for the decision whatever its reader made of it (a call
under another choice than the one read, a key name written with escapes)."""


class EarlyStream:
    """The channel of one held streamed request: `push` hands bytes to the agent's connection
    (from the gateway's thread); `sent` and `chars` count the current reply's bytes and text
    characters already sent, `started` whether anything was."""

    def __init__(self, push: Callable[[bytes], None]) -> None:
        self._push = push
        self.started = False
        self.sent = 0
        self.chars = 0
        self._open = False
        self._mask: KeyMask | None = None
        self._pending: list[tuple[bytes, int]] = []
        self._text = ""

    def begin(self, mask: KeyMask) -> None:
        """An upstream reply starts: the first, or one asked again after every call was refused,
        which goes early only if nothing did before (its stream's start would come twice)."""
        self._open, self._mask = not self.started, mask
        self.sent, self.chars, self._pending, self._text = 0, 0, [], ""

    def text(self, delta: str) -> None:
        """A piece of the reply's text as its reader found it (what the agent's client shows)."""
        self._text += delta

    def line(self, raw: bytes, stop: bool) -> None:
        """One line of the stream as it goes into the reply's bytes; `stop`: the reply read so far
        holds a tool call (this line began it, or one before did) or is complete (its end goes
        with the decision, once the run has recorded it)."""
        if not self._open:
            return
        if stop or any(word in raw for word in _CALL_WORDS):
            self.end()
            return
        self._pending.append((raw, len(self._text)))
        mask = self._mask
        span = mask.span if mask is not None else 0
        if span and mask is not None and mask.matches(self._text[max(0, self.chars - span) :]):
            self.end()  # a key in reach of what was sent: the rest waits and is rebuilt, masked
            return
        if not self._text:  # nothing to show yet (a role, a reply of calls alone): nothing goes early
            return
        limit = len(self._text) - span
        while self._pending and self._pending[0][1] <= limit:
            line, upto = self._pending.pop(0)
            self._push(line)
            self.started = True
            self.sent += len(line)
            self.chars = upto

    def end(self) -> None:
        """Nothing more of this reply goes early: the rest waits for the decision."""
        self._open, self._pending = False, []
