"""The grid world (seed 000): react, remember or plan on an N x N grid with walls.

The agent starts in the top-left corner and must reach the bottom-right one.
`look` reports the free neighbours; `move` takes one step and reports the new
cell and its free neighbours, so a policy needs one decision per move. Three
policies: reactive (no memory, goes to the free neighbour closest to the goal),
memory (remembers the cells it has seen and backtracks depth-first) and planner
(knows the whole map, follows a shortest path).

The grid of a run is the `task`-th grid drawn one after another from
`random.Random(seed)`, the way the seed's experiment draws its 200 grids; the
header's options (size, density, seed) and task id rebuild it, and the move
observations rebuild the path (`positions`), so a replay can draw the map.
The map maths (generation, BFS, Dijkstra, the bare loop) lives in
`scenarios.grid_maps`; the experiment through the engine is a benchmark,
bench/grid_experiment.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable, Iterator, Sequence

from engine import Budget, Decision, Header, Param, RunView, Scenario, Task, Tool, ToolError
from engine.core.scenario import MapPicture
from scenarios.grid_maps import (
    DENSITY, DIRECTIONS, GRIDS, LIMIT, MAX_SIZE, NAME_OF, SEED, SIZE, Cell, Walls,
    bfs, bfs_path, dijkstra, goal_of, grid_at, manhattan, neighbours,
)


_AT = re.compile(r"\bat \((\d+), (\d+)\)")


def describe(p: Cell, walls: Walls, size: int) -> str:
    """`at (r, c); free: right, down` plus a note at the goal: what look and move report."""
    free = [NAME_OF[(q[0] - p[0], q[1] - p[1])] for q in neighbours(p, walls, size)]
    text = f"at ({p[0]}, {p[1]}); free: {', '.join(free) if free else 'none'}"
    return text + "; this is the goal" if p == goal_of(size) else text


def parse_free(text: str) -> list[str]:
    """The free directions a look or move observation lists."""
    _, _, rest = text.partition("free: ")
    names = rest.split(";")[0].strip()
    return [] if names in ("", "none") else [n.strip() for n in names.split(",")]


def parse_cell(text: str) -> Cell | None:
    match = _AT.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _observations(history: Iterable[Any]) -> Iterator[Any]:
    """Observations from steps, observation views or transcript events (others skipped)."""
    for item in history:
        inner = getattr(item, "observations", None)
        if inner is not None:
            yield from inner
        elif getattr(item, "type", "observation") == "observation":
            yield item


def positions(history: Iterable[Any]) -> list[Cell]:
    """The cells the agent stood on, in order, from the start.

    `history` is a run's steps (`RunView.history`), its observation views, or
    a transcript's events (replay to event k: `positions(events[:k])`). Every
    successful move adds the cell it reports; failed moves and looks add nothing.
    """
    cells: list[Cell] = [(0, 0)]
    for o in _observations(history):
        if o.tool == "move" and not o.error:
            cell = parse_cell(o.text)
            if cell is not None:
                cells.append(cell)
    return cells


@dataclass
class GridWorld:
    walls: Walls
    size: int
    at: Cell = (0, 0)
    tools: list[Tool] = field(init=False)

    def __post_init__(self) -> None:
        self.tools = [
            Tool("look", "The free neighbouring cells around the agent.", (), self.look, timeout=None),
            Tool(
                "move",
                "Move one cell; reports the new cell and its free neighbours.",
                (Param("direction", description="Where to go.", enum=tuple(DIRECTIONS)),),
                self.move,
                timeout=None,
            ),
        ]

    @property
    def goal(self) -> Cell:
        return goal_of(self.size)

    def look(self) -> str:
        return describe(self.at, self.walls, self.size)

    def move(self, direction: str) -> str:
        dr, dc = DIRECTIONS[direction]
        q = (self.at[0] + dr, self.at[1] + dc)
        here = f"still at ({self.at[0]}, {self.at[1]})"
        if not (0 <= q[0] < self.size and 0 <= q[1] < self.size):
            raise ToolError(f"{direction} is off the grid; {here}")
        if q in self.walls:
            raise ToolError(f"a wall at ({q[0]}, {q[1]}); {here}")
        self.at = q
        return f"moved {direction}, " + describe(q, self.walls, self.size)

    def restore(self, executed: Iterable[Any]) -> None:
        """Put the agent where the recorded moves left it."""
        self.at = positions(executed)[-1]


def _number(options: dict[str, Any], key: str, default: float, kind: type[int] | type[float]) -> Any:
    """An option as a number, or a ValueError that says which and what was given (`--option size=abc`)."""
    value = options.get(key, default)
    try:
        if isinstance(value, bool):
            raise TypeError
        return kind(value)
    except (TypeError, ValueError, OverflowError):
        words = "a whole number" if kind is int else "a number"
        shown = repr(value) if isinstance(value, str) else json.dumps(value)
        raise ValueError(f"the grid {key} must be {words}, not {shown}") from None


def grid_options(options: dict[str, Any]) -> tuple[int, float, int]:
    size = _number(options, "size", SIZE, int)
    density = _number(options, "density", DENSITY, float)
    seed = _number(options, "seed", SEED, int)
    if not 2 <= size <= MAX_SIZE:
        raise ValueError(f"the grid size must be 2 to {MAX_SIZE}")
    if not 0.0 <= density < 1.0:
        raise ValueError("the wall density must be in [0, 1)")
    return size, density, seed


def walls_for(task_id: str, options: dict[str, Any]) -> tuple[Walls, int]:
    """The walls and size of a run from its task id and header options."""
    size, density, seed = grid_options(options)
    return grid_at(int(task_id), seed, size, density), size


def _make_world(task: Task, options: dict[str, Any]) -> GridWorld:
    walls, size = walls_for(task.id, options)
    return GridWorld(walls, size)


def _make_task(task_id: str) -> Task:
    try:
        index = int(task_id)
    except ValueError:
        raise KeyError(f"grid tasks are grid numbers 0, 1, 2, ...; not '{task_id}'") from None
    if not 0 <= index < GRIDS:
        raise KeyError(f"grid numbers are 0 to {GRIDS - 1}")
    return Task(
        str(index),
        f"Walk from the top-left corner to the bottom-right corner of grid {index}.",
        description=f"grid {index} of the sequence drawn from the seed option",
    )


# -- policies -------------------------------------------------------------------


def _step_towards(p: Cell, q: Cell) -> str:
    return NAME_OF[(q[0] - p[0], q[1] - p[1])]


def _last_report(view: RunView) -> tuple[Cell, list[str]] | None:
    """Where the agent is and what is free, from the newest look or move."""
    for step in reversed(view.history):
        for o in reversed(step.observations):
            if o.tool in ("look", "move") and not o.error:
                cell = parse_cell(o.text)
                if cell is not None:
                    return cell, parse_free(o.text)
    return None


def _look_or_finish(view: RunView, size: int) -> Decision | tuple[Cell, list[str]]:
    """The local agents' opening: look first, answer on the goal, else (where, free directions)."""
    report = _last_report(view)
    if report is None:
        return Decision.act("I look around first.", "look")
    p = report[0]
    if p == goal_of(size):
        return Decision.final("I am on the goal.", f"reached the goal at ({p[0]}, {p[1]})")
    return report


def _closest(p: Cell, directions: list[str], size: int) -> str:
    """The direction whose cell is closest to the goal (the first of equals, as `min` keeps)."""
    return min(directions, key=lambda d: manhattan((p[0] + DIRECTIONS[d][0], p[1] + DIRECTIONS[d][1]), size))


class Reactive:
    """Sees only the free neighbours, remembers nothing: picks the one closest to the goal.

    With no free neighbour it stays where it is and looks again.
    """

    name = "reactive"

    def __init__(self, size: int) -> None:
        self.size = size

    def decide(self, view: RunView) -> Decision:
        where = _look_or_finish(view, self.size)
        if isinstance(where, Decision):
            return where
        p, free = where
        if not free:
            return Decision.act("Nothing is free; I stay and look again.", "look")
        best = _closest(p, free, self.size)
        return Decision.act(f"{best} is the free neighbour closest to the goal.", "move", direction=best)


class Memory:
    """The same local view, plus the cells it has seen: depth-first with backtracking.

    Its memory (the seen cells and the way back) is a fold over the positions
    the move observations report, so it also works after a swap, a fork or a
    resume; only the steps added since the last decision are folded in.
    """

    name = "memory"

    def __init__(self, size: int) -> None:
        self.size = size
        self._folded_steps = 0
        self._seen: set[Cell] = set()
        self._stack: list[Cell] = []

    def _fold(self, cell: Cell) -> None:
        if len(self._stack) > 1 and self._stack[-2] == cell:
            self._stack.pop()
        else:
            self._seen.add(cell)
            self._stack.append(cell)

    def _remember(self, view: RunView) -> None:
        history = view.history
        if self._folded_steps > len(history) or not self._stack:
            self._folded_steps, self._seen, self._stack = 0, set(), []
            self._fold((0, 0))
        for cell in positions(history[self._folded_steps :])[1:]:
            self._fold(cell)
        self._folded_steps = len(history)

    def decide(self, view: RunView) -> Decision:
        where = _look_or_finish(view, self.size)
        if isinstance(where, Decision):
            return where
        p, free = where
        self._remember(view)
        fresh = [d for d in free if (p[0] + DIRECTIONS[d][0], p[1] + DIRECTIONS[d][1]) not in self._seen]
        if fresh:
            best = _closest(p, fresh, self.size)
            return Decision.act(f"{best} leads to a cell I have not seen, closest to the goal.", "move", direction=best)
        if len(self._stack) < 2:
            return Decision.final("Every cell I can reach is seen; the goal is not among them.", "the goal is unreachable")
        back = self._stack[-2]
        return Decision.act("A dead end: I go back the way I came.", "move", direction=_step_towards(p, back))


class Planner:
    """Knows the whole map and follows a shortest path found by BFS.

    Swapped in mid-run (or pushed off its path), it plans again from where
    the agent stands.
    """

    name = "planner"

    def __init__(self, walls: Walls, size: int) -> None:
        self.walls = walls
        self.size = size
        self.path = bfs_path(walls, size)

    def decide(self, view: RunView) -> Decision:
        report = _last_report(view)
        p = report[0] if report else (0, 0)
        if p == goal_of(self.size):
            return Decision.final("I am on the goal.", f"reached the goal at ({p[0]}, {p[1]})")
        if self.path is None or p not in self.path[:-1]:
            self.path = bfs_path(self.walls, self.size, start=p)
        if self.path is None:
            return Decision.final("The map has no path to the goal from here.", "the goal is unreachable")
        nxt = self.path[self.path.index(p) + 1]
        return Decision.act(f"The shortest path goes {_step_towards(p, nxt)}.", "move", direction=_step_towards(p, nxt))


# -- scoring (used by `agent-tui bench`) ----------------------------------------


def bench_score(task: Task, options: dict[str, Any], history: list[Any], outcome: str) -> dict[str, Any]:
    """Success, steps and the optimum of one grid run, for `agent-tui bench`.

    Steps are the agent's actions except its first look (the seed's agents
    start knowing their neighbours); success is an answer given on the goal.
    """
    size, density, seed = grid_options(options)
    optimum, agrees = _optimum(int(task.id), seed, size, density)
    cells = positions(history)
    actions = sum(len(s.actions) for s in history)
    looked_first = bool(history) and bool(history[0].actions) and history[0].actions[0].tool == "look"
    return {
        "success": outcome == "answer" and cells[-1] == goal_of(size),
        "steps": actions - (1 if looked_first else 0),
        "optimum": optimum,
        "checks": {"BFS and Dijkstra agree": agrees},
    }


@lru_cache(maxsize=4096)
def _optimum(index: int, seed: int, size: int, density: float) -> tuple[int | None, bool]:
    walls = grid_at(index, seed, size, density)
    optimum = bfs(walls, size)
    return optimum, dijkstra(walls, size) == optimum


def map_of(header: Header) -> Callable[[Sequence[Any], str], MapPicture]:
    """The scenario's map hook: the grid of a run, drawn after the steps of a history.

    ValueError, KeyError or TypeError when the header names no grid this
    scenario can rebuild."""
    walls, size = walls_for(header.task, header.options)
    goal = goal_of(size)

    def picture(history: Sequence[Any], policy: str) -> MapPicture:
        cells = positions(history)
        at = cells[-1]
        path = (bfs_path(walls, size, start=at) or []) if policy == "planner" and at != goal else []
        return MapPicture(size=size, walls=walls, goal=goal, visited=cells, path=path)

    return picture


# -- the scenario ---------------------------------------------------------------


SCENARIO = Scenario(
    name="grid",
    description="Reach the far corner of a grid with walls: react, remember or plan (seed 000).",
    tasks={"0": _make_task("0")},
    policies={
        "reactive": lambda world, task: Reactive(world.size),
        "memory": lambda world, task: Memory(world.size),
        "planner": lambda world, task: Planner(world.walls, world.size),
    },
    make_world=_make_world,
    budget=Budget(max_steps=LIMIT + 1),
    options={"size": SIZE, "density": DENSITY, "seed": SEED},
    repetition_threshold=None,
    make_task=_make_task,
    score=bench_score,
    map=map_of,
)
"""One look plus up to 200 moves: the seed's limit; a stuck reactive agent
oscillates until then, so the repetition brake is off."""
