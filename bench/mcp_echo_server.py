"""The MCP server bench/mcp_bench.py calls: one tool whose function the bench also calls directly."""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations


def word_count(text: str) -> str:
    """Count the words of `text` (the work both paths do)."""
    return f"{len(text.split())} words"


def main() -> None:
    server = FastMCP("bench-echo", log_level="WARNING")
    server.add_tool(word_count, annotations=ToolAnnotations(readOnlyHint=True))
    server.run("stdio")


if __name__ == "__main__":
    main()
