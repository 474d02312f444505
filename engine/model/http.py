"""The model client's HTTP side: reading a reply (whole or streamed), TLS, retries, and errors in words.

Every fault becomes a `WireError` or a `PolicyError` whose message names what
happened (never the API key). Every text a server sends has the key masked
(`engine.model.keymask`) before anything cuts it or changes its whitespace,
and a reply (or an error body) larger than `MAX_REPLY_BYTES` is refused.
"""

from __future__ import annotations

import email.utils
import functools
import json
import re
import time
from typing import TYPE_CHECKING, Any, Callable

from engine.core.policy import PolicyError
from engine.model.keymask import KeyMask, MaskedStream
from engine.wires import Wire
from engine.wires.neutral import Reply, WireError

if TYPE_CHECKING:
    import httpx

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_REPLY_BYTES = 16_000_000
"""A reply larger than this is refused (an endless stream must not grow memory)."""
_TOO_LARGE = f"the reply is larger than {MAX_REPLY_BYTES // 1_000_000} MB; stopped reading"


async def read_capped(response: httpx.Response) -> bytes:
    """The whole body, refusing more than MAX_REPLY_BYTES."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise WireError(_TOO_LARGE)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_reply(response: httpx.Response, on_delta: Callable[[str], None], stream: bool, mask: KeyMask, wire: Wire) -> Reply:
    """The reply in `wire`, streamed or whole, capped in size; every text from the server has the
    key masked before anything cuts it (the streamed preview holds back what could be
    the start of the key)."""
    content_type = response.headers.get("content-type", "")
    if stream and "text/event-stream" in content_type:
        shown = MaskedStream(mask, on_delta)
        reader = wire.stream_reader(shown)
        size = 0
        async for line in response.aiter_lines():
            size += len(line) + 1
            if size > MAX_REPLY_BYTES:
                raise WireError(_TOO_LARGE)
            reader.feed(mask(line))
            if reader.done:
                break
        if not reader.complete:
            raise WireError("the stream was cut before the reply was complete")
        shown.close()
        return reader.reply
    text = mask((await read_capped(response)).decode("utf-8", "replace"))
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise WireError(f"the reply is not valid JSON: {text[:120]!r}") from None
    reply = wire.read_whole(mask.value(data))
    if reply.content:
        on_delta(reply.content)
    return reply


@functools.lru_cache(maxsize=1)
def ssl_context() -> Any:
    """One verified TLS context for every request (building one costs tens of milliseconds)."""
    import httpx

    return httpx.create_ssl_context()


def retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def timeout_kind(exc: httpx.TimeoutException) -> str:
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return "connecting"
    if isinstance(exc, httpx.ReadTimeout):
        return "waiting for the reply"
    if isinstance(exc, httpx.WriteTimeout):
        return "sending the request"
    return "waiting for a connection"


def server_detail(raw: bytes, mask: KeyMask) -> str:
    """The server's own words about an error, short, with the key masked before the cut."""
    body = mask(raw.decode("utf-8", "replace"))
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and data.get("error"):
        error = mask.value(data["error"])
        text = str(error.get("message") or error) if isinstance(error, dict) else str(error)
    else:
        text = body
    text = re.sub(r"\s+", " ", mask(text)).strip()
    return text[:200] + ("..." if len(text) > 200 else "")


def status_error(response: httpx.Response, body: bytes, retries: int, max_retries: int, mask: KeyMask) -> PolicyError:
    status = response.status_code
    if status in (401, 403):
        return PolicyError(
            f"the model server refused the API key (HTTP {status}); set AGENT_TUI_API_KEY or OPENAI_API_KEY",
            retryable=False,
        )
    detail = server_detail(body, mask)
    suffix = f": {detail}" if detail else ""
    tried = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
    if status == 429:
        asked = response.headers.get("retry-after")
        wait = f"; the server asks to wait {asked} s" if asked and retries < max_retries else ""
        return PolicyError(f"rate limited by the model server (HTTP 429){tried}{wait}{suffix}")
    if status >= 500:
        return PolicyError(f"the model server failed (HTTP {status}){tried}{suffix}")
    if status == 404:
        return PolicyError(f"HTTP 404 from the model server (check --base-url and --model){suffix}", retryable=False)
    return PolicyError(f"the model server rejected the request (HTTP {status}){suffix}", retryable=status in RETRY_STATUSES)
