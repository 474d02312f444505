"""agent-tui's engine: events, tools, policies, approvals, budgets, transcripts.

Pure Python and pydantic; it imports neither textual nor rich.
"""

from engine.engine import Engine, EngineError
from engine.events import Action, Budget, Header, RuleInfo, Usage
from engine.policy import Decision, HumanPolicy, Policy, PolicyError, RunView, ScriptedPolicy
from engine.scenario import Scenario, Task
from engine.tools import Param, Tool, ToolError

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
