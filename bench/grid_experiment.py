"""Seed 000's grid experiment: wall time through the engine next to the bare loop.

    python bench/grid_experiment.py [--grids 200] [--seed 7] [--repeat 3]

Runs the 200-grid experiment three ways in the same process and prints the
figures and the best wall time of each: the bare loop (pure functions, no
engine), every run through the engine in this process, and every run through
the engine over `agent-tui bench`'s process pool. The goal is under 2 s for the
engine on a 2-core machine; the ratio says what the engine costs per step.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.core.events import RunEnded  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from scenarios import grid, grid_maps  # noqa: E402
from scenarios.grid_maps import DENSITY, SEED, SIZE, Experiment, bare_experiment, bfs, dijkstra, grid_at, summarise  # noqa: E402
from tui import bench  # noqa: E402
from bench.options import at_least  # noqa: E402

GOAL_SECONDS = 2.0


def fresh() -> None:
    """Forget the memoised grids and optima so every timing draws them again."""
    grid_maps._sequence.cache_clear()
    grid._optimum.cache_clear()


def engine_runs(
    grids: int = 200, seed: int = SEED, size: int = SIZE, density: float = DENSITY
) -> tuple[Experiment, dict[str, list[RunEnded]]]:
    """Seed 000's experiment with the grid scenario's policies, every run through the
    engine in this process: its figures, and how each policy's runs ended."""
    options = {"size": size, "density": density, "seed": seed}
    outcomes: dict[str, list[int | None]] = {}
    ends: dict[str, list[RunEnded]] = {}
    for policy in ("reactive", "memory", "planner"):
        outcomes[policy], ends[policy] = [], []
        for index in range(grids):
            run = new_run(grid.SCENARIO, str(index), policy, options=options, save=False)
            run.engine.run()
            state = run.engine.state
            assert state.ended is not None
            score = grid.bench_score(run.task, options, state.history, state.ended.outcome)
            outcomes[policy].append(score["steps"] if score["success"] else None)
            ends[policy].append(state.ended)
    sample = [grid_at(i, seed, size, density) for i in range(grids)]
    optimal = [bfs(w, size) for w in sample]
    return summarise(outcomes, optimal, [dijkstra(w, size) for w in sample]), ends  # type: ignore[arg-type]


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        fresh()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def pooled(grids: int, seed: int, workers: int) -> dict[str, tuple[int, int, float | None, float | None]]:
    args = argparse.Namespace(
        scenarios=["grid"], policies=None, tasks=None, grids=grids, seed=seed, size=None, density=None,
        option=[], approve="none", workers=workers,
    )
    jobs, plans = bench.plan(args)
    summary, _ = bench.summarise(bench.execute(jobs, workers), plans)
    return {s["policy"]: (s["successes"], s["runs"], s["mean_extra"], s["mean_steps"]) for s in summary}


def lines(e: Experiment) -> list[str]:
    return [
        e.reactive.line(),
        e.memory.line(),
        e.planner.line(),
        f"BFS = Dijkstra on every grid: {e.dijkstra_agrees}; no policy beats the optimum: {e.nobody_beats_optimum}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", type=at_least(1), default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=at_least(1), default=3)
    parser.add_argument("--workers", type=at_least(1), default=os.cpu_count() or 1)
    args = parser.parse_args()

    bare_s, bare = best_of(args.repeat, lambda: bare_experiment(args.grids, args.seed))
    engine_s, through = best_of(args.repeat, lambda: engine_runs(args.grids, args.seed)[0])
    pool_s, by_pool = best_of(args.repeat, lambda: pooled(args.grids, args.seed, args.workers))
    assert isinstance(bare, Experiment) and isinstance(through, Experiment)

    print(f"grid experiment: {args.grids} grids, seed {args.seed}, best of {args.repeat}, {os.cpu_count()} CPUs")
    print("bare loop:")
    for line in lines(bare):
        print("  " + line)
    print("through the engine:")
    for line in lines(through):
        print("  " + line)
    same = lines(bare) == lines(through)
    print(f"figures identical: {same}")
    print()
    print(f"bare loop                     {bare_s:7.3f} s")
    print(f"engine, one process           {engine_s:7.3f} s   ratio {engine_s / bare_s:5.1f}x")
    print(f"engine, pool of {args.workers} (bench)     {pool_s:7.3f} s   ratio {pool_s / bare_s:5.1f}x")
    verdict = "met" if min(engine_s, pool_s) < GOAL_SECONDS else "missed"
    print(f"goal under {GOAL_SECONDS:g} s through the engine: {verdict} (one process {engine_s:.2f} s, pool {pool_s:.2f} s)")
    pool_figures = by_pool  # type: ignore[assignment]
    agrees = pool_figures["reactive"][0] == through.reactive.arrived and pool_figures["memory"][0] == through.memory.arrived  # type: ignore[index]
    print(f"pool figures agree with the one-process run: {agrees}")
    return 0 if same and agrees else 1


if __name__ == "__main__":
    sys.exit(main())
