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

__all__, __getattr__, __dir__ = lazy_names(__name__, {
    "engine.core.answers": ("Answer",),
    "engine.core.engine": ("Engine",),
    "engine.core.events": ("Action", "Budget", "Header", "RuleInfo", "Usage"),
    "engine.core.operator": ("EngineError",),
    "engine.core.policy": ("Decision", "HumanPolicy", "Policy", "PolicyError", "RunView", "ScriptedPolicy"),
    "engine.core.scenario": ("Scenario", "Task"),
    "engine.core.tools": ("Param", "Tool", "ToolError"),
})
