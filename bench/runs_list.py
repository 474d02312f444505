"""`agent-tui runs` over a big folder: 10,000 small runs, and 100 runs of 100,000 events.

    python bench/runs_list.py [--files 10000] [--long 100] [--events 100000]

The small runs are made by the real engine: every task of the calculator,
support and research scenarios with their scripted policies, approvals
answered, ended and unfinished, forks among them; each made once and written
again under new names (with its own start time) until the folder holds
`--files` of them. The long runs are one 100,000-event run of bench/replay.py's
scenario, copied. Each listing is timed twice (a cold first pass is mostly the
page cache) and printed with the cost per file.

Goal: the 10,000-file folder lists in under a second, and a long run costs what
a short one does (the tail read does not scan).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scenarios  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from engine.stored.catalog import list_runs  # noqa: E402
from bench.replay import make_transcript  # noqa: E402


def small_runs(folder: Path) -> list[Path]:
    """One run per task and scripted policy of three scenarios, ended, plus one unfinished of each."""
    made: list[Path] = []
    for name in ("calculator", "support", "research"):
        scenario = scenarios.get(name)
        for task in scenario.tasks:
            for policy in scenario.policies:
                path = folder / f"{name}-{task}-{policy}.jsonl"
                run = new_run(scenario, task, policy, out=path, approve="all")
                run.engine.run()
                run.close()
                made.append(path)
            path = folder / f"{name}-{task}-unfinished.jsonl"
            run = new_run(scenario, task, None, out=path, interactive=True)
            run.engine.step()
            run.close()
            made.append(path)
    return made


def fill(folder: Path, samples: list[Path], count: int) -> None:
    """`count` files in `folder`, each a sample's bytes with its own start time in the header."""
    bodies = []
    for sample in samples:
        head, _, rest = sample.read_bytes().partition(b"\n")
        bodies.append((json.loads(head), rest))
    for n in range(count):
        header, rest = bodies[n % len(bodies)]
        header = dict(header, started_at=1_700_000_000 + n * 37)
        (folder / f"{n:05d}-{header['scenario']}.jsonl").write_bytes(json.dumps(header).encode() + b"\n" + rest)


def bare_reading(folder: Path) -> float:
    """Processor seconds of the least a listing could do without reading at the ends: each file
    read whole and every line through `json.loads` (the yardstick the load of the machine
    slows as much as the listing)."""
    start = time.process_time()
    for entry in os.scandir(folder):
        with open(entry.path, "rb") as f:
            for line in f.read().splitlines():
                if line.strip():
                    json.loads(line)
    return time.process_time() - start


def bare_reading_one(path: Path) -> float:
    start = time.process_time()
    with open(path, "rb") as f:
        for line in f.read().splitlines():
            json.loads(line)
    return time.process_time() - start


def timed(folder: Path) -> tuple[float, float, int]:
    """The best wall-clock and processor seconds of three listings, and how many runs they listed
    (processor time is the figure to trust on a machine others load)."""
    wall, cpu, listed = float("inf"), float("inf"), 0
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        listed = len(list_runs(folder))
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, time.process_time() - start_cpu)
    return wall, cpu, listed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--long", type=int, default=100)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="runs-list-"))
    try:
        samples_dir, small, big = root / "samples", root / "small", root / "long"
        for folder in (samples_dir, small, big):
            folder.mkdir()
        samples = small_runs(samples_dir)
        fill(small, samples, args.files)
        size = sum(p.stat().st_size for p in small.iterdir())
        seconds, cpu, listed = timed(small)
        print(f"{args.files:,} small runs ({len(samples)} kinds, {size / args.files / 1024:.1f} KiB each): "
              f"listed {listed:,} in {seconds:.3f} s ({cpu:.3f} s of processor), {cpu / args.files * 1e6:.0f} µs per file "
              f"({'under' if cpu < 1 else 'OVER'} the 1 s goal); bare json.loads of every line: "
              f"{bare_reading(small):.3f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} processors")
        long_run = root / "long-run.jsonl"
        make_transcript(long_run, args.events)
        for n in range(args.long):
            shutil.copyfile(long_run, big / f"{n:03d}-long.jsonl")
        mib = long_run.stat().st_size / (1 << 20)
        seconds_long, cpu_long, listed_long = timed(big)
        print(f"{args.long} runs of {args.events:,} events ({mib:.1f} MiB each): listed {listed_long} in "
              f"{seconds_long:.3f} s ({cpu_long:.3f} s of processor), {cpu_long / args.long * 1e3:.2f} ms per file; "
              f"bare json.loads of every line of one of them: {bare_reading_one(long_run):.3f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
