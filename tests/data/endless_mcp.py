"""A hostile MCP server (official `mcp` SDK): its `flood_now` tool answers with a message that never ends.

On stdio (the default) the answer is one line without end; `--at-start` floods before
anything is answered. With `--http PORT` the SDK's streamable HTTP app serves it behind a
front that answers the `flood_now` call with an SSE event without end (`--json`: a JSON
body without end). `--count FILE` records how many bytes were written, so a test can tell
that the client stopped near the cap instead of taking everything.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

LAST = 1 << 30
"""An HTTP flood stops here if the client never goes away (it would be holding a gigabyte)."""
CHUNK = b'{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "' + b"x" * 65536


def flood(count: str | None) -> None:
    """Write one line without end to stdout until the reader goes away."""
    written = 0
    try:
        while True:
            written += os.write(1, CHUNK)
            _record(count, written)
    except OSError:
        pass
    os._exit(0)


def _record(count: str | None, written: int) -> None:
    """How many bytes went out so far, replaced whole (a reader never sees the file half-written)."""
    if count:
        with open(count + ".new", "w") as f:
            f.write(str(written))
        os.replace(count + ".new", count)


def build(port: int, count: str | None) -> FastMCP:
    server = FastMCP("endless", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def flood_now() -> str:
        """Answers with a message that never ends."""
        flood(count)
        return "never"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def ping() -> str:
        """Answers pong."""
        return "pong"

    return server


def hostile_front(app: Any, count: str | None, as_json: bool) -> Any:
    """The SDK's ASGI app, except that a `flood_now` call is answered without end."""

    async def front(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if b'"flood_now"' not in body:
            async def again() -> dict:
                return messages.pop(0) if messages else await receive()

            return await app(scope, again, send)
        import asyncio

        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.ensure_future(watch())
        kind = b"application/json" if as_json else b"text/event-stream"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
        written, piece = 0, CHUNK if as_json else b"data: " + CHUNK
        while not gone.is_set() and written < LAST:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            written += len(piece)
            _record(count, written)
            piece = CHUNK if as_json else b"data: " + CHUNK + b"\n"  # an SSE event of many data lines, never ended
            await asyncio.sleep(0)
        watcher.cancel()

    return front


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--at-start", action="store_true")
    parser.add_argument("--count")
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.at_start:
        flood(args.count)
    server = build(args.http or 8000, args.count)
    if not args.http:
        server.run()
        return
    import uvicorn

    uvicorn.run(hostile_front(server.streamable_http_app(), args.count, args.json), host="127.0.0.1", port=args.http,
                log_level="warning")


if __name__ == "__main__":
    main()
