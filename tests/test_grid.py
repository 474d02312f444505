"""The grid world and seed 000's experiment, bare and through the engine."""

from __future__ import annotations

import random

import pytest

from engine import Budget, Decision, Scenario, Task
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript
from bench.grid_experiment import engine_runs
from scenarios import grid, grid_maps
from tests.support.helpers import script

# The seed's printed output, verbatim.
SEED_OUTPUT = [
    "reactive     arrives in  37/200, extra steps over the minimum (mean over the successes): 0.0",
    "with memory  arrives in 200/200, extra steps over the minimum (mean over the successes): 6.9",
    "planner: 200/200, mean length 14.1 (minimum 14 for N=8)",
]


def seed_lines(e: grid_maps.Experiment) -> list[str]:
    """The experiment's figures in the seed's print format."""
    lines = [
        f"{f.name:12s} arrives in {f.arrived:3d}/{f.total}, "
        f"extra steps over the minimum (mean over the successes): {f.mean_extra:.1f}"
        for f in (e.reactive, e.memory)
    ]
    lines.append(f"planner: {e.planner.arrived}/{e.planner.total}, mean length {e.planner.mean_length:.1f} (minimum 14 for N=8)")
    return lines


def test_bare_loop_reproduces_the_seed_figures():
    e = grid_maps.bare_experiment(200, seed=7)
    assert seed_lines(e) == SEED_OUTPUT
    assert e.dijkstra_agrees
    assert e.nobody_beats_optimum


def test_engine_run_reproduces_the_seed_figures():
    e, ends = engine_runs()
    assert seed_lines(e) == SEED_OUTPUT
    assert e.dijkstra_agrees
    assert e.nobody_beats_optimum
    # Reactive runs that never arrive use up the seed's 200 moves (plus the first look).
    failed = [end for end in ends["reactive"] if end.outcome != "answer"]
    assert len(failed) == 163
    assert all(end.reason == "steps budget reached: 201 of 201" for end in failed)
    assert all(end.outcome == "answer" for end in ends["memory"] + ends["planner"])


def test_a_different_seed_gives_different_figures():
    assert seed_lines(grid_maps.bare_experiment(200, seed=8)) != SEED_OUTPUT


def test_grids_follow_the_seed_recipe():
    rng = random.Random(7)
    first = grid_maps.make_grid(rng)
    assert first == grid_maps.grid_at(0, seed=7)
    assert grid_maps.make_grid(rng) == grid_maps.grid_at(1, seed=7)
    for walls in grid_maps.make_grids(50):
        assert (0, 0) not in walls and (7, 7) not in walls
        assert grid_maps.bfs(walls, 8) == grid_maps.dijkstra(walls, 8) >= 14


def test_bfs_and_dijkstra_on_an_unsolvable_grid():
    walls = frozenset({(0, 1), (1, 0)})
    assert grid_maps.bfs(walls, 4) is None
    assert grid_maps.dijkstra(walls, 4) is None
    assert grid_maps.bfs_path(frozenset(), 3) is not None and len(grid_maps.bfs_path(frozenset(), 3)) == 5


# A 4 x 4 grid whose downhill route ends in a pocket:
#   ...#
#   .#.#
#   .###
#   ....
DEAD_END = frozenset({(0, 3), (1, 1), (1, 3), (2, 1), (2, 2), (2, 3)})


def dead_end_scenario() -> Scenario:
    return Scenario(
        name="grid-dead-end",
        description="one hand-made grid",
        tasks={"pocket": Task("pocket", "reach the corner")},
        policies=grid.SCENARIO.policies,
        make_world=lambda task, options: grid.GridWorld(DEAD_END, 4),
        budget=Budget(max_steps=grid_maps.LIMIT + 1),
        repetition_threshold=None,
    )


def test_reactive_oscillates_in_the_dead_end_until_the_step_limit():
    run = new_run(dead_end_scenario(), None, "reactive", save=False)
    run.engine.run()
    state = run.engine.state
    assert state.ended.outcome == "stopped"
    assert state.ended.reason == "steps budget reached: 201 of 201"
    cells = grid.positions(state.history)
    assert len(cells) == 1 + grid_maps.LIMIT
    assert cells[:5] == [(0, 0), (0, 1), (0, 2), (1, 2), (0, 2)]
    assert set(cells) == {(0, 0), (0, 1), (0, 2), (1, 2)}
    assert grid_maps.bare_reactive(DEAD_END, 4) is None


def test_memory_and_planner_get_out_of_the_dead_end():
    for policy, moves in (("memory", 12), ("planner", 6)):
        run = new_run(dead_end_scenario(), None, policy, save=False)
        run.engine.run()
        state = run.engine.state
        assert state.ended.outcome == "answer"
        assert grid.positions(state.history)[-1] == (3, 3)
        assert sum(1 for s in state.history for a in s.actions if a.tool == "move") == moves
    assert grid_maps.bare_memory(DEAD_END, 4) == 12


def test_the_repetition_brake_is_off_because_corridors_repeat_moves():
    assert grid.SCENARIO.repetition_threshold is None
    run = new_run(dead_end_scenario(), None, "planner", save=False, repetition_threshold=2)
    run.engine.run()
    # two moves down in a row are the "same action twice": the brake would stop a good agent
    assert run.engine.state.ended.outcome == "stopped"
    assert run.engine.state.ended.reason.startswith("repetition")


def test_moves_into_walls_and_off_the_grid_are_error_observations():
    world = grid.GridWorld(DEAD_END, 4)
    scenario = dead_end_scenario()
    policy = script(
        Decision.act("up", "move", direction="up"),
        Decision.act("right twice", "move", direction="right"),
        Decision.act("down into the wall", "move", direction="down"),
        Decision.act("sideways", "move", direction="diagonal"),
    )
    run = new_run(scenario, None, policy, save=False)
    run.engine.run()
    obs = [o for s in run.engine.state.history for o in s.observations]
    assert obs[0].error and obs[0].text == "ERROR: up is off the grid; still at (0, 0)"
    assert not obs[1].error and obs[1].text == "moved right, at (0, 1); free: right, left"
    assert obs[2].error and obs[2].text == "ERROR: a wall at (1, 1); still at (0, 1)"
    assert obs[3].error and not obs[3].executed and "must be one of right, down, left, up" in obs[3].text
    assert grid.positions(run.engine.state.history) == [(0, 0), (0, 1)]
    assert world.look() == "at (0, 0); free: right, down"


def test_a_saved_run_rebuilds_its_map_from_the_header_and_the_observations(tmp_path):
    path = tmp_path / "grid.jsonl"
    run = new_run(grid.SCENARIO, "3", "memory", out=path, options={"seed": 7})
    run.engine.run()
    run.close()
    transcript = read_transcript(path)
    walls, size = grid.walls_for(transcript.header.task, transcript.header.options)
    assert walls == run.world.walls and size == 8
    observed = [e for e in transcript.events if e.type == "observation"]
    cells = grid.positions(observed)
    assert cells[-1] == (7, 7) == run.world.at
    assert all(c not in walls for c in cells)
    assert all(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for a, b in zip(cells, cells[1:]))
    rows = grid_maps.render(walls, size, cells, at=cells[-1])
    assert rows[0][0] == "o" and rows[7][7] == "@" and sum(r.count("#") for r in rows) == len(walls)
    restored = grid.GridWorld(walls, size)
    restored.restore(observed)
    assert restored.at == (7, 7)


def test_memory_rebuilds_its_memory_when_swapped_in_midway():
    """A fresh memory policy swapped in mid-run folds the moves so far and carries on
    exactly as one that was there from the start (grid 27 needs 52 moves, with backtracking)."""
    straight = new_run(grid.SCENARIO, "27", "memory", save=False)
    straight.engine.run()
    expected = [a.render() for s in straight.engine.state.history for a in s.actions]
    assert len(expected) == 1 + 52

    swapped = new_run(grid.SCENARIO, "27", "memory", save=False)
    for pause in (1, 10, 25):
        swapped.engine.run(max_steps=pause)
        swapped.engine.swap_policy(grid.Memory(8))
    swapped.engine.run()
    got = [a.render() for s in swapped.engine.state.history for a in s.actions]
    assert got == expected
    assert swapped.engine.state.ended.outcome == "answer"


@pytest.mark.parametrize("task", ["-1", "x", "100000000"])
def test_bad_grid_task_ids_are_refused(task):
    with pytest.raises(KeyError):
        grid.SCENARIO.task(task)


def test_grid_options_change_the_world():
    run = new_run(grid.SCENARIO, "0", "planner", save=False, options={"size": 5, "density": 0.1, "seed": 3})
    run.engine.run()
    assert run.world.size == 5
    assert grid.positions(run.engine.state.history)[-1] == (4, 4)
    with pytest.raises(ValueError):
        grid.grid_options({"density": 1.5})


def test_a_reactive_run_forked_midway_reaches_the_goal_with_planner_and_memory(tmp_path):
    from engine.sessions.resume import fork_position, fork_run

    parent = tmp_path / "reactive.jsonl"
    run = new_run(grid.SCENARIO, "0", "reactive", out=parent)
    run.engine.run()
    run.close()
    assert grid_maps.bare_reactive(grid_maps.grid_at(0)) is None and run.engine.state.ended.outcome == "stopped"
    transcript = read_transcript(parent)
    position = fork_position(transcript, 30)
    before = grid.positions(transcript.events[:position])
    stuck_at = before[-1]
    assert len(before) == 30  # step 1 looked, steps 2..30 moved
    walls = grid_maps.grid_at(0)
    for policy in ("planner", "memory"):
        child = fork_run(grid.SCENARIO, transcript, position, policy, out=tmp_path / f"{policy}.jsonl")
        assert child.world.at == stuck_at
        child.engine.run()
        child.close()
        state = child.engine.state
        assert state.ended.outcome == "answer", policy
        cells = grid.positions(state.history)
        assert cells[-1] == child.world.at == (7, 7)
        if policy == "planner":
            assert len(cells) - len(before) == len(grid_maps.bfs_path(walls, 8, start=stuck_at)) - 1


@pytest.mark.timeout(60)
def test_a_grid_that_cannot_be_drawn_is_refused_not_drawn_for_ever():
    """The N-th grid is drawn after the N before it, and each draw is redrawn until it
    has a path: both are bounded, so a transcript naming any grid cannot hang a viewer."""
    with pytest.raises(ValueError, match="density"):
        grid_maps.make_grid(random.Random(1), 8, 0.97)
    with pytest.raises(ValueError, match="size"):
        grid.grid_options({"size": 10**6})
    with pytest.raises(ValueError, match="grid numbers"):
        grid.walls_for("100000000", {})
