"""agent-tui's engine: events, tools, policies, approvals, budgets, transcripts.

Pure Python and pydantic; it imports neither textual nor rich.
"""

from engine import _moved
from engine.core.engine import Engine, EngineError
from engine.core.events import Action, Budget, Header, RuleInfo, Usage
from engine.core.policy import Decision, HumanPolicy, Policy, PolicyError, RunView, ScriptedPolicy
from engine.core.scenario import Scenario, Task
from engine.core.tools import Param, Tool, ToolError

_moved.install()

__all__ = [
    "Action",
    "Budget",
    "Decision",
    "Engine",
    "EngineError",
    "Header",
    "HumanPolicy",
    "Param",
    "Policy",
    "PolicyError",
    "RuleInfo",
    "RunView",
    "Scenario",
    "ScriptedPolicy",
    "Task",
    "Tool",
    "ToolError",
    "Usage",
]
