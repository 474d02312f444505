"""The wires: one module per model API, each translating that API to the engine's neutral form and back.

The neutral form (`engine.wires.neutral`) is chat completions shaped: a request
is a chat completions body, a reply a `Reply`. Each wire module (`chat`,
`anthropic`, `responses`, `gemini`) provides the `Wire` functions below,
used by the gateway on both of its sides (the agent's requests in, its replies
out; the upstream's requests out, its replies in) and by the model policy
(`engine.model`) as a client. No translation lives anywhere else.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Unpack

from engine.wires import anthropic, chat, gemini, responses
from engine.wires.neutral import ORIGINAL, Reply, ReplyOptions, Response, ToolCall, WireError, passthrough


class StreamReader(Protocol):
    """Folds a stream's server-sent-event lines into `reply`, passing text deltas on as they come."""

    reply: Reply
    done: bool

    def feed(self, line: str) -> None: ...

    @property
    def complete(self) -> bool:
        """The stream ended properly, not cut."""
        ...


class Wire(Protocol):
    """What each wire module provides (module-level names)."""

    NAME: str
    ROUTES: tuple[str, ...]
    """The paths the gateway serves this wire's requests on."""
    PASSED_ROUTES: dict[str, str]
    """Agent paths passed through as they are to this path under the upstream of this wire (count_tokens)."""
    ECHO_WITHIN: str | None
    """The key of a stream event under which an agent's client joins strings into text (None: anywhere)."""
    APPENDS_STREAMS: bool
    ITEMS: str
    """The body's list of the conversation's items (messages, input items, contents), whose first
    `checked` `check_request` does not read again (a check passed them: `neutral.checked_before`)."""
    """A stream's text may go to the agent before the reply is decided, the rest appended after (`engine.gateway.early`)."""

    # the agent's side (the gateway)
    def check_request(self, body: Any, checked: int = 0) -> str | None: ...
    def to_neutral(self, body: dict[str, Any], headers: dict[str, str], path: str = "") -> dict[str, Any]:
        """The request (sent to `path`) in neutral form."""
        ...
    def built_reply(self, content: str | None, calls: list[dict[str, Any]], **options: Unpack[ReplyOptions]) -> Response:
        """A reply the gateway wrote (`calls`: chat completions tool calls), in this API's words."""
        ...
    def error_response(self, status: int, message: str, kind: str | None = None, code: str | None = None) -> Response:
        """This API's error body (`kind`: an error type; one this API does not have is mapped by the status)."""
        ...
    def stream_error(self, body: bytes) -> bytes:
        """An error body (`error_response`'s) as an event of this API's stream, for a failure after the stream began."""
        ...

    # the upstream's side (the gateway and the model policy)
    def from_neutral(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]: ...
    def endpoint(self, base: str, route: str | None = None, body: dict[str, Any] | None = None) -> str:
        """The URL of the API (or of `route`, a `PASSED_ROUTES` value) under the server's base URL,
        for the neutral request `body` (whose model and `stream` Gemini's URL names)."""
        ...
    def headers(self, key: str | None, body: dict[str, Any]) -> dict[str, str]: ...
    def read_whole(self, data: Any) -> Reply: ...
    def stream_reader(self, on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> StreamReader:
        """A reader passing the text's deltas to `on_delta` and, where the wire streams thinking
        (Anthropic's thinking blocks, the Responses API's reasoning summaries, Gemini's thoughts,
        chat completions' `reasoning_content`), its deltas to `on_thinking`."""
        ...
    def error_detail(self, raw: bytes) -> str: ...


WIRES: dict[str, Wire] = {chat.NAME: chat, anthropic.NAME: anthropic, responses.NAME: responses, gemini.NAME: gemini}


def wire_named(name: str) -> Wire:
    """The wire module called `name`; ValueError naming the known ones otherwise."""
    try:
        return WIRES[name]
    except KeyError:
        raise ValueError(f"no wire {name!r} (wires: {', '.join(WIRES)})") from None


def wire_for_path(path: str) -> Wire | None:
    """The wire whose routes (served or passed through) include `path`."""
    for wire in WIRES.values():
        if path in wire.ROUTES or path in wire.PASSED_ROUTES:
            return wire
    return gemini if gemini.route(path) is not None else None  # its paths name the model


def passed_route(wire: Wire, path: str) -> str | None:
    """The upstream path an agent's request to `path` is passed through to as it is (count_tokens,
    `:countTokens`), or None when `path` is one of the requests the gateway steers."""
    return wire.PASSED_ROUTES.get(path) or (gemini.passed_route(path) if wire is gemini else None)


__all__ = ["ORIGINAL", "Reply", "ReplyOptions", "Response", "StreamReader", "ToolCall", "WIRES", "Wire", "WireError", "passed_route", "passthrough", "wire_for_path", "wire_named"]
