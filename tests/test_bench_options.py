"""The benchmark scripts refuse a count they cannot measure with (zero, negative, not a
number, below what a figure needs) by a one-line message and exit 2, before any work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

CASES = [
    ("cockpit.py", ["--steps", "10"]),
    ("cockpit_latency.py", ["--presses", "0"]),
    ("commands.py", ["--runs", "-1"]),
    ("engine_bench.py", ["--steps", "many"]),
    ("engine_figures.py", ["--long", "0"]),
    ("engine_figures.py", ["--steps", "3000"]),
    ("engine_figures.py", ["--model-steps", "10000", "--model-long", "100"]),
    ("gateway_latency.py", ["--turns", "0"]),
    ("gateway_concurrency.py", ["--clients", "0"]),
    ("grid_experiment.py", ["--workers", "0"]),
    ("import_speed.py", ["--lines", "10"]),
    ("mcp_bench.py", ["--starts", "0"]),
    ("open_run.py", ["--rounds", "0"]),
    ("open_run.py", ["--tree", "/nonexistent"]),
    ("replay.py", ["--every", "0"]),
    ("replay_app.py", ["--seeks", "-5"]),
    ("show_phases.py", ["--runs", "0"]),
    ("step_parts.py", ["--steps", "10"]),
]


@pytest.mark.parametrize(("script", "args"), CASES, ids=[f"{s} {' '.join(a)}" for s, a in CASES])
def test_a_count_it_cannot_use_is_refused_with_a_message(script, args):
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{script}: error: "), done.stderr
    assert "Traceback" not in done.stderr
    assert args[0] in last or "--model-long" in last
    assert done.stdout == ""
