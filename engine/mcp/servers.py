"""One MCP tool server as the configuration or a flag gives it: what to start or where to
connect, its environment and folder, whether its hints are trusted, its deadline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.core.urls import safe_url

DEFAULT_MCP_TIMEOUT = 30.0
"""Seconds a server's call may take unless its configuration says otherwise."""


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP tool server: a command to start (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    trusted: bool = False
    timeout: float = DEFAULT_MCP_TIMEOUT
    source: str = "default"
    """Where it was set: `FILE:LINE` of the configuration, a flag (`--mcp`), or `default`."""

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def public(self) -> dict[str, Any]:
        """What a transcript header records: everything but the environment's values and the
        credentials a URL may carry (user info, query)."""
        data: dict[str, Any] = {"name": self.name, "trusted": self.trusted, "timeout": self.timeout}
        if self.url:
            data["url"] = safe_url(self.url)  # credentials in the URL stay in memory, never in a transcript
        else:
            data["command"] = self.command
            data["args"] = list(self.args)
        if self.cwd:
            data["cwd"] = self.cwd
        if self.env:
            data["env_keys"] = sorted(self.env)
        return data
