"""A streamed reply's text on its way to the agent before the reply is decided.

When the agent streams, its upstream speaks the same wire, and that wire's streams
can be continued after text went early (`Wire.APPENDS_STREAMS`: chat completions'
chunks and Gemini's whole-response events are appended; Anthropic's numbered blocks
and the Responses API's output items are taken up where the agent's copy stops), the
upstream's stream events that hold no tool call go to the agent as they come
(`EarlyStream`), each whole (up to its blank line). The first event with a call, or
one that ends the reply, stops that: it and everything after it wait for the decision,
and the response then carries only the rest (`replies`: the upstream's remaining bytes,
or a rebuilt tail that continues what was sent, `ReplyOptions.shown`). With a key to mask,
an event goes out as soon as no way a client joins what was read (`StreamEcho`) ends with
the start of a key (its first `MIN_SECRET` characters or more, `StreamEcho.could_complete_key`) and
none holds a whole one; where one shows, the rest of that reply waits and is rebuilt,
masked. So the agent has at most the first characters of a key that is not yet spelled,
and what follows them is masked as it continues them: the rest of the same reply
(`rest`) and a reply asked again after a refusal (`following`, `followed`) alike.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from typing import Callable

from engine.gateway.echo import StreamEcho
from engine.model.keymask import KeyMask
from engine.wires.neutral import Reply, rest_after, split_lines


_CALL_WORDS = (
    b'"tool_calls"', b'"function_call"', b'"functionCall"', b'"tool_use"', b"\\u",
    b'"message_delta"', b'"response.completed"', b'"response.incomplete"',
)
"""A line holding any of these waits for the decision whatever its reader made of it (a call
under another choice than the one read, a key name written with escapes, the end of an
Anthropic message or a response, which the decision writes)."""


class _Grown:
    """A text read piece by piece: each piece kept as it came (a string added to is copied whole,
    so a long stream would cost its length squared), a slice joined from the pieces it spans."""

    __slots__ = ("_pieces", "_starts", "length")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._starts: list[int] = []
        self.length = 0

    def add(self, piece: str) -> None:
        if piece:
            self._pieces.append(piece)
            self._starts.append(self.length)
            self.length += len(piece)

    def between(self, start: int, end: int) -> str:
        """`text[start:end]` of the whole text read, for 0 <= start <= end <= length."""
        if start >= end:
            return ""
        first = bisect_right(self._starts, start) - 1
        last = bisect_right(self._starts, end - 1)
        offset = self._starts[first]
        return "".join(self._pieces[first:last])[start - offset : end - offset]


class EarlyStream:
    """The channel of one held streamed request: `push` hands bytes to the agent's connection
    (from the gateway's thread); `sent` and `chars` count the current reply's bytes and text
    characters already sent, `started` whether anything was, `shown` all the bytes sent (of
    the first reply: one asked again after a refusal goes with the decision)."""

    def __init__(self, push: Callable[[bytes], None]) -> None:
        self._push = push
        self.started = False
        self.sent = 0
        self.chars = 0
        self._shown: list[bytes] = []
        self._text_tail = ""
        self._thought_tail = ""
        self._said_tail = ""
        """The end of `shown`'s text (what the agent's client has joined), of its thinking, and of
        its text and thinking in the order they came (a client showing both one after the other),
        the key mask's span long."""
        self._open = False
        self._mask: KeyMask | None = None
        self._within: str | None = None
        self._pending: list[tuple[bytes, int, int]] = []
        """The lines read and not sent, each with the text and thinking characters read up to it."""
        self._text = _Grown()
        self._thought = _Grown()
        self._thought_sent = 0

    def begin(self, mask: KeyMask, within: str | None = None) -> None:
        """An upstream reply starts: the first, or one asked again after every call was refused,
        which goes early only if nothing did before (its stream's start would come twice).
        `within`: the wire's `ECHO_WITHIN`, for `spells_key`."""
        self._open, self._mask, self._within = not self.started, mask, within
        self._new_reply()

    def asked_again(self) -> None:
        """The upstream is asked again (every call was refused): its reply is a new one, of which
        nothing went yet, whether or not it comes through here (`begin`: an upstream of the
        agent's wire); its rest is all of it."""
        self.end()
        self._new_reply()

    def _new_reply(self) -> None:
        """Nothing of the current reply read or sent yet."""
        self.sent, self.chars, self._pending, self._text = 0, 0, [], _Grown()
        self._thought, self._thought_sent = _Grown(), 0

    @property
    def shown(self) -> bytes:
        """All the bytes sent, joined (when asked: once a reply)."""
        if len(self._shown) > 1:
            self._shown[:] = [b"".join(self._shown)]
        return self._shown[0] if self._shown else b""

    def text(self, delta: str) -> None:
        """A piece of the reply's text as its reader found it (what the agent's client shows)."""
        self._text.add(delta)

    def thinking(self, delta: str) -> None:
        """A piece of the reply's thinking (or reasoning summary, or thought) as its reader found it."""
        self._thought.add(delta)

    def line(self, raw: bytes, stop: bool, *, key: bool = False, key_begun: bool = False) -> None:
        """One line of the stream as it goes into the reply's bytes; `stop`: the reply read so far
        holds a tool call (this line began it, or one before did) or is complete (its end goes
        with the decision, once the run has recorded it). `key`: the pieces read, joined as a
        client may join them (`StreamEcho`, every field, not only the text), spell the key;
        `key_begun`: one such join ends with its start, so nothing read goes until it moves on.
        What was read goes when an event is whole (this line is blank), none of that holds."""
        if not self._open:
            return
        if stop or key or any(word in raw for word in _CALL_WORDS):
            self.end()
            return
        self._pending.append((raw, self._text.length, self._thought.length))
        if raw.strip() or key_begun or not self._text.length and not self._thought.length:  # an event begun, a key's start, nothing to show
            return
        going, self._pending = self._pending, []
        data = b"".join(line for line, _, _ in going)
        self._push(data)
        self.started = True
        self.sent += len(data)
        self._shown.append(data)
        if self._mask is not None and self._mask.span:
            self._keep_tails(going, self._mask.span)
        self.chars, self._thought_sent = going[-1][1], going[-1][2]

    def _keep_tails(self, going: list[tuple[bytes, int, int]], span: int) -> None:
        """The tails of what the agent has, with the lines `going` (each line's thinking before its
        text, as a Gemini chunk has its thought parts before its text)."""
        said = [self._said_tail]
        at_text, at_thought = self.chars, self._thought_sent
        for _, upto_text, upto_thought in going:
            said += (self._thought.between(at_thought, upto_thought), self._text.between(at_text, upto_text))
            at_text, at_thought = upto_text, upto_thought
        self._said_tail = "".join(said)[-span:]
        self._text_tail = (self._text_tail + self._text.between(self.chars, at_text))[-span:]
        self._thought_tail = (self._thought_tail + self._thought.between(self._thought_sent, at_thought))[-span:]

    def rest(self, text: str) -> tuple[str, bool]:
        """What follows what went early of `text`, the current reply's whole text as decided (the
        key masked in it: `rest_after`, which goes on from the mask where a key's first characters
        went), as it follows what the agent has (`following`); and whether `following` changed it
        (the reply is then written anew from it, not from the upstream's own)."""
        rest = rest_after(text, self._text.between(0, self.chars))
        if rest is None:
            rest = text[self.chars :]
        following = self.following(rest)
        return following, following != rest

    def following(self, content: str) -> str:
        """`content`, text that follows what the agent has, with the key masked also where it begins
        in the text, the thinking, or both in the order they came, that the agent has, and ends in
        `content` (the agent's client joins them one way or another)."""
        if self._mask is None or not content:
            return content
        for tail in (self._text_tail, self._thought_tail, self._said_tail):
            content = self._mask.across([content], tail)[0] if tail else content
        return content

    def followed(self, reply: Reply) -> Reply:
        """`reply`, the upstream's reply asked again after a refusal, whose thinking (and text) the
        rest takes from its whole message, as it follows the thinking, the text and both that the
        agent has: a key begun there and ending in the message's texts masked there (`KeyMask.joined`;
        a thinking block masked keeps the signature it came with, as one masked in a single reply
        does). The reply the agent has the start of (some of it went: `sent`) follows nothing but itself."""
        if self._mask is None or self.sent or not isinstance(reply.message, dict):
            return reply
        message = reply.message
        for tail in (self._thought_tail, self._text_tail, self._said_tail):
            message = self._mask.joined(message, tail) if tail else message
        return reply if message is reply.message else replace(reply, message=message)

    def spells_key(self, rest: bytes) -> bool:
        """Whether the stream the agent would have, what went and then `rest`, spells the key in
        any way its client may join it (`StreamEcho`, over the whole of it anew): the last check of
        a rest rebuilt to follow what went, whose pieces come in another order than the upstream's."""
        if self._mask is None or not self._mask.span:
            return False
        echo = StreamEcho(self._mask, self._within)
        for line in split_lines(self.shown + rest, final=True)[0]:
            echo.line(line)
        return echo.carries_key

    def end(self) -> None:
        """Nothing more of this reply goes early: the rest waits for the decision."""
        self._open, self._pending = False, []
