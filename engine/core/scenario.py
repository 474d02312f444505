"""What a scenario provides: tools over a world, tasks, scripted policies, defaults.

A scenario module defines one `SCENARIO = Scenario(...)`. Its `make_world`
builds a fresh world for each run, so runs never share state; policies are
made per run too, from the world and the task (a planner may need the map).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from engine.core.events import Budget, Header, Observed, RuleInfo
from engine.core.policy import Policy
from engine.core.tools import Tool


@dataclass(frozen=True)
class Task:
    """One task of a scenario: `id` names it (`-t ID`), `text` is what the policy is asked,
    `expected` the answer a benchmark's default score looks for in the run's answer (None: any
    answer), `description` a note for the people who read the scenario (the policy never sees it)."""

    id: str
    text: str
    expected: str | None = None
    description: str = ""


class World(Protocol):
    """A scenario's live state and the tools that act on it."""

    tools: Sequence[Tool]


@runtime_checkable
class Restorable(Protocol):
    """A world that can be rebuilt from a stored run (optional: without it, resume and fork start a fresh world)."""

    def restore(self, executed: Sequence[Observed]) -> None:
        """Rebuild the world's state from tool executions recorded in a transcript
        (fork and resume), without running any tool."""


PolicyMaker = Callable[[World, Task], Policy]

Cell = tuple[int, int]


@dataclass(frozen=True)
class MapPicture:
    """A square grid the cockpit draws beside the transcript: walls, the goal, the
    cells the agent visited in order (the last is where it is) and a planned path."""

    size: int
    walls: frozenset[Cell]
    goal: Cell
    visited: Sequence[Cell]
    path: Sequence[Cell] = ()


MapHook = Callable[[Header], Callable[[Sequence[Any], str], MapPicture]]
"""`map(header)` -> a function of (history, policy name) giving the map after those
steps (history: RunState/RunView steps); ValueError, KeyError or TypeError when
this run has no map. The live cockpit and the replay viewer both draw it."""

ScoreHook = Callable[[Task, dict[str, Any], list[Any], str], dict[str, Any]]
"""`score(task, options, history, outcome)` -> {"success", "steps", "optimum", "checks"}
for `agent-tui bench`; without it a run succeeds when its answer holds the task's
expected text."""


@dataclass
class Scenario:
    name: str
    description: str
    tasks: dict[str, Task]
    policies: dict[str, PolicyMaker]
    make_world: Callable[[Task, dict[str, Any]], World]
    budget: Budget = field(default_factory=lambda: Budget(max_steps=6))
    rules: list[RuleInfo] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    repetition_threshold: int | None = 2
    make_task: Callable[[str], Task] | None = None
    score: ScoreHook | None = None
    map: MapHook | None = None

    @property
    def default_task(self) -> str:
        return next(iter(self.tasks))

    @property
    def default_policy(self) -> str:
        return next(iter(self.policies))

    def task(self, task_id: str | None) -> Task:
        """Look a task up by id; a scenario with `make_task` also accepts other ids
        (a grid seed, say) or free text."""
        if task_id is None:
            return self.tasks[self.default_task]
        if task_id in self.tasks:
            return self.tasks[task_id]
        if self.make_task is not None:
            return self.make_task(task_id)
        raise KeyError(f"scenario '{self.name}' has no task '{task_id}' (tasks: {', '.join(self.tasks)})")

    def policy(self, name: str, world: World, task: Task) -> Policy:
        if name not in self.policies:
            raise KeyError(
                f"scenario '{self.name}' has no policy '{name}' (policies: {', '.join(self.policies)})"
            )
        return self.policies[name](world, task)
