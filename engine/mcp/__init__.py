"""MCP tool servers in a run: the client hub, and their tools as engine tools."""

from engine.mcp.hub import McpFault, McpHub, McpStartError, Progress, kill_all
from engine.mcp.tools import hub_tools, result_text, tool_kind

__all__ = ["McpFault", "McpHub", "McpStartError", "Progress", "hub_tools", "kill_all", "result_text", "tool_kind"]
