"""Grid maps as pure functions: seed 000's generator, BFS, Dijkstra and the bare loop.

No engine here: the seed's experiment as plain Python, which `scenarios.grid`
(the scenario), the tests and `bench/grid_experiment.py` build on.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator

Cell = tuple[int, int]
Walls = frozenset[Cell]

SIZE = 8
DENSITY = 0.28
SEED = 7
LIMIT = 200
"""The seed's step limit for the reactive and memory agents (moves)."""
MAX_SIZE = 100
"""The largest side: one draw costs size x size random numbers and a search."""
MAX_DRAWS = 1000
"""Draws of one grid before a density that leaves no path is refused."""
GRIDS = 10_000
"""Grid numbers are 0..GRIDS-1: the N-th grid is drawn after the N before it."""

MOVES: tuple[Cell, ...] = ((0, 1), (1, 0), (0, -1), (-1, 0))
"""The seed's fixed order: right, down, left, up (rows grow downwards)."""
DIRECTIONS: dict[str, Cell] = {"right": (0, 1), "down": (1, 0), "left": (0, -1), "up": (-1, 0)}
NAME_OF: dict[Cell, str] = {delta: name for name, delta in DIRECTIONS.items()}


# -- the world as pure functions ------------------------------------------------


def goal_of(size: int) -> Cell:
    return (size - 1, size - 1)


def neighbours(p: Cell, walls: Walls, size: int) -> Iterator[Cell]:
    """Free cells next to `p`, in MOVES order."""
    for dr, dc in MOVES:
        q = (p[0] + dr, p[1] + dc)
        if 0 <= q[0] < size and 0 <= q[1] < size and q not in walls:
            yield q


def manhattan(p: Cell, size: int) -> int:
    return (size - 1 - p[0]) + (size - 1 - p[1])


def bfs_path(walls: Walls, size: int, start: Cell = (0, 0)) -> list[Cell] | None:
    """A shortest path from `start` to the goal (both included), or None."""
    goal = goal_of(size)
    parent: dict[Cell, Cell | None] = {start: None}
    queue = deque([start])
    while queue:
        p = queue.popleft()
        if p == goal:
            path: list[Cell] = []
            at: Cell | None = p
            while at is not None:
                path.append(at)
                at = parent[at]
            return path[::-1]
        for q in neighbours(p, walls, size):
            if q not in parent:
                parent[q] = p
                queue.append(q)
    return None


def bfs(walls: Walls, size: int) -> int | None:
    """The length (moves) of a shortest path, or None if the goal is unreachable."""
    path = bfs_path(walls, size)
    return None if path is None else len(path) - 1


def dijkstra(walls: Walls, size: int) -> int | None:
    """The same length by a second, independent method (a priority queue)."""
    start, goal = (0, 0), goal_of(size)
    heap: list[tuple[int, Cell]] = [(0, start)]
    best = {start: 0}
    while heap:
        d, p = heapq.heappop(heap)
        if p == goal:
            return d
        if d > best[p]:
            continue
        for q in neighbours(p, walls, size):
            if d + 1 < best.get(q, 1 << 30):
                best[q] = d + 1
                heapq.heappush(heap, (d + 1, q))
    return None


def make_grid(rng: random.Random, size: int = SIZE, density: float = DENSITY) -> Walls:
    """Draw grids from `rng` until one is solvable, as the seed does.

    Walls where `rng.random() < density`, scanning rows then columns; the start
    and the goal are always free.
    """
    for _ in range(MAX_DRAWS):
        walls = frozenset(
            (r, c) for r in range(size) for c in range(size) if rng.random() < density
        ) - {(0, 0), goal_of(size)}
        if bfs(walls, size) is not None:
            return walls
    raise ValueError(f"no {size}x{size} grid of wall density {density} had a path in {MAX_DRAWS} draws; lower the density")


def make_grids(count: int, seed: int = SEED, size: int = SIZE, density: float = DENSITY) -> list[Walls]:
    """`count` grids drawn one after another from one `random.Random(seed)`."""
    rng = random.Random(seed)
    return [make_grid(rng, size, density) for _ in range(count)]


@lru_cache(maxsize=64)
def _sequence(seed: int, size: int, density: float) -> tuple[random.Random, list[Walls]]:
    return random.Random(seed), []


def grid_at(index: int, seed: int = SEED, size: int = SIZE, density: float = DENSITY) -> Walls:
    """The `index`-th grid (from 0) of the sequence drawn from `random.Random(seed)`.

    The sequence is memoised per process, so asking for grids 0..199 in turn
    costs no more than drawing 200 grids once.
    """
    if not 0 <= index < GRIDS:
        raise ValueError(f"grid numbers are 0 to {GRIDS - 1}, not {index}")
    rng, drawn = _sequence(seed, size, density)
    while len(drawn) <= index:
        drawn.append(make_grid(rng, size, density))
    return drawn[index]


def render(walls: Walls, size: int, visited: Iterable[Cell] = (), at: Cell | None = None) -> list[str]:
    """The map as text rows: `#` wall, `.` free, `o` visited, `@` the agent, `G` the goal."""
    seen = set(visited)
    goal = goal_of(size)
    rows = []
    for r in range(size):
        row = []
        for c in range(size):
            p = (r, c)
            row.append(
                "@" if p == at else "#" if p in walls else "G" if p == goal else "o" if p in seen else "."
            )
        rows.append("".join(row))
    return rows


# -- the bare loop (the seed's experiment without the engine) -------------------


def bare_reactive(walls: Walls, size: int = SIZE, limit: int = LIMIT) -> int | None:
    """Moves to the goal for the memoryless agent, None if it is not there within `limit`."""
    goal = goal_of(size)
    p = (0, 0)
    for step in range(limit):
        if p == goal:
            return step
        p = min(neighbours(p, walls, size), key=lambda q: manhattan(q, size), default=p)
    return None


def bare_memory(walls: Walls, size: int = SIZE, limit: int = LIMIT) -> int | None:
    """Moves to the goal for the depth-first agent with memory, or None."""
    goal = goal_of(size)
    p, stack, seen, step = (0, 0), [(0, 0)], {(0, 0)}, 0
    while step < limit:
        if p == goal:
            return step
        fresh = sorted((q for q in neighbours(p, walls, size) if q not in seen), key=lambda q: manhattan(q, size))
        if fresh:
            p = fresh[0]
            seen.add(p)
            stack.append(p)
        else:
            stack.pop()
            if not stack:
                return None
            p = stack[-1]
        step += 1
    return None


@dataclass(frozen=True)
class PolicyFigures:
    name: str
    arrived: int
    total: int
    mean_extra: float
    mean_length: float

    def line(self) -> str:
        return (
            f"{self.name:12s} arrives in {self.arrived}/{self.total}, "
            f"mean extra steps over the optimum {self.mean_extra:.1f}, mean length {self.mean_length:.1f}"
        )


@dataclass(frozen=True)
class Experiment:
    """The seed's three figures plus the two checks."""

    reactive: PolicyFigures
    memory: PolicyFigures
    planner: PolicyFigures
    optimal: list[int]
    dijkstra_agrees: bool
    nobody_beats_optimum: bool


def figures(name: str, outcomes: list[int | None], optimal: list[int]) -> PolicyFigures:
    """Arrivals, mean extra moves over the optimum and mean length, over the successes."""
    succeeded = [(e, o) for e, o in zip(outcomes, optimal) if e is not None]
    n = len(succeeded)
    return PolicyFigures(
        name=name,
        arrived=n,
        total=len(outcomes),
        mean_extra=sum(e - o for e, o in succeeded) / n if n else 0.0,
        mean_length=sum(e for e, _ in succeeded) / n if n else 0.0,
    )


def summarise(
    outcomes: dict[str, list[int | None]], optimal: list[int], dijkstra_lengths: list[int | None]
) -> Experiment:
    beats = any(
        e is not None and e < o for results in outcomes.values() for e, o in zip(results, optimal)
    )
    return Experiment(
        reactive=figures("reactive", outcomes["reactive"], optimal),
        memory=figures("with memory", outcomes["memory"], optimal),
        planner=figures("planner", outcomes["planner"], optimal),
        optimal=optimal,
        dijkstra_agrees=optimal == dijkstra_lengths,
        nobody_beats_optimum=not beats,
    )


def bare_experiment(grids: int = 200, seed: int = SEED, size: int = SIZE, density: float = DENSITY) -> Experiment:
    """The seed's experiment as a plain loop over pure functions, no engine."""
    sample = make_grids(grids, seed, size, density)
    optimal = [bfs(w, size) for w in sample]
    outcomes = {
        "reactive": [bare_reactive(w, size) for w in sample],
        "memory": [bare_memory(w, size) for w in sample],
        "planner": list(optimal),
    }
    return summarise(outcomes, optimal, [dijkstra(w, size) for w in sample])  # type: ignore[arg-type]
