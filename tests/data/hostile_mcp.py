"""A hostile stdio MCP server on the official `mcp` SDK's low-level server: it offers the tools a
JSON file describes, as they are (any name, annotations, description or input schema), and
misbehaves on its other streams as asked.

`python hostile_mcp.py SPEC.json [--calls FILE] [--banner TEXT] [--noise TEXT] [--stderr-bytes N]`

SPEC.json holds a list of pages, each a list of tool objects (`name`, `description`,
`inputSchema`, `annotations`): `tools/list` answers one page at a time with a cursor to the next.
A call of any tool appends its name to `--calls` (one a line) and answers `ran NAME`.
`--banner` prints a line of text on stdout before the server speaks; `--noise` prints one on
stdout before each answer; `--stderr-bytes` writes that many bytes to stderr at start.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def build(pages: list[list[dict[str, Any]]], calls: str | None, noise: str | None) -> Server:
    server: Server = Server("hostile")

    @server.list_tools()
    async def list_tools(request: types.ListToolsRequest) -> types.ListToolsResult:
        cursor = request.params.cursor if request.params is not None else None
        page = int(cursor) if cursor else 0
        more = str(page + 1) if page + 1 < len(pages) else None
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in pages[page]], nextCursor=more)

    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        if calls:
            with open(calls, "a") as f:
                f.write(name + "\n")
        if noise:
            print(noise, flush=True)
        return [types.TextContent(type="text", text=f"ran {name}")]

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("spec")
    parser.add_argument("--calls")
    parser.add_argument("--banner")
    parser.add_argument("--noise")
    parser.add_argument("--stderr-bytes", type=int, default=0)
    args = parser.parse_args()
    with open(args.spec) as f:
        pages = json.load(f)
    if args.banner:
        print(args.banner, flush=True)
    line = b"the server says a lot on stderr " * 32 + b"\n"
    left = args.stderr_bytes
    while left > 0:
        left -= sys.stderr.buffer.write(line[:left])
    if args.stderr_bytes:
        sys.stderr.buffer.write(b"the last line of the flood\n")
        sys.stderr.flush()
    server = build(pages, args.calls, args.noise)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
