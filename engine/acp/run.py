"""An ACP run: the agent started, its session opened, and an ordinary run built around it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from engine.acp.connection import AgentProcess, AgentStartError
from engine.acp.policy import AcpPolicy
from engine.core.events import Budget
from engine.core.scenario import Scenario, Task

SCENARIO_NAME = "acp"
BUDGET = Budget(max_steps=500)
RESUME_REFUSED = ("{path}: a run of an ACP agent cannot be resumed, forked or verified: the agent's live session cannot be restored; "
                  "replay, show or export it, or start a new run with --acp")


class AcpWorld:
    """The tools an ACP run offers: those the agent asks agent-tui for, and its own calls."""

    def __init__(self, policy: AcpPolicy) -> None:
        self.tools = policy.tools

    def restore(self, executed: Any) -> None:
        """Nothing to rebuild: the agent's session is gone with its process."""


def acp_scenario(policy: AcpPolicy, task: Task) -> Scenario:
    return Scenario(
        name=SCENARIO_NAME,
        description="an Agent Client Protocol agent (--acp COMMAND or [[agent]] in the configuration)",
        tasks={task.id: task},
        policies={name: (lambda _world, _task, name=name: policy.switch(name)) for name in policy.swaps()},
        make_world=lambda _task, _options: AcpWorld(policy),
        budget=BUDGET,
        repetition_threshold=None,  # the agent runs its own loop: a read twice in a row is its business
    )


def start_agent(command: str | Sequence[str], cwd: str | Path, env: dict[str, str] | None = None,
                log_path: Path | None = None) -> AgentProcess:
    """The agent started with its session open; AgentStartError in one line when it cannot be."""
    agent = AgentProcess(command, cwd, env=env, log_path=log_path)
    agent.start()
    return agent


def new_acp_run(
    command: str | Sequence[str],
    task_text: str,
    *,
    cwd: str | Path = ".",
    env: dict[str, str] | None = None,
    name: str = "acp",
    log_path: Path | None = None,
    **run_options: Any,
) -> Any:
    """A Run whose policy is the agent of `command` working in `cwd`; the agent stops with the run (`close`).
    `run_options` go to `new_run` as they are (budget, rules, out, save, clock, interactive, approve, listeners).

    Built with `engine.sessions.run.new_run` like any other run: this is the one place an ACP
    run is put together (the run builder calls it)."""
    from engine.sessions.run import new_run

    text = task_text.strip()
    if not text:
        raise ValueError("an ACP run needs a task")
    if log_path is None:
        from engine.sessions.folders import user_data_dir

        log_path = user_data_dir() / "logs" / f"acp-{time.strftime('%Y%m%d-%H%M%S')}-{id(text):x}.log"
    agent = start_agent(command, cwd, env=env, log_path=log_path)
    policy = AcpPolicy(agent, name=name)
    try:
        task = Task("task", text)
        run = new_run(
            acp_scenario(policy, task), policy=policy, task=task,
            options={"agent": " ".join(agent.argv), "cwd": str(agent.cwd), "agent_info": agent.agent_info}, **run_options,
        )
    except BaseException:
        policy.close()
        raise
    policy.attach(run.engine)
    run.closers.append(policy.close)
    return run


__all__ = ["AgentStartError", "new_acp_run", "RESUME_REFUSED", "SCENARIO_NAME"]
