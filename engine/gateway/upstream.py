"""The gateway's policy: the upstream model, reached with the agent's own request.

`UpstreamPolicy.decide` sends the conversation's messages and the agent's
request parameters to the upstream, in its wire (`engine.wires`: the request
translated from the neutral form, what it cannot carry listed in
`untranslated`), and reads the reply (whole or streamed) into a `Decision`: tool calls are the actions, the text is the
thought, a reply without tool calls is the answer. It keeps the reply's raw
bytes so a response released unchanged goes back to the agent exactly as the
upstream sent it. A refused connection, a timeout (`engine.gateway.client`
bounds the whole reply) or an error status is a `PolicyError`; `last_failure`
keeps the status, body and the headers worth passing on (`Retry-After`,
`x-ratelimit-*`) to give the agent. The key is sent as the wire sends it (a bearer token, Anthropic's `x-api-key`)
and never written: an upstream that echoes it, or a credential of its
URL (user info, `?key=`), in a reply, tool arguments, an error body or a
header has it masked (`engine.model.keymask`) before anything reads, cuts or
passes it on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, NoReturn

from engine.core.events import Usage
from engine.core.urls import safe_url, url_secrets
from engine.model.config import Secret
from engine.model.keymask import KeyMask, MaskedStream
from engine.model.wire import action_from_call
from engine.core.policy import Decision, PolicyError, RunView
from engine.gateway.client import Unreachable, UpstreamClient
from engine.gateway.early import EarlyStream
from engine.gateway.echo import StreamEcho, masked_json
from engine.wires import Wire, wire_named
from engine.wires.neutral import ORIGINAL, Reply, Response, WireError, json_from_wire, json_to_wire

if TYPE_CHECKING:
    import httpx


def _passed_on(name: str) -> bool:
    """The upstream headers the agent gets with a failure: when to retry, and its rate limits."""
    name = name.lower()
    return name == "retry-after" or name.startswith("x-ratelimit-")


@dataclass(frozen=True)
class Upstream:
    """A named model endpoint, the wire it speaks (`engine.wires`) and, optionally, the model to use there."""

    name: str
    url: str
    model: str | None = None
    wire: str = "chat"

    @property
    def label(self) -> str:
        return f"{self.name}:{self.model}" if self.model else self.name


@dataclass
class Failure:
    """What the agent receives when the upstream failed: the same status when there was one."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    wire: str = "chat"
    """The wire `body` is written in."""


@dataclass
class UpstreamReply:
    reply: Reply
    stream: bool
    raw: bytes
    data: dict[str, Any] | None = None
    raw_safe: bool = True
    """False when the raw bytes spell the key across streamed pieces: never passed on as they came."""


class UpstreamPolicy:
    """Asks the upstream for the next turn of the conversation `body()` describes."""

    def __init__(
        self,
        upstream: Upstream,
        body: Callable[[], dict[str, Any]],
        *,
        key: Secret | None = None,
        timeout: float = 600.0,
        client: UpstreamClient | None = None,
        early: Callable[[], EarlyStream | None] | None = None,
    ) -> None:
        self.upstream = upstream
        self._early = early
        """The held request's channel for text sent before the reply is decided, when it may have one (`engine.gateway.early`)."""
        self.name = f"upstream {upstream.label}"
        self._body = body
        self._key = key
        self._mask = KeyMask(key.reveal() if key else None, url_secrets(upstream.url))
        self._timeout = timeout
        self._client = client or UpstreamClient(timeout)
        self.wire: Wire = wire_named(upstream.wire)
        self.last_reply: UpstreamReply | None = None
        self.last_failure: Failure | None = None
        self.untranslated: list[str] = []
        """What the last request had that the upstream's wire has no counterpart for."""

    def __repr__(self) -> str:
        return f"UpstreamPolicy({self.upstream.label!r})"

    def request_body(self) -> dict[str, Any]:
        body = self._body()
        if self.upstream.model:
            body["model"] = self.upstream.model
        return body

    def decide(self, view: RunView) -> Decision:
        neutral = self.request_body()
        body, self.untranslated = self.wire.from_neutral(neutral)
        self.last_reply, self.last_failure = None, None
        headers = self.wire.headers(self._key.reveal() if self._key else None, neutral)
        url = self.wire.endpoint(self.upstream.url, None, neutral)
        stream = bool(neutral.get("stream"))
        payload = json_to_wire(body)
        try:
            with self._client.post(url, payload, headers) as response:
                if response.status_code != 200:
                    raw = masked_json(self._mask, self._masked(self._client.whole(response)))
                    self._fail(response.status_code, raw, response.headers, self.wire.error_detail(raw))
                got = self._read_stream(response, view) if stream else self._read_whole(masked_json(self._mask, self._masked(self._client.whole(response))))
        except TimeoutError:
            self._fail(504, None, {}, f"the upstream {safe_url(self.upstream.url)} did not answer in time")
        except OSError as exc:
            if self._client.interrupted:
                self._fail(503, None, {}, "the gateway stopped while the upstream was answering")
            kind = exc.kind if isinstance(exc, Unreachable) else type(exc).__name__
            self._fail(502, None, {}, f"cannot reach the upstream {safe_url(self.upstream.url)}: {kind}")
        except WireError as exc:
            self._fail(502, None, {}, f"the upstream's reply could not be read: {exc}")
        self.last_reply = got
        self._mask.reply(got.reply)  # a key split across streamed pieces
        return _decision(got.reply)

    def pass_through(self, route: str, body: bytes, agent_headers: dict[str, str]) -> Response:
        """`body` posted as it is to `route` (a `PASSED_ROUTES` path) upstream; its answer with the key masked."""
        neutral = {ORIGINAL: {"wire": self.wire.NAME, "headers": {k: v for k, v in agent_headers.items() if k.startswith("anthropic-")}}}
        headers = self.wire.headers(self._key.reveal() if self._key else None, neutral)
        try:
            with self._client.post(self.wire.endpoint(self.upstream.url, route), body, headers) as response:
                raw = masked_json(self._mask, self._masked(self._client.whole(response)))
                return Response(response.status_code, raw, self._mask(response.headers.get("content-type", "application/json")))
        except TimeoutError:
            message = f"the upstream {safe_url(self.upstream.url)} did not answer in time"
            return self.wire.error_response(504, message, "upstream_error")
        except (OSError, WireError) as exc:
            kind = exc.kind if isinstance(exc, Unreachable) else type(exc).__name__
            return self.wire.error_response(502, f"cannot reach the upstream {safe_url(self.upstream.url)}: {kind}", "upstream_error")

    def _read_stream(self, response: httpx.Response, view: RunView) -> UpstreamReply:
        shown = MaskedStream(self._mask, view.stream)
        early = self._early() if self._early is not None else None
        on_delta: Callable[[str], None] = shown
        if early is not None:
            early.begin(self._mask, self.wire.ECHO_WITHIN)

            def on_delta(delta: str) -> None:
                shown(delta)
                early.text(delta)

        reader = self.wire.stream_reader(on_delta, early.thinking if early is not None else None)
        echo = StreamEcho(self._mask, self.wire.ECHO_WITHIN)
        keyed = bool(self._mask.span)
        lines: list[bytes] = []
        try:
            for line in self._client.lines(response):
                line = echo.line(self._masked(line))
                lines.append(line)
                reader.feed(line.decode("utf-8", "replace").rstrip("\r\n"))
                if early is not None:  # a call, or the reply's end (recorded before the agent sees it), waits
                    early.line(line, reader.calling or reader.complete,
                               key=echo.spelled_key or keyed and not reader.plain, key_begun=echo.could_complete_key)
        finally:
            if early is not None:
                early.end()
        if not reader.complete:
            raise WireError("the stream ended before the reply was complete")
        shown.close()
        # with a key, a stream not shaped as the API's servers write it goes rebuilt: its clients may join its pieces otherwise
        return UpstreamReply(reader.reply, True, b"".join(lines), raw_safe=not echo.carries_key and (reader.plain or not keyed))

    def _read_whole(self, raw: bytes) -> UpstreamReply:
        try:
            data = json_from_wire(raw)
        except (ValueError, RecursionError):
            raise WireError("the reply is not JSON") from None
        echo = StreamEcho(self._mask, self.wire.ECHO_WITHIN)  # a key spelled across the reply's parts
        echo.line(b"data: " + raw)
        return UpstreamReply(self.wire.read_whole(data), False, raw, data, raw_safe=not echo.carries_key)

    def _masked(self, raw: bytes) -> bytes:
        """`raw` with the key masked (undecodable bytes kept as they are)."""
        if not self._mask.span or not raw:
            return raw
        text = raw.decode("utf-8", "surrogateescape")
        masked = self._mask(text)
        return raw if masked == text else masked.encode("utf-8", "surrogateescape")

    def _fail(self, status: int, raw: bytes | None, headers: Any, message: str) -> NoReturn:
        names = [k.lower() for k in headers if _passed_on(k)]
        values = self._mask.across([self._mask(headers[k]) for k in headers if _passed_on(k)])  # a key spelled across them too
        kept = dict(zip(names, values))
        body = raw if raw else self.wire.error_response(status, message, "upstream_error").body
        self.last_failure = Failure(status, body, kept, self.wire.NAME)
        raise PolicyError(f"upstream status {status}: {message}")

    def close(self) -> None:
        self._client.close()

    def interrupt(self) -> None:
        """Cut the upstream reply being read, from any thread (the gateway is stopping)."""
        self._client.interrupt()


def _decision(reply: Reply) -> Decision:
    usage = None
    if reply.input_tokens is not None and reply.output_tokens is not None:
        usage = Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, estimated=False)
    if not reply.tool_calls:
        return Decision(answer=reply.content, usage=usage)
    actions = [action_from_call(call, 0, n) for n, call in enumerate(reply.tool_calls)]
    return Decision(thought=reply.content, actions=actions, usage=usage)
