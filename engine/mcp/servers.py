"""One MCP tool server as the configuration or a flag gives it: what to start or where to
connect, its environment and folder, whether its hints are trusted, its deadline; and the
servers `--mcp` / `--mcp-url` ask for (`servers_from_flags`)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from engine.core.urls import safe_url

_LAUNCHERS = {"npx", "uvx", "node", "python", "python3", "bunx", "deno", "pipx", "uv", "run", "exec"}

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


class McpFlagError(ValueError):
    """An `--mcp` / `--mcp-url` that names no server; the message says why."""


def server_name(words: list[str]) -> str:
    """A short name for a server started from a command line (`npx -y @x/server-filesystem DIR` -> `filesystem`)."""
    for word in words:
        if word in _LAUNCHERS or Path(word).name in _LAUNCHERS or word.startswith("-"):
            continue
        name = Path(word.rstrip("/")).name.rsplit("@", 1)[0] if not word.startswith("@") else word.split("/")[-1]
        for suffix in (".py", ".js", ".mjs", ".ts"):
            name = name.removesuffix(suffix)
        for prefix in ("mcp-server-", "server-", "mcp_server_"):
            name = name.removeprefix(prefix)
        name = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-.") or "server"
        return name[:32]
    return "server"


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


def servers_from_flags(configured: Sequence[McpServerConfig], commands: list[str], urls: list[str]) -> list[McpServerConfig]:
    """The servers `--mcp` and `--mcp-url` ask for: configured ones (`configured`) by name, others
    from their command line. McpFlagError for a command or URL that names no server."""
    servers: list[McpServerConfig] = []
    taken: set[str] = set()
    for text in commands:
        named = next((s for s in configured if s.name == text.strip()), None)
        if named is not None:
            server = named
        else:
            try:
                words = shlex.split(text)
            except ValueError as exc:
                raise McpFlagError(f"--mcp {text!r}: {exc}") from None
            if not words:
                raise McpFlagError("--mcp needs a command (or the name of a configured [[mcp]] server)")
            server = McpServerConfig(name=server_name(words), command=words[0], args=tuple(words[1:]), source="--mcp")
        if server.name in taken:
            server = McpServerConfig(**{**server.__dict__, "name": _unique(server.name, taken)})
        taken.add(server.name)
        servers.append(server)
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise McpFlagError(f"--mcp-url must start with http:// or https://, not {url!r}")
        from urllib.parse import urlsplit

        host = urlsplit(url).hostname or ""
        is_name = any(c.isalpha() for c in host) and ":" not in host  # not 127.0.0.1, not ::1
        name = _unique(host.split(".")[0] if is_name else "remote", taken)
        taken.add(name)
        servers.append(McpServerConfig(name=name, url=url, source="--mcp-url"))
    return servers
