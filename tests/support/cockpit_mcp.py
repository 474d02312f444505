"""A cockpit over a run whose tools come from MCP servers: the hub started, the header's text read."""

from __future__ import annotations

from pathlib import Path

from engine.core.policy import Policy
from engine.core.scenario import Task
from engine.mcp import McpHub, hub_tools
from engine.sessions.run import Run, new_run
from scenarios.mcp import SCENARIO as MCP
from tests.support.mcp_helpers import notes_server
from tui.app import CockpitApp
from tui.widgets.header import RunHeader

SIZE = (120, 40)


def start_hub(tmp_path: Path, *extra: str, timeout: float = 20.0) -> McpHub:
    hub = McpHub([notes_server("notes", *extra, timeout=timeout)], tmp_path / "logs")
    hub.start()
    return hub


def mcp_run(tmp_path: Path, hub: McpHub, policy: Policy | str, task: str = "work on the notes", **kw) -> Run:
    run = new_run(
        MCP,
        policy=policy,
        task=Task("custom", task),
        extra_tools=hub_tools(hub),
        mcp=hub.public(),
        out=tmp_path / "run.jsonl",
        interactive=True,
        **kw,
    )
    run.mcp = hub
    run.closers.append(hub.close)
    return run


def header_text(app: CockpitApp) -> str:
    return str(app.query_one(RunHeader).render())
