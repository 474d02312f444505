"""An ACP run: the agent started, its session opened, and an ordinary run built around it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from engine.acp.connection import NO_LOAD, AgentProcess, AgentStartError
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
                log_path: Path | None = None, load: str | None = None) -> AgentProcess:
    """The agent started with its session open (the session `load`, with `session/load`);
    AgentStartError in one line when it cannot be."""
    agent = AgentProcess(command, cwd, env=env, log_path=log_path, load=load)
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
    follow_ups: Sequence[str] = (),
    **run_options: Any,
) -> Any:
    """A Run whose policy is the agent of `command` working in `cwd`; the agent stops with the run (`close`).
    `follow_ups`: the operator's next prompts, given up front, each sent when the agent ends a turn.
    `run_options` go to `new_run` as they are (budget, rules, out, save, clock, interactive, approve, listeners).

    Built with `engine.sessions.run.new_run` like any other run: this is the one place an ACP
    run is put together (the run builder calls it)."""
    from engine.sessions.run import new_run

    text = task_text.strip()
    if not text:
        raise ValueError("an ACP run needs a task")
    agent = start_agent(command, cwd, env=env, log_path=log_path or _log_path())
    policy = AcpPolicy(agent, name=name, follow_ups=follow_ups)
    try:
        task = Task("task", text)
        run = new_run(
            acp_scenario(policy, task), policy=policy, task=task,
            options={"agent": " ".join(agent.argv), "argv": agent.argv, "cwd": str(agent.cwd), "agent_info": agent.agent_info,
                     "session": agent.session_id}, **run_options,
        )
    except BaseException:
        policy.close()
        raise
    return _attached(run, policy)


def resume_acp_run(transcript: Any, *, env: dict[str, str] | None = None, log_path: Path | None = None, follow_ups: Sequence[str] = (),
                   **resume_options: Any) -> Any:
    """The saved ACP run `transcript` (not ended) continued in its own file: its agent started again
    in its folder and its session loaded (`session/load`), the next prompt asking it to go on.
    AgentStartError in one line when the file names no session or the agent does not offer
    `session/load`; `resume_options` go to `engine.sessions.resume.continue_run` (the one entry a saved
    run is continued through)."""
    import shlex

    from engine.sessions.resume import continue_run

    header = transcript.header
    options = header.options
    session = options.get("session")
    if not isinstance(session, str) or not session:
        raise AgentStartError(f"{transcript.path}: the transcript names no session of the agent (written before sessions were recorded); "
                              "its session cannot be loaded again")
    argv = options.get("argv")
    command = [str(a) for a in argv] if isinstance(argv, list) and argv else shlex.split(str(options.get("agent", "")))
    agent = start_agent(command, options.get("cwd") or ".", env=env, log_path=log_path or _log_path(), load=session)
    policy = AcpPolicy(agent, name=header.policy, follow_ups=follow_ups)
    policy.resumed()
    try:
        run = continue_run(acp_scenario(policy, Task(header.task, header.task_text)), transcript, policy, resume=True, **resume_options)
    except BaseException:
        policy.close()
        raise
    return _attached(run, policy)


def _attached(run: Any, policy: AcpPolicy) -> Any:
    policy.attach(run.engine)
    run.closers.append(policy.close)
    return run


def _log_path() -> Path:
    """Where the agent's stderr goes: the user's data folder's logs."""
    from engine.sessions.folders import user_data_dir

    return user_data_dir() / "logs" / f"acp-{time.strftime('%Y%m%d-%H%M%S')}-{time.monotonic_ns():x}.log"


__all__ = ["AgentStartError", "NO_LOAD", "new_acp_run", "resume_acp_run", "RESUME_REFUSED", "SCENARIO_NAME"]
