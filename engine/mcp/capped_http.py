"""Streamable HTTP to an MCP server with each message it sends capped.

The SDK reads a JSON reply whole (`response.aread()`) and an SSE event line
by line into one event: a server that answers without end would grow either
without bound. `capped_client` is an httpx client for the SDK's
`streamable_http_client(url, http_client=...)` whose responses stop at the
cap (each counted as it arrives, nothing more held): a JSON body over
`limit` bytes, or an SSE event (the bytes between two blank lines) over
`limit`, calls `over()`, which must end the connection (the hub fails the
call with the reason and closes the session, which cancels the SDK's reader);
the body then waits for that and passes nothing more. It raises nothing into
the SDK's reader, which would log the error with a traceback on stderr.
Nothing of the SDK is changed: the client is its documented extension point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

if TYPE_CHECKING:
    import httpx

CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 300.0
"""The SDK's own defaults (`mcp.shared._httpx_utils.create_mcp_http_client`): a server may hold a stream open."""
_EVENT_ENDS = (b"\n\n", b"\n\r\n")


class MessageCount:
    """The bytes of the message being read, fed a response body chunk by chunk: a JSON body is
    one message, an SSE stream one per event (events end at a blank line)."""

    def __init__(self, limit: int, events: bool) -> None:
        self.limit, self.events = limit, events
        self.run = 0
        self._tail = b""  # the end of the last chunk: a blank line may straddle two

    def over(self, chunk: bytes) -> bool:
        """Count `chunk`; True once a message runs past the limit."""
        if not self.events:
            self.run += len(chunk)
            return self.run > self.limit
        window = self._tail + chunk
        ends = [(window.find(end), window.rfind(end) + len(end)) for end in _EVENT_ENDS if end in window]
        self._tail = window[-2:]
        if not ends:
            self.run += len(chunk)
            return self.run > self.limit
        first = min(start for start, _ in ends) - (len(window) - len(chunk))
        if self.run + max(first, 0) > self.limit:
            return True
        self.run = len(window) - max(after for _, after in ends)
        return self.run > self.limit


def capped_client(limit: int, over: Callable[[], None]) -> httpx.AsyncClient:
    """An httpx client whose every response stops (and calls `over`) at a message over `limit` bytes.

    The cap is put on each response as it arrives (a response hook wraps its body before anything
    reads it), whichever transport or proxy brought it. httpx is imported here: the engine loads
    it only when a server is reached over HTTP."""
    import anyio
    import httpx

    class Capped(httpx.AsyncByteStream):
        """A response body passed on chunk by chunk while no message in it is over the cap."""

        def __init__(self, inner: Any, events: bool) -> None:
            self._inner, self._count = inner, MessageCount(limit, events)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                if self._count.over(chunk):
                    over()  # the hub ends the connection, which cancels this reader
                    await anyio.sleep_forever()
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    async def cap(response: httpx.Response) -> None:
        events = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        response.stream = Capped(response.stream, events)

    return httpx.AsyncClient(timeout=httpx.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT), event_hooks={"response": [cap]})
