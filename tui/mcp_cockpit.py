"""The cockpit's MCP parts: the servers' line in the header, the progress bar, the task it asks
for, and the notice at a tool fault.

`McpCockpit` is a base of `tui.app.CockpitApp`, kept in its own module so the
app calls in at a few points only: mount and unmount (the progress listener),
the end of an operation (the bar goes; a fault is shown), the header, which
actions apply (nothing runs before the task is set), and the `t` action.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Callable

from textual.app import App

from engine.core.engine import Engine
from engine.core.state import RunState
from engine.core.text import clean
from engine.sessions.run import Run
from tui.screens.ask import AskScreen
from tui.widgets.mcp_progress import CallProgress
from tui.widgets.transcript import Prefix, TranscriptPane

if TYPE_CHECKING:
    from engine.core.tools import Progress

FAULT_TITLE = "A tool server failed: n goes on, p swaps, x aborts"
TOOL_NAMES_SHOWN = 200


class McpCockpit(App[None]):
    """What the cockpit does for a run of MCP tools; the app sets these attributes."""

    run_: Run
    engine: Engine
    seen: int
    view_state: RunState
    fault: str | None
    progress_listeners: tuple[Callable[[Progress], None], ...] = ()

    @property
    def pane(self) -> TranscriptPane:
        return self.query_one("#transcript", TranscriptPane)

    def refresh_view(self) -> None:
        """Draw the header and panels again (the app's)."""

    @cached_property
    def servers_line(self) -> str:
        """`mcp: notes log: PATH · web http://...`, or "" for a run without MCP servers."""
        hub = self.run_.mcp
        servers = hub.public() if hub is not None else list(self.engine.header.mcp)
        if not servers:
            return ""
        parts = []
        for server in servers:
            where = f"log: {server['log']}" if server.get("log") else str(server.get("url") or "")
            parts.append(f"{server.get('name')} {where}".strip())
        return clean("mcp: " + " · ".join(parts))

    @property
    def needs_task(self) -> bool:
        """A run of MCP tools started without a task, before its first event."""
        return not self.header.task_text.strip() and self.seen == 0

    def mcp_mount(self) -> None:
        hub = self.run_.mcp
        if hub is not None:
            self.progress_listeners = tuple(bar.listen for bar in self.query(CallProgress))
            hub.progress_listeners.extend(self.progress_listeners)
        if self.needs_task:
            self.call_after_refresh(self.action_set_task)

    def mcp_unmount(self) -> None:
        hub = self.run_.mcp
        for listener in self.progress_listeners:
            if hub is not None and listener in hub.progress_listeners:
                hub.progress_listeners.remove(listener)
        self.progress_listeners = ()

    def action_set_task(self) -> None:
        """Ask the operator for the run's task; the transcript's header is written again with it."""
        if not self.needs_task or len(self.screen_stack) > 1:
            return
        names = clean(", ".join(sorted(self.engine.tools)))
        if len(names) > TOOL_NAMES_SHOWN:
            names = names[: TOOL_NAMES_SHOWN - 1] + "…"
        prompt = f"What should the agent do? (tools: {names})"
        self.push_screen(AskScreen(prompt, check=lambda v: None if v.strip() else "the task is empty"), self._task_given)

    def _task_given(self, text: str | None) -> None:
        if not text:
            self.notify("The run has no task yet: t sets it.", severity="warning", markup=False)
            return
        try:
            self.run_.set_task(text)
        except (ValueError, OSError) as exc:
            self.notify(clean(str(exc)), title="The task was not set", severity="error", markup=False)
            return
        self.view_state = RunState.start(self.engine.header)
        self.pane.reset(self.engine.header, Prefix(self.engine.events, self.seen))
        self.refresh_view()

    def show_fault(self) -> bool:
        """After an operation: say why a tool server failed (it died, hung or sent garbage); the
        run paused there. False when there was no fault."""
        fault = self.fault
        if not fault:
            return False
        self.notify(clean(fault), title=FAULT_TITLE, severity="error", timeout=10, markup=False)
        return True

    def clear_progress(self) -> None:
        for progress in self.query(CallProgress):
            progress.clear()
