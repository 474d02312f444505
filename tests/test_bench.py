"""`agent-tui bench`: the matrix, its JSON and CSV, its checks and exit codes."""

from __future__ import annotations

import csv
import io
import json

import pytest

from scenarios import grid_maps
from tui import bench
from tui.cli import main


def bench_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["bench", *argv, "--json", "--no-progress"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_json_for_a_small_grid_matrix_matches_the_bare_loop(capsys):
    code, data = bench_json(capsys, "grid", "--grids", "6", "--seed", "7", "--workers", "1")
    assert code == 0
    assert [s["policy"] for s in data["summary"]] == ["reactive", "memory", "planner"]
    assert data["scenarios"] == [
        {"scenario": "grid", "options": {"size": 8, "density": 0.28, "seed": 7}, "policies": ["reactive", "memory", "planner"], "tasks": 6}
    ]
    runs = data["runs"]
    assert len(runs) == 18
    assert [r["task"] for r in runs[:6]] == ["0", "1", "2", "3", "4", "5"]
    walls = grid_maps.make_grids(6, seed=7)
    bare = {
        "reactive": [grid_maps.bare_reactive(w) for w in walls],
        "memory": [grid_maps.bare_memory(w) for w in walls],
        "planner": [grid_maps.bfs(w, 8) for w in walls],
    }
    for r in runs:
        expected = bare[r["policy"]][int(r["task"])]
        assert r["success"] == (expected is not None)
        if expected is not None:
            assert r["steps"] == expected
            assert r["optimum"] == grid_maps.bfs(walls[int(r["task"])], 8)
            assert r["extra"] == expected - r["optimum"]
    memory = next(s for s in data["summary"] if s["policy"] == "memory")
    assert memory["runs"] == 6 and memory["successes"] == 6
    assert memory["mean_steps"] == pytest.approx(sum(bare["memory"]) / 6)
    assert {c["check"]: (c["passed"], c["total"]) for c in data["checks"]} == {
        "BFS and Dijkstra agree": (6, 6),
        "no policy beats the optimum": (sum(v is not None for vs in bare.values() for v in vs),) * 2,
    }


def test_the_process_pool_gives_the_same_runs(capsys):
    _, alone = bench_json(capsys, "grid", "research", "--grids", "8", "--workers", "1")
    _, pooled = bench_json(capsys, "grid", "research", "--grids", "8", "--workers", "2")
    assert pooled["runs"] == alone["runs"]
    assert pooled["summary"] == alone["summary"]


def test_research_and_support_rows(capsys):
    code, data = bench_json(capsys, "research", "support", "--workers", "1")
    assert code == 0
    rows = {(s["scenario"], s["policy"]): s for s in data["summary"]}
    assert rows["research", "careful"]["successes"] == 1
    assert rows["research", "careful"]["mean_steps"] == 4
    assert rows["research", "hasty"]["successes"] == 0
    assert rows["research", "careful"]["mean_cost"] > rows["research", "hasty"]["mean_cost"] > 0
    support = rows["support", "scripted"]
    assert support["runs"] == 3
    # with nobody to approve, the return request is rejected, so no task succeeds
    assert support["successes"] == 0


def test_csv_has_one_row_per_run(capsys):
    code = main(["bench", "grid", "--grids", "3", "--policies", "planner", "--csv", "--no-progress", "--workers", "1"])
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["task"] for r in rows] == ["0", "1", "2"]
    assert rows[0].keys() == set(bench.RUN_FIELDS)
    assert all(r["success"] == "True" and r["extra"] == "0" for r in rows)


def test_the_table_names_the_figures(capsys):
    code = main(["bench", "grid", "--grids", "4", "--no-progress", "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "extra" in out and "optimum" in out and "planner" in out and "4/4" in out  # titles wrap at 80 columns
    assert "ok   BFS and Dijkstra agree: 4/4" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["grid", "--policies", "oracle"],
        ["nowhere"],
        ["grid", "--tasks", "x"],
        ["grid", "--grids", "-1"],
        ["grid", "--grids", "2", "--size", "1"],
        ["grid", "--grids", "2", "--density", "2"],
        ["grid", "--grids", "2", "--option", "size=x"],
        ["grid", "--grids", "2", "--option", "colour=red"],
        ["support", "--option", "size=3"],
    ],
)
def test_usage_errors_exit_2(capsys, argv):
    """Options are checked before any run: a value the scenario cannot start with, or
    a key it does not declare (as `run --option` refuses it), is a message, not a
    traceback from a worker or an option silently dropped."""
    assert main(["bench", *argv, "--no-progress", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "agent-tui bench:" in err and "Traceback" not in err


def test_a_failed_check_exits_1(tmp_path, capsys):
    path = tmp_path / "liar.py"
    path.write_text(
        "from engine import Decision, Scenario, ScriptedPolicy, Task\n"
        "class W:\n    tools = []\n"
        "def bench_score(task, options, history, outcome):\n"
        "    return {'success': True, 'steps': 1, 'optimum': 3, 'checks': {'always false': False}}\n"
        "SCENARIO = Scenario(name='liar', description='d', tasks={'t': Task('t', 'q')},\n"
        "    policies={'p': lambda w, t: ScriptedPolicy('p', lambda v: Decision.final('', 'x'))},\n"
        "    make_world=lambda task, options: W())\n"
    )
    code, data = bench_json(capsys, str(path), "--workers", "1")
    assert code == 1
    checks = {c["check"]: (c["passed"], c["total"]) for c in data["checks"]}
    assert checks == {"always false": (0, 1), "no policy beats the optimum": (0, 1)}


def test_by_default_every_scenario_with_policies_of_its_own():
    import argparse

    import scenarios

    parser = argparse.ArgumentParser()
    bench.register(parser.add_subparsers())
    _, plans = bench.plan(parser.parse_args(["bench"]))
    names = [plan["name"] for plan in plans]
    assert names == [n for n in scenarios.BUILTIN if n != "mcp"]


def test_bench_of_a_scenario_with_nothing_to_run_says_what_it_needs_and_exits_2(capsys):
    assert main(["bench", "mcp", "--no-progress", "--workers", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    message = captured.err.strip()
    assert message.startswith("agent-tui bench: scenario 'mcp' has nothing to bench"), message
    assert "no scripted policies" in message and "agent-tui run --mcp" in message
    assert len(captured.err.strip().splitlines()) == 1


def test_a_table_title_shows_no_option_left_unset(capsys):
    assert main(["bench", "calculator", "--no-progress", "--workers", "1"]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    assert title.startswith("calculator · 1 task · approvals"), title
    assert "None" not in title
