"""Stored runs to open: a saved run for the viewer, a long run, runs in a folder for the listings."""

from __future__ import annotations

from pathlib import Path

import scenarios
from bench.engine_bench import scenario as lookup_scenario
from engine.sessions.run import new_run


def long_run(tmp_path: Path, steps: int = 150) -> Path:
    path = tmp_path / "long.jsonl"
    run = new_run(lookup_scenario(steps), "t", "p", out=path, clock=lambda: 1_790_000_000.0)
    run.engine.run()
    run.close()
    return path


def saved_run(tmp_path, scenario="support", task="return-1187", policy=None, reject=False, clock=None):
    path = tmp_path / f"{scenario}.jsonl"
    kwargs = {"clock": clock} if clock else {}
    run = new_run(scenarios.get(scenario), task, policy, out=path, **kwargs)
    run.engine.run()
    if run.engine.status == "awaiting_approval":
        run.engine.reject("a gift, keep it") if reject else run.engine.approve()
        run.engine.run()
    run.close()
    return path, run


START = 1_790_000_000.0


def stored_run(folder: Path, name: str, scenario: str = "calculator", *, at: float = START, finish: bool = True) -> Path:
    path = folder / name
    if finish:
        run = new_run(scenarios.get(scenario), None, None, out=path, approve="all", clock=lambda: at)
        run.engine.run()
    else:
        run = new_run(scenarios.get(scenario), None, None, out=path, interactive=True, clock=lambda: at)
        run.engine.step()
    run.close()
    return path
