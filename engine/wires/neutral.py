"""The engine's neutral form of a model turn, shared by every wire.

A request in neutral form is a chat completions request body (`messages`,
`tools` as function definitions, `stream`...): the gateway's conversations and
the model policy's messages are written in it. A wire module turns its own API's
request into it (`to_neutral`) and it into its API's request (`from_neutral`).
What a translation cannot carry is kept under `ORIGINAL`, on the body and on
each message, so the same wire gets it back as it came.

A reply in neutral form is a `Reply`: the text, the tool calls (id, name, JSON
arguments), the finish reason and usage, plus the wire it came in and, when its
module keeps one, the whole reply in that wire (`message`), from which an edited
reply is rebuilt with every field the engine does not understand kept.

`Response` is what goes back to an agent: a status, the body bytes and their
content type; `ReplyOptions`, what a wire's `built_reply` is told to write one.

What every wire does alike lives here too, written once: JSON read from and written to
the wire (`json_from_wire`, `json_to_wire`: pydantic's Rust reader and writer, each falling back
to `json` where it refuses, so the values are `json`'s), a request's lists checked
item by item (`listed_problem`, `first_problem`), a stream's lines split where an event stream's
reader splits them (`split_lines`) and its `data:` lines read (`stream_payload`, `stream_json`,
`stream_events`) and an event written (`stream_event`), an upstream reply kept only in its own wire
(`reply_message_of`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from os.path import commonprefix
from typing import Any, Callable, Iterator, Required, TypedDict

from pydantic_core import PydanticSerializationError, from_json, to_json

from engine.core.content import content_text
from engine.core.events import Usage

ORIGINAL = "_agent_tui_original"
"""The key, on a neutral body or message, holding it as its own wire wrote it:
`{"wire": NAME, "body": ..., "headers": ..., "untranslated": [...]}` on a body (`untranslated`:
the request's fields another wire has no counterpart for, said once when one is asked), the
message itself on a message."""


def json_from_wire(raw: bytes | str) -> Any:
    """A request's or a reply's JSON body, as `json.loads` reads it (and raising as it does):
    by pydantic's reader, about twice as fast, where it can; `json.loads` for what it refuses
    (UTF-16, a byte-order mark, a lone surrogate or its escape, nesting past 200, long numbers)."""
    try:
        return from_json(raw)
    except (ValueError, TypeError):  # TypeError: text holding a lone surrogate itself
        return json.loads(raw)


def json_to_wire(value: Any) -> bytes:
    """`value` as a request's JSON body: compact, text as UTF-8, by pydantic's writer (about
    twice as fast as `json.dumps`); by `json.dumps` for what UTF-8 cannot hold (a lone surrogate,
    escaped) or what is not JSON's."""
    try:
        return to_json(value)
    except PydanticSerializationError:
        return json.dumps(value).encode()


class WireError(Exception):
    """A server's reply could not be read (malformed JSON, a wrong shape, an error chunk)."""


def stream_event(data: bytes, name: str | None = None) -> bytes:
    """One server-sent event of `data` (a JSON body), with its event `name` when the wire names its events."""
    return (f"event: {name}\n".encode() if name else b"") + b"data: " + data + b"\n\n"


@dataclass
class ToolCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class Reply:
    """One assistant reply, streamed or whole."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    wire: str = "chat"
    """The wire the reply came in."""
    message: dict[str, Any] | None = None
    """The whole reply as that wire wrote it (its module's own shape), when the module keeps it."""


class ReplyOptions(TypedDict, total=False):
    """What a wire's `built_reply` is told besides the text and the calls, by keyword: the `model`
    and whether to `stream` (always); the `usage` to report; `include_usage`, a chat completions
    stream's closing usage chunk (as its agent asked); `original`, the upstream's reply that the
    written one replaces, from which a wire keeps what the neutral form does not hold; `continued` and `shown`."""

    model: Required[str]
    stream: Required[bool]
    usage: Usage | None
    include_usage: bool
    original: Reply | None
    continued: bool
    """The stream continues one whose first events the agent already has (`engine.gateway.early`):
    nothing a client joins by appending (chat completions' role) is sent again."""
    shown: bytes
    """With `continued`: the stream's bytes the agent has, which a wire whose stream is one numbered
    message (Anthropic's blocks, the Responses API's output items) takes up where they stop."""


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    on_sent: Callable[[bool], None] | None = None
    """Called once by the server: True when the whole body was handed to the agent's connection, False when it could not be."""
    sent_now: Callable[[], bool] | None = None
    """Tried first, on the server's event loop, once the whole body was handed over: records that
    without waiting for any lock and says True, or says False (a lock is busy) and `on_sent(True)`
    is called off the loop instead; saves a thread hand-off a response."""
    rest: bytes | None = None
    """For a connection that already got the stream's first text (`engine.gateway.early`): what follows it."""


class StreamReading:
    """What every wire's stream reader starts with: the `Reply` it folds the stream into (of
    wire `WIRE`), whether the stream's own last event came (`done`), and where text (and, for
    a wire that streams it, thinking) goes as it comes."""

    WIRE = "chat"

    def __init__(self, on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> None:
        self._reply = Reply(wire=self.WIRE)
        self._texts: list[str] = []
        self._arguments: dict[int, tuple[ToolCall, list[str]]] = {}
        """Each call's argument pieces read and not added to it yet, by the call's `id()`."""
        self.done = False
        self.plain = True
        """Every event so far shaped as the API's own servers write it (one choice or candidate,
        blocks, items and parts numbered in the order they start, none begun with text): every
        client then joins its pieces as this reader does. A stream that is not is passed on to
        the agent only rebuilt, when a key is to be masked (`engine.gateway.upstream`)."""
        self._on_delta = on_delta
        self._on_thinking = on_thinking

    @property
    def reply(self) -> Reply:
        """The reply folded so far, what was read in pieces joined into it (`_settle`)."""
        self._settle()
        return self._reply

    def _settle(self) -> None:
        """The pieces read since the reply was last asked for joined into it: its text (a wire's
        reader adds what else it keeps in pieces). A string added to is copied whole, so a long
        stream's text added piece by piece would cost its length squared."""
        if self._texts:
            self._reply.content += "".join(self._texts)
            self._texts.clear()
        for call, _ in list(self._arguments.values()):
            self._settle_call(call)

    def _settle_call(self, call: ToolCall) -> None:
        """The argument pieces read for `call` added to it (before anything else is)."""
        kept = self._arguments.pop(id(call), None)
        if kept is not None:
            call.arguments += "".join(kept[1])

    def _add_arguments(self, call: ToolCall, piece: str) -> None:
        """A piece of `call`'s arguments, read."""
        kept = self._arguments.get(id(call))
        if kept is None:
            kept = self._arguments[id(call)] = (call, [])
        kept[1].append(piece)

    @property
    def calling(self) -> bool:
        """Whether a tool call was read (asked after each line: the text is not joined for it)."""
        return bool(self._reply.tool_calls)

    def _add_text(self, text: str) -> None:
        """A piece of the reply's text, read."""
        self._texts.append(text)


_LINE_END = re.compile(rb"\r\n|\n|\r(?=.)", re.S)
"""Where a line of a server-sent event stream ends: CRLF, LF, or CR alone (the standard's three;
a CR at the end of what came so far may be the first half of a CRLF, so it waits)."""


def split_lines(data: bytes, final: bool = False) -> tuple[list[bytes], bytes]:
    """The complete lines of `data`, each with its line end, and what is left after the last one
    (nothing when `final`: the end of the stream ends it). A CR alone ends a line as an event
    stream's reader takes it, so a line the agent's client reads is one the gateway reads too."""
    lines, start = [], 0
    for end in _LINE_END.finditer(data):
        lines.append(data[start : end.end()])
        start = end.end()
    rest = data[start:]
    if final and rest:
        lines.append(rest)
        rest = b""
    return lines, rest


def arguments_text(value: Any) -> str:
    """A call's arguments as the JSON text `ToolCall.arguments` holds: a string as it is, nothing as
    none, anything else (an object some servers send, a number or a list a broken one does) as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


MASK = "***"
"""What a secret (the upstream's key) masked in a reply reads as (`engine.model.keymask`)."""
MASKED_START = 3
"""The most of a key's first characters that may reach the agent before the key is spelled (a
streamed reply's text is held back once a join of it ends with 4, `engine.gateway.early`)."""


def rest_after(whole: str, had: str) -> str | None:
    """What follows `had`, the start of a text the agent has, in `whole`, the text as decided:
    its rest when `had` begins it; when `had` ends with a key's first characters (at most
    `MASKED_START`) where `whole`, the key masked, has the mask, the rest from the mask on (the
    agent reads `sk-***`); else None: `whole` does not go on from `had`. What every wire's rest
    of a text the agent has part of is written from, one way."""
    if whole.startswith(had):
        return whole[len(had) :]
    common = len(commonprefix([whole, had]))
    if len(had) - common <= MASKED_START and whole.startswith(MASK, common):
        return whole[common:]
    return None


def stream_payload(line: str) -> str | None:
    """The payload of a server-sent event's `data:` line, stripped; None for any other line
    (`event:` lines, comments, blanks) and for an empty payload."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip() or None


def stream_events(data: bytes) -> Iterator[dict[str, Any]]:
    """The JSON object of each `data:` line of a stream's bytes (what the agent has of a stream),
    in order; a line that is none (`[DONE]`, broken JSON, not an object) left out."""
    for raw in split_lines(data, final=True)[0]:
        payload = stream_payload(raw.decode("utf-8", "replace").rstrip("\r\n"))
        if payload is None or payload == "[DONE]":
            continue
        try:
            event = stream_json(payload)
        except WireError:
            continue
        if isinstance(event, dict):
            yield event


def stream_json(payload: str) -> Any:
    """A stream's payload read as JSON (`json_from_wire`); a WireError quoting its start when it is not."""
    try:
        return json_from_wire(payload)
    except (ValueError, RecursionError):
        raise WireError(f"malformed JSON in the stream: {payload[:120]!r}") from None


def passthrough(raw: bytes, stream: bool) -> Response:
    """The upstream's reply as it came, for an agent of the same wire."""
    return Response(200, raw, "text/event-stream" if stream else "application/json")


def reply_message_of(original: Reply | None, wire: str) -> dict[str, Any] | None:
    """The whole reply `original` as `wire` wrote it, if it came in that wire (else a reply built
    from it is written anew)."""
    if original is None or original.wire != wire or not isinstance(original.message, dict):
        return None
    return original.message


def original_of(body: dict[str, Any], wire: str) -> dict[str, Any] | None:
    """What `body` (a neutral request) keeps of its request in `wire`, if it came in that wire."""
    kept = body.get(ORIGINAL)
    return kept if isinstance(kept, dict) and kept.get("wire") == wire else None


def without_original(value: dict[str, Any]) -> dict[str, Any]:
    """`value` (a neutral body or message) without what it keeps of its own wire (the same dict when it keeps nothing)."""
    if ORIGINAL not in value:
        return value
    return {k: v for k, v in value.items() if k != ORIGINAL}


def asks_for_json(body: dict[str, Any]) -> bool:
    """Whether a neutral request asks for a JSON answer (`response_format`), as a router's or a
    classifier's side request does."""
    wanted = body.get("response_format")
    return isinstance(wanted, dict) and wanted.get("type") in ("json_object", "json_schema")


def message_text(content: Any) -> str:
    """The text of a neutral message's content (`engine.core.content.content_text`); any
    other value kept whole, as JSON."""
    text = content_text(content)
    return json.dumps(content, sort_keys=True) if text is None else text


def first_problem(items: list[Any], name: str, problem_of: Callable[[Any, str], str | None], checked: int = 0) -> str | None:
    """The problem `problem_of(item, where)` finds in the first item of the list `name` that has
    one (`where`: "name[n]"), past its first `checked` items; None when none has."""
    for n in range(checked, len(items)):
        problem = problem_of(items[n], f"{name}[{n}]")
        if problem is not None:
            return problem
    return None


def checked_before(items: Any, checked: list[Any] | None) -> int:
    """How many of a request's first `items` (its messages, input items or contents) need no
    check again: all of `checked` (a list a wire's `check_request` passed: a conversation's
    last request's) when `items` begins with it, else none. An equal item has the same verdict:
    the checks tell strings, lists, objects and null apart, as equality does."""
    if checked is None or not isinstance(items, list) or not 0 < len(checked) <= len(items):
        return 0
    return len(checked) if items[len(checked) - 1] == checked[-1] and items[: len(checked)] == checked else 0


def listed_problem(body: Any, key: str, problem_of: Callable[[Any, str], str | None], checked: int = 0) -> str | None:
    """Why a request's body and its list `key` (`messages`, Gemini's `contents`) cannot be served:
    a body that is not an object, a list missing or empty, or the first item's problem by
    `problem_of(item, where)` past its first `checked` (`checked_before`); None when they can."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    items = body.get(key)
    if not isinstance(items, list) or not items:
        return f"'{key}' must be a non-empty list of {key}"
    return first_problem(items, key, problem_of, checked)


def messages_problem(body: Any, message_problem: Callable[[Any, str], str | None], checked: int = 0) -> str | None:
    """Why a request's body and its `messages` cannot be served (each message past the first
    `checked` by `message_problem(message, where)`), and a `stream` that is not a boolean; None when they can."""
    problem = listed_problem(body, "messages", message_problem, checked)
    if problem is not None:
        return problem
    if "stream" in body and not isinstance(body["stream"], bool):
        return "'stream' must be true or false"
    return None
