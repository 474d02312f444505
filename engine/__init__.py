"""agent-tui's engine: events, tools, policies, approvals, budgets, transcripts.

Pure Python and pydantic; it imports neither textual nor rich. The names below
are the public API (`from engine import Tool, ...`, what scenario files import);
each is imported from its module on first use (PEP 562), so that a command
reading a transcript never builds the engine it does not run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.core.lazy import lazy_names

if TYPE_CHECKING:
    from engine.core.answers import Answer
    from engine.core.engine import Engine
    from engine.core.operator import EngineError
    from engine.core.events import Action, Budget, Header, RuleInfo, Usage
    from engine.core.policy import Decision, HumanPolicy, Policy, PolicyError, RunView, ScriptedPolicy
    from engine.core.scenario import Scenario, Task
    from engine.core.tools import Param, Tool, ToolError

_HOMES = {
    "Action": "engine.core.events",
    "Answer": "engine.core.answers",
    "Budget": "engine.core.events",
    "Decision": "engine.core.policy",
    "Engine": "engine.core.engine",
    "EngineError": "engine.core.operator",
    "Header": "engine.core.events",
    "HumanPolicy": "engine.core.policy",
    "Param": "engine.core.tools",
    "Policy": "engine.core.policy",
    "PolicyError": "engine.core.policy",
    "RuleInfo": "engine.core.events",
    "RunView": "engine.core.policy",
    "Scenario": "engine.core.scenario",
    "ScriptedPolicy": "engine.core.policy",
    "Task": "engine.core.scenario",
    "Tool": "engine.core.tools",
    "ToolError": "engine.core.tools",
    "Usage": "engine.core.events",
}
"""Each public name and the module that defines it."""

__all__ = sorted(_HOMES)


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
