"""The MCP servers a continued run (`run --resume` / `--fork`) starts again: only those the operator names.

A transcript's header records each server's command line or URL, so that a reader
knows what the run's tools were. A saved run is data: it never chooses a command to
start, a URL to connect to, a folder to start in, or which servers' hints to trust.
Each recorded server must match (by name and command line, or name and URL) one the
operator gives again with `--mcp` / `--mcp-url` or keeps in the configuration; the
operator's entry is then started as the operator wrote it (environment, folder,
trust, timeout). Anything else is a UsageError that says what to give.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from engine.core.urls import safe_url
from tui.exits import UsageError

if TYPE_CHECKING:
    from engine.mcp.servers import McpServerConfig
    from engine.sessions.config import Config


def _key(name: Any, command: Any, args: Any, url: Any) -> tuple[str, ...] | None:
    """What identifies a server: its name and its URL, or its name and its whole command line."""
    if isinstance(url, str) and url:
        return ("url", str(name), safe_url(url))  # a header records the URL without its credentials
    if not isinstance(command, str) or not isinstance(args, (list, tuple)):
        return None
    return ("stdio", str(name), command, *(str(a) for a in args))


def _shown(data: dict[str, Any]) -> str:
    """The flag that starts a recorded server again, cleaned for the terminal."""
    from engine.core.text import clean

    url = data.get("url")
    if isinstance(url, str) and url:
        return clean(f"--mcp-url {shlex.quote(safe_url(url))}")
    words = [str(data.get("command")), *(str(a) for a in data.get("args", []) if isinstance(data.get("args"), list))]
    return clean(f"--mcp {shlex.quote(shlex.join(words))}")


def vouched_servers(saved: list[dict[str, Any]], config: Config, given: list[McpServerConfig], path: str) -> list[McpServerConfig]:
    """The operator's servers that stand for the ones `saved` (a header's `mcp` list) names, in its order.

    `given`: the servers of this command's `--mcp` / `--mcp-url`; the configuration's servers
    vouch too. A recorded server nobody vouches for, or a given one the run never had,
    is a UsageError."""
    known: dict[tuple[str, ...], McpServerConfig] = {}
    for server in [*config.mcp, *given]:
        key = _key(server.name, server.command, list(server.args), server.url)
        if key is not None:
            known[key] = server
    servers: list[McpServerConfig] = []
    missing: list[str] = []
    for data in saved:
        if not isinstance(data, dict):
            raise UsageError(f"{path}: the transcript's MCP server entry cannot be read: {data!r}")
        key = _key(data.get("name"), data.get("command"), data.get("args", []), data.get("url"))
        server = known.get(key) if key is not None else None
        if server is None:
            missing.append(_shown(data))
        else:
            servers.append(server)
    if missing:
        raise UsageError(
            f"{path}: the run used MCP servers started from its own command lines; a saved run never chooses a "
            f"command to start: give them again to continue it ({' '.join(missing)}), or name them in your configuration"
        )
    extra = [s for s in given if s not in servers]
    if extra:
        from engine.core.text import clean

        names = ", ".join(clean(safe_url(s.url) if s.url else shlex.join([s.command or "", *s.args])) for s in extra)
        raise UsageError(f"{path}: the run had no MCP server {names}; a continued run keeps the servers it had")
    return servers
