"""Setting up a run from a scenario: world, tools, policy, header, transcript."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from engine.core.engine import ApproveMode, Engine, Listener
from engine.core.events import Budget, Header, RuleInfo
from engine.core.policy import HumanPolicy, Policy
from engine.core.scenario import Scenario, Task, World
from engine.sessions.policies import make_policy
from engine.stored.transcript import TranscriptWriter

if TYPE_CHECKING:
    from engine.model.policy import ModelConfig


def default_transcript_dir() -> Path:
    """The per-user data folder for transcripts ($AGENT_TUI_HOME, else XDG data home)."""
    home = os.environ.get("AGENT_TUI_HOME")
    if home:
        return Path(home) / "runs"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agent-tui" / "runs"


def default_transcript_path(scenario: str, task: str, now: float | None = None) -> Path:
    stamp = datetime.fromtimestamp(now if now is not None else time.time(), tz=timezone.utc)
    safe_task = "".join(c if c.isalnum() or c in "-_" else "-" for c in task)[:40]
    name = f"{stamp:%Y%m%d-%H%M%S}-{scenario}-{safe_task}-{os.getpid()}.jsonl"
    return default_transcript_dir() / name


@dataclass
class Run:
    """A live run: the engine, the world its tools act on, and where it is saved."""

    scenario: Scenario
    task: Task
    world: World
    engine: Engine
    path: Path | None
    writer: TranscriptWriter | None
    human: HumanPolicy = field(default_factory=HumanPolicy)
    model: ModelConfig | None = None
    warnings: list[str] = field(default_factory=list)
    """What the operator should know before going on (a resumed or forked world that starts fresh)."""

    def policy_names(self) -> list[str]:
        """What `make_policy` accepts: the scenario's policies, "human", and "model" when one is configured."""
        return [*self.scenario.policies, "human", *(["model"] if self.model is not None else [])]

    def make_policy(self, name: str) -> Policy:
        """A fresh policy by name ("human" is the operator, "model" the configured endpoint)."""
        return make_policy(name, self.scenario, self.world, self.task, self.human, self.model)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def new_run(
    scenario: Scenario,
    task_id: str | None = None,
    policy: str | Policy | None = None,
    *,
    options: dict[str, Any] | None = None,
    budget: Budget | None = None,
    rules: Sequence[RuleInfo] = (),
    repetition_threshold: int | None | str = "default",
    out: str | Path | None = None,
    save: bool = True,
    clock: Callable[[], float] = time.time,
    interactive: bool = False,
    approve: ApproveMode = "ask",
    listeners: Sequence[Listener] = (),
    model: ModelConfig | None = None,
) -> Run:
    """`model` makes the policy "model" available and puts its prices in the budget."""
    task = scenario.task(task_id)
    merged = {**scenario.options, **(options or {})}
    world = scenario.make_world(task, merged)
    human = HumanPolicy()
    if policy is None:
        policy = scenario.default_policy
    policy_obj = make_policy(policy, scenario, world, task, human, model)
    threshold = scenario.repetition_threshold if repetition_threshold == "default" else repetition_threshold
    header = Header(
        scenario=scenario.name,
        task=task.id,
        task_text=task.text,
        options=merged,
        tools=[t.info() for t in world.tools],
        budget=model.with_prices(budget or scenario.budget) if model is not None else (budget or scenario.budget),
        rules=[*scenario.rules, *rules],
        policy=policy_obj.name,
        repetition_threshold=threshold,  # type: ignore[arg-type]
        started_at=clock(),
    )
    path: Path | None = None
    writer: TranscriptWriter | None = None
    if save:
        path = Path(out) if out is not None else default_transcript_path(scenario.name, task.id, header.started_at)
        writer = TranscriptWriter(path, header)
    engine = Engine(
        header,
        world.tools,
        policy_obj,
        listeners=listeners,
        clock=clock,
        interactive=interactive,
        approve=approve,
        sink=writer,
    )
    return Run(scenario=scenario, task=task, world=world, engine=engine, path=path, writer=writer, human=human, model=model)
