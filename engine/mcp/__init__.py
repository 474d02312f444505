"""MCP tool servers in a run: their configuration, the client hub, and their tools as engine tools.

The names below are imported when first used, so reading a server's configuration
(`engine.mcp.servers`) does not load the hub.
"""

from __future__ import annotations

from engine.core.lazy import lazy_names

_HOME = {
    "McpFault": "engine.mcp.hub",
    "McpHub": "engine.mcp.hub",
    "McpStartError": "engine.mcp.hub",
    "Progress": "engine.core.tools",
    "kill_all": "engine.mcp.hub",
    "hub_tools": "engine.mcp.tools",
    "result_text": "engine.mcp.tools",
    "tool_kind": "engine.mcp.tools",
}

__all__ = sorted(_HOME)


__getattr__, __dir__ = lazy_names(__name__, _HOME)
