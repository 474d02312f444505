"""Start-up and reading figures of the headless commands, each next to its baseline.

    python bench/commands.py [--steps 50000] [--runs 5] [--keep FILE]

1. `agent-tui --help`, `agent-tui list` and `agent-tui show` of a 3-step
   transcript next to `python -c pass` (goal <= 3x); next to them, the floor
   of `show`: a process that only imports the event models the one reader
   validates with (`import engine.core.events`: pydantic and its schemas),
   and the parts of that floor: importing pydantic's `BaseModel`, `Field` and
   `TypeAdapter` (what the models are made with), and `pydantic_core` alone
   (the compiled validator pydantic imports first).
2. `agent-tui show FILE` and `agent-tui replay --headless --at end FILE` of a
   100,000-event transcript next to a process that only reads the file and
   `json.loads` every line (goal <= 1.5x each); output goes to /dev/null.
3. `agent-tui run --resume` and `run --fork --at end` of that run cut before
   its last line, next to the same baseline: reading, folding and going on
   from 100,000 events (the run then stops at once, at its step budget).

Every figure is the wall time, and the CPU time, of a fresh process
(`python -m tui.cli ...`, which is what the console script runs) with
Python's bytecode cache written, as on a user's second run (an untimed first
run of each command writes it; `PYTHONDONTWRITEBYTECODE` is left out of the
commands' environment), the median of `--runs` runs taken in turns, so that
the machine's load falls on the command and its baseline alike. The CPU time
leaves out the waits for a free core that the wall time holds on a loaded
machine. The transcript is made by the real engine (the lookup world of
bench/worlds/lookup_world.py, 50,000 steps: 100,001 events).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.options import at_least  # noqa: E402

JSON_ONLY = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n    json.loads(line)\n"


def make_transcript(path: Path, steps: int) -> None:
    import scenarios
    from engine.sessions.run import new_run

    scenario = scenarios.load_file(ROOT / "bench" / "worlds" / "lookup_world.py")
    run = new_run(scenario, "all", "looker", out=path, budget=scenario.budget.with_limit("steps", steps))
    run.engine.run()
    run.close()


ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
"""As a user runs the command: Python caches the compiled modules (a first, untimed run writes them)."""


def wall(argv: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Wall time of the command and its CPU time (user + system, from the kernel's
    account of the finished child): on a loaded machine the wall time also holds
    the waits for a free core, the CPU time only the command's own work. `ok`:
    the exit codes that mean it worked (3: a headless run stopped by its budget)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def medians(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """Each command's median wall and CPU time over `runs` runs, taken in turns."""
    for argv in commands.values():
        wall(argv)  # untimed: writes the bytecode cache, warms the file cache
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(wall(argv))
    return {
        name: (statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts)) for name, ts in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=at_least(1), default=50_000)
    parser.add_argument("--runs", type=at_least(1), default=5)
    parser.add_argument("--keep", type=Path, help="use (or make and keep) this transcript")
    args = parser.parse_args()
    py = sys.executable
    cli = [py, "-m", "tui.cli"]
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")

    with tempfile.TemporaryDirectory() as tmp:
        short = Path(tmp) / "three.jsonl"
        make_transcript(short, 3)
        startup = medians(
            {
                "python -c pass": [py, "-c", "pass"],
                "--help": [*cli, "--help"],
                "list": [*cli, "list"],
                "show (3 steps)": [*cli, "show", str(short)],
                "import engine.core.events": [py, "-c", "import engine.core.events"],
                "import pydantic": [py, "-c", "from pydantic import BaseModel, Field, TypeAdapter"],
                "import pydantic_core": [py, "-c", "import pydantic_core"],
            },
            args.runs,
        )
        bare = startup["python -c pass"]
        print(f"1. python -c pass: {figures(bare)}")
        for name in ("--help", "list", "show (3 steps)"):
            print(f"   agent-tui {name}: {figures(startup[name], bare)} (goal <= 3x)")
        print(f"   floor of show, python -c 'import engine.core.events': {figures(startup['import engine.core.events'], bare)}")
        print(f"     of which importing pydantic (BaseModel, Field, TypeAdapter): {figures(startup['import pydantic'], bare)}")
        print(f"     of which importing pydantic_core alone: {figures(startup['import pydantic_core'], bare)}")

        path = args.keep or Path(tmp) / "run.jsonl"
        if not path.exists():
            make_transcript(path, args.steps)
        lines = sum(1 for _ in open(path, "rb"))
        size_mb = path.stat().st_size / 1e6
        reading = medians(
            {
                "json.loads": [py, "-c", JSON_ONLY, str(path)],
                "show": [*cli, "show", str(path)],
                "replay --headless --at end": [*cli, "replay", "--headless", "--at", "end", str(path)],
            },
            args.runs,
        )
        continued = continued_runs(path, Path(tmp), cli, args.runs)
    raw = reading["json.loads"]
    print(f"2. {lines:,} lines ({size_mb:.1f} MB): a process that json.loads every line: {figures(raw)}")
    for name in ("show", "replay --headless --at end"):
        print(f"   agent-tui {name}: {figures(reading[name], raw)} (goal <= 1.5x)")
    print("3. the same run without its last line (it did not end), continued headless to its step budget:")
    for name, timed in continued.items():
        print(f"   agent-tui run {name}: {figures(timed, raw)}")


def continued_runs(path: Path, work: Path, cli: list[str], runs: int) -> dict[str, tuple[float, float]]:
    """`run --resume` and `run --fork --at end` of the transcript cut before its end line
    (wall and CPU medians of `runs`, in turns; files in `work`): both read, fold and go
    on from every event."""
    world = str(ROOT / "bench" / "worlds" / "lookup_world.py")
    unfinished = work / "unfinished.jsonl"
    unfinished.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]))
    copy, fork = work / "resumed.jsonl", work / "fork.jsonl"
    resume = [*cli, "run", world, "--resume", str(copy), "--headless"]
    forking = [*cli, "run", world, "--fork", str(unfinished), "--at", "end", "--headless", "-o", str(fork)]
    times: dict[str, list[tuple[float, float]]] = {"--resume": [], "--fork --at end": []}
    for _ in range(runs):
        copy.write_bytes(unfinished.read_bytes())
        fork.unlink(missing_ok=True)
        times["--resume"].append(wall(resume, ok=(0, 3)))
        times["--fork --at end"].append(wall(forking, ok=(0, 3)))
    return {name: (statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts)) for name, ts in times.items()}


def figures(timed: tuple[float, float], base: tuple[float, float] | None = None) -> str:
    """`0.120 s (CPU 0.110 s)`, and each time's ratio to `base`'s."""
    (w, c) = timed
    if base is None:
        return f"{w:.3f} s (CPU {c:.3f} s)"
    return f"{w:.3f} s, {w / base[0]:.2f}x (CPU {c:.3f} s, {c / base[1]:.2f}x)"


if __name__ == "__main__":
    main()
