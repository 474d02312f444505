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
import re
from typing import Any

from engine.model.keymask import TEXT_FIELDS, KeyMask


def masked_json(mask: KeyMask, raw: bytes) -> bytes:
    """`raw` with the key masked in every decoded string of it, when it is JSON holding one
    (read as a client reads it, bytes UTF-8 cannot hold replaced; re-serialised then); a body this
    reader cannot read (nested past its depth, not JSON) with its `\\u` escapes of printable
    characters written out and the key masked in that text, as a reader that can will read it;
    otherwise the same bytes."""
    if not mask.span or not raw:
        return raw
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        if "\\u" not in text:
            return raw
        written = _ESCAPE.sub(_written_out, text)
        masked = mask(written)
        return raw if masked == written else masked.encode()
    masked = mask.value(data)
    return raw if masked == data else json.dumps(masked).encode()


_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})")
"""A `\\u` escape (not one whose backslash is itself escaped), with the escaped backslashes before it."""


def _written_out(match: re.Match[str]) -> str:
    """The escape as its character when JSON may hold that character as it is (printable, not a
    quote, a backslash or half a surrogate pair); else as it was."""
    code = int(match.group(2), 16)
    if code < 0x20 or code in (0x22, 0x5C) or 0xD800 <= code <= 0xDFFF:
        return match.group(0)
    return match.group(1) + chr(code)


_INDEXES = ("index", "output_index", "content_index", "summary_index")
"""An event's fields that say which block, item, part or summary its pieces belong to (Anthropic's
block `index`, the Responses API's `output_index`, `content_index`, `summary_index`)."""
_LISTED = frozenset({"choices", "candidates", "tool_calls"})
"""Lists whose items a client keeps apart, each by its `index` (else its place): a choice, a
candidate, a call."""
_THINKING_FIELDS = frozenset({"thinking", "reasoning", "reasoning_content"})
_SUMMARY_KINDS = frozenset({"summary_text", "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done"})
"""A Responses reasoning summary's pieces: its deltas, and its text in an item or a part."""
_REASONING_KINDS = _SUMMARY_KINDS | {"reasoning_text", "response.reasoning_text.delta", "response.reasoning_text.done"}
_PIECES = TEXT_FIELDS | {"delta", "partial_json", "signature", "name"}
"""Fields whose strings a client adds to what it has of a block, item or choice (a Responses
event's `delta` is its text, summary or arguments)."""


def _number(value: Any) -> Any:
    """An index as a client takes it: 0, 0.0 and "0" are the same block (a JavaScript array's
    `[event.index]`, a Python dict's key); anything else as it is (a list or an object as its text)."""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    if type(value) is bool:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isascii() and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return value


def _marks(event: dict[str, Any]) -> tuple[Any, ...]:
    """The event's own index fields, numbers as a client takes them."""
    return tuple((key, _number(event[key])) for key in _INDEXES if key in event and isinstance(event[key], (int, float, str)))


class StreamEcho:
    """Follows a streamed reply's `data:` lines (read as a client reads them: bytes UTF-8 cannot
    hold replaced): masks the key in each line's decoded strings and keeps the pieces the way a
    client may join them, so `carries_key` finds a key spelled by any such join, and `spelled_key`
    and `could_complete_key` say, as each line comes, whether one is spelled or could be by what
    comes next. The joins, each in arrival order: every field's pieces by its path (a list item by
    its `index`); every field across all choices and calls (a client that reads `choices[0]`
    whatever the index, or joins every choice), and of each kind of event (its `type`: a reasoning
    summary's deltas apart from the text's); what a client keeps of each block, item, part, choice,
    candidate or call (the event's index fields, the lists' indexes, numbers as a client takes
    them), all its pieces together and each field's apart (a block's start text and its deltas);
    Gemini's thoughts and its other text, of each candidate and of all; all the thinking, whatever
    holds it (Anthropic's, chat completions' reasoning, a Responses summary's deltas and items),
    and a Responses reasoning's summary and text together; every text piece, and
    every string under the choices; and two text fields one after the other (content, then
    arguments). `within`: the key of an event under which those strings are (`choices` for chat
    completions, `candidates` for Gemini; None: anywhere, as in a Messages stream)."""

    def __init__(self, mask: KeyMask, within: str | None = "choices") -> None:
        self._mask = mask
        self._within = within
        self._joins: dict[tuple[Any, ...], list[str]] = {}
        """Every join's pieces, in the order they came."""
        self._tails: dict[tuple[Any, ...], tuple[str, bool]] = {}
        """The end of each join without its gaps, and whether a backslash was left out there (`KeyMask.grown`)."""
        self._open: set[tuple[Any, ...]] = set()
        """The joins whose end could begin the key (`KeyMask.begins`)."""
        self.spelled_key = False
        """A join's end, as the lines came, held the whole key: what `carries_key` finds, kept as
        each line is read (early text asks after every line; `carries_key` joins everything)."""
        self._changed: set[tuple[Any, ...]] = set()

    def line(self, raw: bytes) -> bytes:
        """The line with the key masked in its JSON strings (the same bytes when there is none)."""
        if not self._mask.span or not raw.startswith(b"data:"):
            return raw
        ending = raw[len(raw.rstrip(b"\r\n")) :]
        body = raw[5:].decode("utf-8", "replace")
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return raw
        self._collect(data, (), (), None, _marks(data) if isinstance(data, dict) else ())
        for join in self._changed:  # only the joins this line added to: a line costs what it holds (a key it completed: `_grow`)
            (self._open.add if self._mask.begins(self._tails[join][0]) else self._open.discard)(join)
        self._changed.clear()
        if not self._mask.may_hold(body):  # no string of it can: no escape in it, no secret in its text
            return raw
        masked = self._mask.value(data)
        return raw if masked == data else b"data: " + json.dumps(masked).encode() + ending

    def _collect(self, value: Any, path: tuple[Any, ...], across: tuple[Any, ...], kind: str | None, entity: tuple[Any, ...]) -> None:
        if isinstance(value, str):
            self._grow(("field", *path), value)
            if not across or self._within is not None and across[0] != self._within:
                return
            field = across[-1]
            self._grow(("across", *across), value)
            self._grow(("strings",), value)
            if kind is not None:  # the pieces of one kind of event or part (a reasoning summary's deltas, not the text's)
                self._grow(("kind", kind, *across), value)
            if field in TEXT_FIELDS:
                self._grow(("texts",), value)
            if field in _THINKING_FIELDS or kind in _SUMMARY_KINDS and field in ("delta", "text"):
                self._grow(("thinking",), value)  # all the thinking, whatever holds it (a client showing it apart from the text)
            if kind in _REASONING_KINDS and field in ("delta", "text"):
                self._grow(("reasoning",), value)
            if field in _PIECES and entity:  # what a client keeps of a block, item, choice...: the whole and the part
                for held in {entity[:1], entity}:
                    self._grow(("entity", *held), value)
                    self._grow(("entity", *held, field), value)
        elif isinstance(value, dict):
            if isinstance(value.get("text"), str) and (self._within is None or across[:1] == (self._within,)):
                which = "thoughts" if value.get("thought") is True else "said"  # Gemini's thoughts, and its text without them
                self._grow((which,), value["text"])
                if entity:
                    self._grow((which, entity[0]), value["text"])
            kind = value["type"] if isinstance(value.get("type"), str) else kind
            for key, item in value.items():
                self._collect(item, (*path, key), (*across, key), kind, entity)
        elif isinstance(value, list):
            listed = across[-1] if across and across[-1] in _LISTED else None
            for position, item in enumerate(value):
                index = _number(item.get("index", position)) if isinstance(item, dict) else position
                self._collect(item, (*path, index), (*across, "*"), kind, (*entity, (listed, index)) if listed else entity)

    def _grow(self, join: tuple[Any, ...], value: str) -> None:
        pieces = self._joins.get(join)
        if pieces is None:
            self._joins[join] = [value]
            tail, pending, whole = self._mask.grown("", False, value)
        else:
            pieces.append(value)
            tail, pending, whole = self._mask.grown(*self._tails[join], value)
        self._tails[join] = (tail, pending)
        self.spelled_key = self.spelled_key or whole
        self._changed.add(join)

    @property
    def could_complete_key(self) -> bool:
        """Whether a join of the pieces read so far ends with the start of the key: a piece yet to
        come could spell it, so nothing read may go to the agent before the reply is whole."""
        return bool(self._open)

    @property
    def carries_key(self) -> bool:
        """Whether the pieces, joined in any of the ways a client may join them, hold the key:
        each join whole, and two text fields one after the other (only those where the first's
        end and the second's start could make a key are joined)."""
        if self.spelled_key:
            return True
        matches = self._mask.matches
        joined = {join: "".join(pieces) for join, pieces in self._joins.items()}
        if any(matches(text) for text in joined.values()):
            return True
        texts = [text for join, text in joined.items() if join[0] == "across" and join[-1] in TEXT_FIELDS]
        return any(matches(a + b) for a, b in self._mask.meeting(texts))
