"""Masking the API key in anything a model server sends back.

A server can echo the key: in an error body (`Authorization: Bearer <key>`),
in a reply that is not JSON, in a reply's text or tool arguments, whole or
split by whitespace or a newline. `KeyMask` replaces every such occurrence
(and the `Bearer ` before it) with `***`; it is applied to a server's text
before anything cuts it or changes its whitespace, so no piece of the key
survives a cut. A key spelled across pieces a client shows one after the other
(two thinking blocks, a thinking block and the text after it, what the client
has already and a reply that follows it) is masked across them (`across`,
`joined`). `MaskedStream` does the same for a reply streamed in pieces,
holding back the tail that could still be the start of the key.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator

from engine.wires.neutral import MASK, Reply

_GAP = r"(?:\s|\\[nrt]){0,8}"
"""Whitespace a server may put inside the key (a line break in a wrapped body), raw or
escaped as JSON writes it (so the key is masked in a JSON body before it is parsed): at most 8
of them, so a match is at most `span` long. Each character of a gap matches one way (a backslash
is no whitespace), so a text that nearly spells the key costs the pattern a few tries a
character, never one for each way of reading its gaps."""


_GAPS = re.compile(r"\s|\\[nrt]")
"""One `_GAP` character: left out where a text's end is compared with a secret's start."""

MIN_SECRET = 4
"""A credential from a URL shorter than this is not masked: it would mask ordinary words."""

TEXT_FIELDS = frozenset({"content", "arguments", "refusal", "reasoning", "reasoning_content", "text", "partial_json", "thinking"})
"""The fields of a reply (whole, or a stream's deltas) whose strings a client joins into what it
shows: a message's content, a call's arguments, thinking, reasoning, a summary's text..."""


class KeyMask:
    """Call with a text to get it back without the key (and without the credentials in `also`:
    those a URL carries, see `engine.core.urls.url_secrets`)."""

    def __init__(self, key: str | None, also: list[str] | tuple[str, ...] = ()) -> None:
        self.span = 0
        self._pattern: re.Pattern[str] | None = None
        secrets = [s for s in dict.fromkeys([key or "", *also]) if s and (s == key or len(s) >= MIN_SECRET)]
        self._secrets = secrets
        if secrets:
            secrets.sort(key=len, reverse=True)  # the longest first: a secret holding another is masked whole
            bodies = "|".join(_GAP.join(re.escape(c) for c in s) for s in secrets)
            self._pattern = re.compile(rf"(?:(?i:bearer)\s{{1,8}})?(?:{bodies})")
            self.span = max(len(s) for s in secrets) * 17 + 16
            """Longer than the longest match: `Bearer` and 8 spaces, then each character of the
            longest secret and, between two, a gap of up to 16 characters (`_GAP`: 8 escapes)."""
        self._squeezed = ["".join(s.split()) for s in secrets]
        """Each secret without its whitespace (which the pattern lets a gap surround, as in any text)."""
        self._keep = 2 * max(map(len, self._squeezed), default=0) + 8
        """How much of a squeezed text's end `squeezed_state` reads: a secret whole, or all of it but its last character."""

    def may_hold(self, text: str) -> bool:
        """Whether `text` can hold a secret: without its whitespace (a gap), it holds one without
        its own; always, when it has a backslash (a gap may be escaped). A test of substrings, far
        cheaper than the pattern, which a text passing it still goes through."""
        if "\\" in text:
            return True
        squeezed = "".join(text.split())
        return any(s in squeezed for s in self._squeezed)

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text or not self.may_hold(text):
            return text
        return self._pattern.sub(MASK, text)

    def tail_state(self, text: str) -> tuple[bool, bool]:
        """Of the last `span` characters of `text`, gaps left out: whether they hold a whole
        secret, and whether they end with its first `MIN_SECRET` or more characters, before a
        backslash or not (what comes next could complete it, so nothing of it may go yet). Cheap
        enough to ask after every piece of a stream (substring tests, no pattern)."""
        if not self._secrets or not text:
            return False, False
        return self.squeezed_state(_squeezed(text[-self.span :], end=True))

    def squeezed_state(self, tail: str) -> tuple[bool, bool]:
        """`tail_state` of a text's end already without its gaps (`grown`)."""
        return any(secret in tail for secret in self._squeezed if secret), self.begins(tail)

    def begins(self, tail: str) -> bool:
        """Whether a text's end without its gaps ends with a secret's first `MIN_SECRET` or more
        characters (a stream asks it of each join a line grew, `grown` having said whether one is whole)."""
        return any(_begun(tail, secret, MIN_SECRET) for secret in self._squeezed if secret)

    def grown(self, tail: str, pending: bool, piece: str) -> tuple[str, bool, bool]:
        """A text's end without its gaps (`tail`, as long as `squeezed_state` needs) with `piece`
        after it, whether it ends with a backslash left out (`pending`: the start of an escaped
        gap the next piece may end), and whether a secret is whole in it with `piece` (before it
        is cut: a piece may complete one and go on past what is kept): what a join's end costs
        to keep as pieces come, each piece squeezed once, not the whole end again."""
        text = "\\" + piece if pending else piece
        squeezed = _squeezed(text)
        pending = squeezed.endswith("\\")
        joined = tail + (squeezed[:-1] if pending else squeezed)
        whole = any(secret in joined for secret in self._squeezed if secret)
        return joined[-self._keep :], pending, whole

    def meeting(self, texts: list[str]) -> Iterator[tuple[str, str]]:
        """(a's last `span` characters, b's first) for two of `texts` where a ends with a secret's
        start and b begins with its rest, gaps left out: the pairs whose joining could spell it
        (all the others cannot), so a check of every two texts one after the other costs what
        each text holds, not the square of their number."""
        rests: dict[str, list[int]] = {}
        for n, text in enumerate(texts):
            tail = _squeezed(text[-self.span :], end=True)
            for secret in self._squeezed:
                for length in _begun(tail, secret, 1) if secret else ():
                    rests.setdefault(secret[length:], []).append(n)
        if not rests:
            return
        for k, text in enumerate(texts):
            head = _squeezed(text[: self.span])
            for rest, ends in rests.items():
                if head.startswith(rest):
                    yield from ((texts[n][-self.span :], text[: self.span]) for n in ends if n != k)

    def matches(self, text: str) -> list[re.Match[str]]:
        return [] if self._pattern is None or not self.may_hold(text) else list(self._pattern.finditer(text))

    def across(self, pieces: list[str], before: str = "") -> list[str]:
        """`pieces`, shown one after the other after `before` (what the reader has already), with a
        key spelled across them masked: `MASK` where it begins (at the first piece when it begins in
        `before`), the rest of it left out of the pieces that hold it. The same list when none is."""
        if self._pattern is None or not any(pieces):
            return pieces
        joined = before + "".join(pieces)
        spans = [(m.start(), m.end()) for m in self.matches(joined) if m.end() > len(before)]
        if not spans:
            return pieces
        out: list[str] = []
        start = len(before)
        for piece in pieces:
            end = start + len(piece)
            kept, at = [], start
            for first, last in spans:
                low, high = max(first, start), min(last, end)
                if low >= high:
                    continue
                kept.append(joined[at:low])
                if low == max(first, len(before)):
                    kept.append(MASK)
                at = high
            out.append(piece if at == start else "".join(kept) + joined[at:end])
            start = end
        return out

    def joined(self, data: Any, before: str = "") -> Any:
        """A JSON-like value (a wire's whole reply) with a key spelled across the strings of its
        `TEXT_FIELDS`, read in order after `before`, masked (`across`); the same value when none is."""
        pieces: list[str] = []
        _texts(data, None, pieces.append)
        masked = self.across(pieces, before)
        if masked is pieces or masked == pieces:
            return data
        return _with_texts(data, None, iter(masked))

    def reply(self, reply: Reply) -> None:
        """Mask every text of a model reply in place: its content, finish reason and tool calls,
        and the whole reply its wire keeps (`message`), also where its texts spell the key one
        after the other (`joined`: a thinking block and the next)."""
        if self._pattern is None:
            return
        reply.content = self(reply.content)
        reply.finish_reason = self(reply.finish_reason) if isinstance(reply.finish_reason, str) else None
        for call in reply.tool_calls:
            call.name, call.arguments, call.id = self(call.name), self(call.arguments), self(call.id)
        if reply.message is not None:
            reply.message = self.joined(self.value(reply.message))

    def value(self, data: Any) -> Any:
        """A JSON-like value with the key masked in every string (keys of objects too)."""
        if isinstance(data, str):
            return self(data)
        if isinstance(data, dict):
            return {self.value(k): self.value(v) for k, v in data.items()}
        if isinstance(data, list):
            return [self.value(v) for v in data]
        return data


def _texts(data: Any, field: str | None, found: Callable[[str], None]) -> None:
    """Each string of `data` under one of `TEXT_FIELDS`, in order."""
    if isinstance(data, str):
        if field in TEXT_FIELDS:
            found(data)
    elif isinstance(data, dict):
        for key, value in data.items():
            _texts(value, key, found)
    elif isinstance(data, list):
        for value in data:
            _texts(value, field, found)


def _with_texts(data: Any, field: str | None, texts: Iterator[str]) -> Any:
    """`data` with the strings `_texts` finds taken in order from `texts`."""
    if isinstance(data, str):
        return next(texts) if field in TEXT_FIELDS else data
    if isinstance(data, dict):
        return {key: _with_texts(value, key, texts) for key, value in data.items()}
    if isinstance(data, list):
        return [_with_texts(value, field, texts) for value in data]
    return data


def _squeezed(text: str, end: bool = False) -> str:
    """`text` without what a gap may hold (`_GAPS`); `end`: a backslash it ends with too (the start
    of an escaped gap the next piece ends)."""
    if "\\" not in text:
        return "".join(text.split())  # the same without an escape, a third of the time
    text = _GAPS.sub("", text)
    return text[:-1] if end and text.endswith("\\") else text


def _begun(tail: str, secret: str, least: int) -> list[int]:
    """How many of `secret`'s first characters (at least `least`, not all) `tail` ends with, each way."""
    found = []
    start = tail.find(secret[:least], max(0, len(tail) - len(secret) + 1))
    while start != -1:  # each place the secret's first characters stand where the secret would not fit
        if secret.startswith(tail[start:]):
            found.append(len(tail) - start)
        start = tail.find(secret[:least], start + 1)
    return found


class MaskedStream:
    """Passes streamed text on with the key masked, holding back what could be its start.

    Only the tail not yet sent is kept: a key occurrence is at most `span`
    characters long, so one that starts before the last `span` characters
    has arrived whole and can be masked and sent.
    """

    def __init__(self, mask: KeyMask, on_delta: Callable[[str], None]) -> None:
        self._mask = mask
        self._on_delta = on_delta
        self._held = ""

    def __call__(self, delta: str) -> None:
        self._held += delta
        self._flush(final=False)

    def _flush(self, final: bool) -> None:
        held = self._held
        end = len(held) if final else max(0, len(held) - self._mask.span)
        if not final and end:
            for match in self._mask.matches(held):
                if match.start() < end < match.end():
                    end = match.end()
        if end:
            self._on_delta(self._mask(held[:end]))
            self._held = held[end:]

    def close(self) -> None:
        """Send what was held back (the stream ended)."""
        self._flush(final=True)
