"""The two scripts that split a figure into its parts (`bench/step_parts.py`,
`bench/show_phases.py`) run, print every part, and time the work they name: the
kept parts' loop makes the same decisions and observations as the engine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH.parent))


def run_script(*argv: str) -> str:
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=BENCH.parent)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_step_parts_prints_every_part_with_its_ratio():
    out = run_script(str(BENCH / "step_parts.py"), "--steps", "1000", "--repeat", "1")
    for part in ("bare loop step", "engine step, whole", "policy (scenario code)", "tool under its deadline",
                 "two JSON lines", "fold of two events", "event log, two events", "the rest"):
        assert re.search(rf"{re.escape(part)}\s+-?\d+\.\d+ us\s+-?\d+(\.\d)?x", out), (part, out)
    assert re.search(r"in a loop of their own, new objects every step: \d+\.\d+ us a step, \d+\.\dx", out), out
    assert re.search(r"engine \d+\.\d+ us \(\d+\.\dx, goal 3x\)", out), out
    assert re.search(r"building no event \(no record of the step\): \d+\.\d+ us a step, \d+\.\dx", out), out
    assert re.search(r"the engine's step against that floor: \d+\.\d\dx \(goal <= 2x\)", out), out


def test_the_kept_parts_loop_writes_the_engine_s_decisions_and_observations(tmp_path):
    from bench.engine_figures import engine_run
    from bench.step_parts import floor_loop

    floor_loop(30, tmp_path / "floor.jsonl")
    engine_run(30, tmp_path / "engine.jsonl")

    def calls(path: Path) -> list[tuple]:
        rows = []
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event["type"] == "decision":
                rows.append(("decision", event["step"], event["thought"], event["actions"]))
            elif event["type"] == "observation":
                rows.append(("observation", event["step"], event["tool"], event["args"], event["text"], event["executed"]))
        return rows

    floor, engine = calls(tmp_path / "floor.jsonl"), calls(tmp_path / "engine.jsonl")
    assert len(floor) == 60
    assert floor == engine


def test_show_phases_prints_every_phase_next_to_json(tmp_path):
    out = run_script(str(BENCH / "show_phases.py"), "--steps", "300", "--runs", "1", "--keep", str(tmp_path / "run.jsonl"))
    assert re.search(r"json\.loads of every line \(the baseline's work\): \d+\.\d{3} s", out), out
    for phase in ("imports", "read", "scan", "validation", "text"):
        assert re.search(rf"^  {phase}\s+\d+\.\d{{3}} s  \d+\.\d\dx$", out, re.M), (phase, out)
    lines = (tmp_path / "run.jsonl").read_bytes().splitlines()
    events = [line for line in lines[1:] if json.loads(line)["type"] != "tool_started"]
    assert len(events) > 600  # 300 decisions, 300 observations, the end and its warnings
    assert f"{len(lines):,} lines (0.2 MB), {len(events):,} events" in out
