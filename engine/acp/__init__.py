"""The cockpit as an ACP client: an Agent Client Protocol agent (Gemini CLI, Claude Code, Codex...) as a run's policy.

`connection.py` starts the agent and speaks to it through the `acp` SDK, `served.py`
is what agent-tui serves it (permissions, files, terminals), `tools.py` the run's tools
those become, `policy.py` the agent's turns as decisions, `run.py` the run built around it.
The names below are imported when first used.
"""

from __future__ import annotations

from engine.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(__name__, {
    "engine.acp.connection": ("AgentProcess", "AgentStartError"),
    "engine.acp.policy": ("AcpPolicy",),
    "engine.acp.run": ("new_acp_run",),
})
