"""MCP tool servers in a run: their configuration, the client hub, and their tools as engine tools.

The names below are imported when first used, so reading a server's configuration
(`engine.mcp.servers`) does not load the hub.
"""

from __future__ import annotations

from engine.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(__name__, {
    "engine.core.tools": ("Progress",),
    "engine.mcp.hub": ("McpFault", "McpHub", "McpStartError", "kill_all"),
    "engine.mcp.tools": ("hub_tools", "result_text", "tool_kind"),
})
