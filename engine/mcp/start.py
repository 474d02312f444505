"""Starting a run's MCP servers: the hub, their tools, and the guard that stops them when
agent-tui ends without closing its run."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

from engine.core.tools import Tool
from engine.mcp.hub import McpHub, McpStartError, kill_all
from engine.mcp.servers import McpServerConfig
from engine.mcp.tools import hub_tools


def start_servers(
    servers: Sequence[McpServerConfig], logs: Path, taken: Iterable[str] = (), withheld: Iterable[str] = ()
) -> tuple[McpHub | None, list[Tool]]:
    """Start the MCP servers, their logs in `logs`: (hub, tools), or (None, []) with none.
    McpStartError (every server stopped) when one cannot start or two tools share a name.
    `taken`: tool names already in use; `withheld`: the environment variables of the
    configuration's keys, which no server inherits."""
    if not servers:
        return None, []
    hub = McpHub(list(servers), logs, list(withheld))
    guard_servers()
    try:
        hub.start()
        tools = hub_tools(hub, taken)
    except McpStartError:
        hub.close()
        raise
    return hub, tools


_guarded = False


def guard_servers() -> None:
    """Stop the MCP servers when agent-tui ends without closing its run: on SIGTERM (then die of
    it, as before) and at exit. A SIGKILL is covered by the guard each server starts under."""
    global _guarded
    if _guarded:
        return
    _guarded = True
    import atexit
    import os
    import signal
    import threading

    atexit.register(kill_all)
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: Any) -> None:
        kill_all()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)
