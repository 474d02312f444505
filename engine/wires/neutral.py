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
content type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

ORIGINAL = "_agent_tui_original"
"""The key, on a neutral body or message, holding it as its own wire wrote it:
`{"wire": NAME, "body": ..., "headers": ..., "untranslated": [...]}` on a body (`untranslated`:
the request's fields another wire has no counterpart for, said once when one is asked), the
message itself on a message."""


class WireError(Exception):
    """A server's reply could not be read (malformed JSON, a wrong shape, an error chunk)."""


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


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    on_sent: Callable[[bool], None] | None = None
    """Called once by the server: True when the whole body was handed to the agent's connection, False when it could not be."""


def passthrough(raw: bytes, stream: bool) -> Response:
    """The upstream's reply as it came, for an agent of the same wire."""
    return Response(200, raw, "text/event-stream" if stream else "application/json")


def original_of(body: dict[str, Any], wire: str) -> dict[str, Any] | None:
    """What `body` (a neutral request) keeps of its request in `wire`, if it came in that wire."""
    kept = body.get(ORIGINAL)
    return kept if isinstance(kept, dict) and kept.get("wire") == wire else None


def without_original(value: dict[str, Any]) -> dict[str, Any]:
    """`value` (a neutral body or message) without what it keeps of its own wire (the same dict when it keeps nothing)."""
    if ORIGINAL not in value:
        return value
    return {k: v for k, v in value.items() if k != ORIGINAL}


def message_text(content: Any) -> str:
    """The text of a neutral message's content (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return json.dumps(content, sort_keys=True)


def messages_problem(body: Any, message_problem: Callable[[Any, str], str | None]) -> str | None:
    """Why a request's body and its `messages` cannot be served (each message checked by
    `message_problem(message, where)`), and a `stream` that is not a boolean; None when they can."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list of messages"
    for n, m in enumerate(messages):
        problem = message_problem(m, f"messages[{n}]")
        if problem is not None:
            return problem
    if "stream" in body and not isinstance(body["stream"], bool):
        return "'stream' must be true or false"
    return None
