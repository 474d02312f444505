"""An upstream's echo of the key in JSON, where masking the bytes as text does not reach it.

`KeyMask` masks the key in a body's text, which catches it written plainly. JSON can write the
same key with `\\u` escapes, which only parsing reveals, and a streamed reply spreads a text over
many chunks that the agent's client joins back together. These checks close both ways before a
body is read or passed on: a JSON body (a whole reply, an error) is masked in its decoded strings
too; a stream's lines are, and `StreamEcho` joins the pieces every way a client may (per field,
across choices and calls, in arrival order), so a reply whose pieces spell the key however they
are joined is never passed on as it came (the gateway rebuilds it from the masked reply instead).
"""

from __future__ import annotations

import json
from typing import Any

from engine.model.keymask import TEXT_FIELDS, KeyMask


def masked_json(mask: KeyMask, raw: bytes) -> bytes:
    """`raw` with the key masked in every decoded string of it, when it is JSON holding one
    (re-serialised then; otherwise the same bytes)."""
    if not mask.span or not raw:
        return raw
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    masked = mask.value(data)
    return raw if masked == data else json.dumps(masked).encode()


_INDEXES = ("index", "output_index", "content_index", "summary_index")
"""Fields that say which block, item or part an event's pieces belong to (Anthropic's block
`index`, the Responses API's `output_index`, `content_index`, `summary_index`): a client joins
the pieces of each apart, so each field's join is kept per those numbers too."""


class StreamEcho:
    """Follows a streamed reply's `data:` lines: masks the key in each line's decoded strings and
    keeps the pieces the way a client may join them, so `carries_key` finds a key spelled by any
    such join: every field's pieces in order (by path, a list item by its `index`); every field
    across all choices and calls (a client that reads `choices[0]` whatever the index, or joins
    every choice); two such fields one after the other (content, then arguments); every text piece
    in arrival order, and every string under the choices in arrival order. `within`: the key of
    an event under which those strings are (`choices` for chat completions; None: anywhere, as in
    a Messages stream, whose deltas a client joins per block index)."""

    def __init__(self, mask: KeyMask, within: str | None = "choices") -> None:
        self._mask = mask
        self._within = within
        self._fields: dict[tuple[Any, ...], list[str]] = {}
        self._across: dict[tuple[Any, ...], list[str]] = {}
        self._texts: list[str] = []
        self._strings: list[str] = []
        self._thoughts: list[str] = []
        self._said: list[str] = []
        self._kinds: dict[tuple[Any, ...], list[str]] = {}
        self._tails: dict[tuple[Any, ...], str] = {}
        """The end of each join (a field, a field across choices, the texts, the strings), a span long."""
        self._open: set[tuple[Any, ...]] = set()
        """The joins whose end could begin the key (`KeyMask.tail_state`)."""
        self.spelled_key = False
        """A join's end, as the lines came, held the whole key: what `carries_key` finds, kept as
        each line is read (early text asks after every line; `carries_key` joins everything)."""
        self._changed: set[tuple[Any, ...]] = set()

    def line(self, raw: bytes) -> bytes:
        """The line with the key masked in its JSON strings (the same bytes when there is none)."""
        if not self._mask.span or not raw.startswith(b"data:"):
            return raw
        body = raw[5:]
        ending = raw[len(raw.rstrip(b"\r\n")) :]
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return raw
        self._collect(data, (), ())
        for join in self._changed:  # only the joins this line added to: a line costs what it holds
            whole, begun = self._mask.tail_state(self._tails[join])  # a span long: a key the line completed is whole in it
            self.spelled_key = self.spelled_key or whole
            (self._open.add if begun else self._open.discard)(join)
        self._changed.clear()
        masked = self._mask.value(data)
        return raw if masked == data else b"data: " + json.dumps(masked).encode() + ending

    def _collect(self, value: Any, path: tuple[Any, ...], across: tuple[Any, ...], kind: str | None = None) -> None:
        if isinstance(value, str):
            self._fields.setdefault(path, []).append(value)
            self._grow(("field", *path), value)
            if across and (self._within is None or across[0] == self._within):
                self._across.setdefault(across, []).append(value)
                self._strings.append(value)
                self._grow(("across", *across), value)
                self._grow(("strings",), value)
                if kind is not None:  # the pieces of one kind of event or part (a reasoning summary's deltas, not the text's)
                    self._kinds.setdefault((kind, *across), []).append(value)
                    self._grow(("kind", kind, *across), value)
                if across[-1] in TEXT_FIELDS:
                    self._texts.append(value)
                    self._grow(("texts",), value)
        elif isinstance(value, dict):
            if isinstance(value.get("text"), str):
                if value.get("thought") is True:  # Gemini's thoughts, joined apart
                    self._thoughts.append(value["text"])
                    self._grow(("thoughts",), value["text"])
                else:  # and its text without them (what a client's `text` joins)
                    self._said.append(value["text"])
                    self._grow(("said",), value["text"])
            kind = value["type"] if isinstance(value.get("type"), str) else kind
            marks = tuple((key, value[key]) for key in _INDEXES if type(value.get(key)) is int)
            for key, item in value.items():
                self._collect(item, (*path, *marks, key), (*across, key), kind)
        elif isinstance(value, list):
            for position, item in enumerate(value):
                self._collect(item, (*path, item.get("index", position) if isinstance(item, dict) else position), (*across, "*"), kind)

    def _grow(self, join: tuple[Any, ...], value: str) -> None:
        self._tails[join] = (self._tails.get(join, "") + value)[-self._mask.span :]
        self._changed.add(join)

    @property
    def could_complete_key(self) -> bool:
        """Whether a join of the pieces read so far ends with the start of the key: a piece yet to
        come could spell it, so nothing read may go to the agent before the reply is whole."""
        return bool(self._open)

    @property
    def carries_key(self) -> bool:
        """Whether the pieces, joined in any of the ways a client may join them, hold the key."""
        matches = self._mask.matches
        if any(matches("".join(pieces)) for pieces in (self._texts, self._strings, self._thoughts, self._said)):
            return True
        if any(matches("".join(pieces)) for pieces in (*self._fields.values(), *self._kinds.values())):
            return True
        span = self._mask.span
        joined = {path: "".join(pieces) for path, pieces in self._across.items()}
        if any(matches(text) for text in joined.values()):
            return True
        texts = [text for path, text in joined.items() if path[-1] in TEXT_FIELDS]
        return any(matches(a[-span:] + b[:span]) for a in texts for b in texts if a is not b)
