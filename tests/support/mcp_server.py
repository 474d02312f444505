"""A test MCP server built with the official `mcp` SDK (stdio, or streamable HTTP with --http PORT).

Tools: read-only, destructive, unannotated, trusted-safe (destructiveHint
false), slow with progress, failing (isError), a 1 MB result, non-text
content, a crash and a hang mid-call, garbage on the wire, hostile text.
`--pidfile FILE` writes the server's PID; `--exit-at-start` dies before
answering; `--hostile` adds tools whose names and descriptions carry markup
and escape sequences.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ImageContent, TextContent, ToolAnnotations

HOSTILE = "[bold red]boom[/] [/] [link=http://x]click[/link] \x1b]0;owned\x07\x1b[31mred\x1b[0m \u202eevil"

NOTES: dict[str, str] = {"todo": "buy milk", "ideas": "a cockpit for agents"}
CALLS: list[str] = []
"""The tools called, in order (read and emptied by `call_log`)."""


def build(port: int, hostile: bool) -> FastMCP:
    server = FastMCP("agent-tui-test", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def read_note(name: str) -> str:
        """Read a note by name."""
        CALLS.append("read_note")
        if name not in NOTES:
            raise ValueError(f"no note named {name!r}")
        return NOTES[name]

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def list_notes() -> str:
        """List the notes."""
        CALLS.append("list_notes")
        return ", ".join(sorted(NOTES))

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
    def delete_note(name: str) -> str:
        """Delete a note."""
        CALLS.append("delete_note")
        NOTES.pop(name, None)
        return f"deleted {name}"

    @server.tool()
    def write_note(name: str, text: str, pinned: bool = False) -> str:
        """Write a note (no annotations: may destroy)."""
        CALLS.append("write_note")
        NOTES[name] = text
        return f"wrote {name} ({len(text)} characters)" + (" pinned" if pinned else "")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
    def archive_note(name: str) -> str:
        """Archive a note (adds, never destroys)."""
        CALLS.append("archive_note")
        return f"archived {name}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def slow(steps: int, ctx: Context, delay: float = 0.05) -> str:
        """Count to `steps`, reporting progress."""
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1} of {steps}")
            await asyncio.sleep(delay)
        return f"counted to {steps}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def fail(message: str = "it broke") -> str:
        """Always fails (an isError result)."""
        CALLS.append("fail")
        raise RuntimeError(message)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def call_log() -> str:
        """The tools called since the last call_log, as JSON."""
        calls = list(CALLS)
        CALLS.clear()
        return json.dumps(calls)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def huge(size: int = 1_000_000) -> str:
        """A result of `size` characters."""
        return "x" * size

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def picture() -> list:
        """An image and some text."""
        return [TextContent(type="text", text="a red dot"), ImageContent(type="image", data="iVBORw0KGgo=", mimeType="image/png")]

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def crash() -> str:
        """The server dies during the call."""
        os._exit(1)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def hang() -> str:
        """Never answers."""
        await asyncio.sleep(3600)
        return "late"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def garbage(ctx: Context) -> str:
        """Answers the call with a reply that is not a tools/call result."""
        reply = {"jsonrpc": "2.0", "id": int(ctx.request_id), "result": {"content": "not a list", "isError": "maybe"}}
        os.write(1, (json.dumps(reply) + "\n").encode())
        await asyncio.sleep(3600)
        return "late"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def echo_hostile() -> str:
        """Returns text full of markup and escape sequences."""
        return HOSTILE

    if hostile:
        server.add_tool(lambda: "ok", name="evil[/]tool", description=HOSTILE, annotations=ToolAnnotations(readOnlyHint=True))
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--pidfile")
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--hostile", action="store_true")
    parser.add_argument("--stderr", default="test server started", help="a line written to stderr at start")
    args = parser.parse_args()
    if args.pidfile:
        with open(args.pidfile, "w") as f:
            f.write(str(os.getpid()))
    print(args.stderr, file=sys.stderr, flush=True)
    if args.exit_at_start:
        print("fatal: refusing to start", file=sys.stderr, flush=True)
        sys.exit(3)
    server = build(args.http or 8000, args.hostile)
    server.run("streamable-http" if args.http else "stdio")


if __name__ == "__main__":
    time.sleep(0)
    main()
