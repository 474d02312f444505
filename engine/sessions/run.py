"""Setting up a run from a scenario: world, tools, policy, header, transcript."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from engine.core.approvals import rule_warnings
from engine.core.edits import EDIT_TOOLS, EditTool
from engine.core.engine import ApproveMode, Engine, Listener
from engine.core.events import Budget, Header, RuleInfo
from engine.core.policy import HumanPolicy, Policy
from engine.core.scenario import Scenario, Task, World
from engine.sessions.folders import user_data_dir
from engine.sessions.policies import model_of, resolve_policy
from engine.sessions.build import build_engine
from engine.sessions.seals import Sealer, key_or_problem, sealed_run
from engine.core.tools import Tool
from engine.stored.transcript import TranscriptWriter

if TYPE_CHECKING:
    from engine.mcp.hub import McpHub
    from engine.model.policy import ModelConfig


def default_transcript_dir() -> Path:
    """The per-user folder for transcripts: `runs` in the data folder ($AGENT_TUI_HOME, else XDG data home)."""
    return user_data_dir() / "runs"


def default_transcript_path(scenario: str, task: str, now: float | None = None) -> Path:
    """A new file's name in the transcript folder: the time to the second, the scenario,
    the task and the process; a second run of the process within that second (a fork
    from the viewer, say) gets `-2`, `-3`... instead of a name already taken."""
    stamp = datetime.fromtimestamp(now if now is not None else time.time(), tz=timezone.utc)
    safe_task = "".join(c if c.isalnum() or c in "-_" else "-" for c in task)[:40]
    stem = f"{stamp:%Y%m%d-%H%M%S}-{scenario}-{safe_task}-{os.getpid()}"
    return free_path(default_transcript_dir(), stem)[0]


def free_path(folder: Path, stem: str, suffix: str = ".jsonl", start: int = 1) -> tuple[Path, int]:
    """The first of `stem` (number 1), `stem-2`, `stem-3`... from number `start` that names
    nothing in `folder` (no file, no link, not even a dangling one), and its number."""
    n = start
    path = folder / (f"{stem}{suffix}" if n <= 1 else f"{stem}-{n}{suffix}")
    while os.path.lexists(path):
        n += 1
        path = folder / f"{stem}-{n}{suffix}"
    return path, n


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
    named: dict[str, ModelConfig] = field(default_factory=dict)
    """Model policies by name (the configuration file's [[policy]] tables)."""
    mcp: McpHub | None = None
    """The run's MCP servers, when it has any."""
    closers: list[Callable[[], None]] = field(default_factory=list)
    """Called by `close` after the transcript is closed (MCP servers stop there)."""
    edit_tools: tuple[EditTool, ...] = EDIT_TOOLS
    """Which tools edit files (their approval shows a diff): the configuration's rows, then the built-in ones."""

    def policy_names(self) -> list[str]:
        """What `make_policy` accepts: the scenario's policies, "human", "model" when one is
        given by flags, and the configured model policies."""
        names = [*self.scenario.policies, "human", *(["model"] if self.model is not None else [])]
        return [*names, *(n for n in self.named if n not in names)]

    def make_policy(self, name: str) -> Policy:
        """A fresh policy by name (`engine.sessions.policies.resolve_policy`); a model policy
        is priced at its own prices."""
        policy = resolve_policy(name, self.scenario, self.world, self.task, self.human, model=self.model, named=self.named)
        endpoint = model_of(name, self.scenario, self.model, self.named)
        return policy if endpoint is None else priced(self.engine, policy, endpoint[0])

    def set_task(self, text: str) -> None:
        """Give a run that has no task yet (MCP tools only) the operator's task, before its first event."""
        from engine.core.state import RunState

        text = text.strip()
        if not text:
            raise ValueError("the task is empty")
        if len(self.engine.events):
            raise ValueError("the run has started; its task cannot change")
        header = self.engine.header.model_copy(update={"task_text": text, "seal": None})
        if self.writer is not None:
            key, _problem = key_or_problem()  # said when the run opened
            header, self.engine.seal_approval = sealed_run(key, header)
            self.writer.rewrite_header(header)
        self.task = Task(self.task.id, text)
        self.engine.header = header
        self.engine.state = RunState.start(header)

    def close(self) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
                self.path = self.writer.path  # a recovery file, if the transcript was deleted or replaced
        finally:
            closers, self.closers = self.closers, []
            for close in reversed(closers):
                close()


def priced(engine: Engine, policy: Policy, model: ModelConfig) -> Policy:
    """Record the model's prices on the engine under the policy's name, and return the policy."""
    if model.prices is not None:
        engine.prices[policy.name] = model.prices
    return policy


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
    named: dict[str, ModelConfig] | None = None,
    task: Task | None = None,
    extra_tools: Sequence[Tool] = (),
    mcp: Sequence[dict[str, Any]] = (),
) -> Run:
    """`model` makes the policy "model" available and puts its prices in the budget;
    `named` adds model policies by name. `task` overrides `task_id` (a task the operator
    wrote); `extra_tools` join the world's (MCP servers' tools, described by `mcp`)."""
    task = task or scenario.task(task_id)
    merged = {**scenario.options, **(options or {})}
    world = scenario.make_world(task, merged)
    clash = sorted({t.name for t in world.tools} & {t.name for t in extra_tools})
    if clash:
        raise ValueError(f"MCP tools clash with the scenario's tools: {', '.join(clash)}")
    human = HumanPolicy()
    named = dict(named or {})
    if policy is None:
        policy = scenario.default_policy
    policy_obj = resolve_policy(policy, scenario, world, task, human, model=model, named=named)
    threshold = scenario.repetition_threshold if repetition_threshold == "default" else repetition_threshold
    header = Header(
        scenario=scenario.name,
        task=task.id,
        task_text=task.text,
        options=merged,
        tools=[t.info() for t in [*world.tools, *extra_tools]],
        budget=model.with_prices(budget or scenario.budget) if model is not None else (budget or scenario.budget),
        rules=[*scenario.rules, *rules],
        policy=policy_obj.name,
        repetition_threshold=threshold,  # type: ignore[arg-type]
        started_at=clock(),
        mcp=list(mcp),
    )
    warnings = rule_warnings(header.rules, [*world.tools, *extra_tools])
    sealer: Sealer | None = None
    path: Path | None = None
    writer: TranscriptWriter | None = None
    if save:
        key, problem = key_or_problem()
        if key is None:
            warnings.append(f"{problem}: this run's approval rules will not be believed when it is resumed or forked")
        header, sealer = sealed_run(key, header)
        path = Path(out) if out is not None else default_transcript_path(scenario.name, task.id, header.started_at)
        writer = TranscriptWriter(path, header)
    engine = build_engine(
        header, [*world.tools, *extra_tools], policy_obj, writer=writer, sealer=sealer, listeners=listeners, clock=clock,
        interactive=interactive, approve=approve,
    )
    for config in [*([model] if model is not None else []), *named.values()]:
        if config.prices is not None:
            engine.prices[named_of(config, named)] = config.prices
    return Run(
        scenario=scenario, task=task, world=world, engine=engine, path=path, writer=writer, human=human, model=model, named=named,
        warnings=warnings,
    )


def named_of(config: ModelConfig, named: dict[str, ModelConfig]) -> str:
    """The policy name a model config goes by: its configured name, else `model:<model>`."""
    return next((n for n, c in named.items() if c is config), config.policy_name)
