"""Your own tools: a run whose tools all come from MCP servers (`--mcp`, `--mcp-url`, [[mcp]]).

No world of its own and no scripted policies: the task is the operator's
(`--task-text`, or asked in the cockpit) and the policy a model, a
configured policy, or the operator.
"""

from __future__ import annotations

from typing import Any

from engine.core.events import Budget
from engine.core.scenario import Scenario, Task


class ToolsOnly:
    """A world with no tools of its own."""

    tools: list = []

    def restore(self, executed: Any) -> None:
        """Nothing to rebuild: the servers keep their own state."""


def _world(task: Task, options: dict[str, Any]) -> ToolsOnly:
    return ToolsOnly()


SCENARIO = Scenario(
    name="mcp",
    description="your own tools from MCP servers (--mcp, --mcp-url or [[mcp]] in the configuration) and your own task (-t)",
    tasks={},
    policies={},
    make_world=_world,
    budget=Budget(max_steps=30),
)
