"""Where `agent-tui show` of a long run spends its time, phase by phase, next to `json.loads`.

    python bench/show_phases.py [--steps 50000] [--runs 5] [--keep FILE]

`bench/commands.py` compares the whole `show` process with a process that
only calls `json.loads` on every line (goal <= 1.5x). This script splits
`show` into its phases, each timed in CPU time in this process (best of
`--runs`, the collector paused as `show` pauses it), and gives each as a
ratio of the same `json.loads` pass timed here:

- imports: a fresh `python -c "import ..."` of what `show` imports, less a
  fresh `python -c pass` (medians; bytecode cached, as on a user's second run);
- read: the file's bytes (`engine.stored.reader.read_bytes`);
- scan: the line index (offsets of event lines, the `tool_started` notes);
- validation: every event line validated into its event object
  (`LineIndex.parse`, pydantic from bytes), the steps' order checked;
- text: every event formatted as `show` prints it (`tui.plain.event_lines`).

The least `show` can cost while printing validated events is its imports,
the read and the validation: the script prints that sum as a ratio too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.commands import ENV, make_transcript  # noqa: E402
from bench.options import at_least  # noqa: E402
from engine.core.collector import collector_paused  # noqa: E402
from engine.stored.reader import LineIndex, StepCheck, read_bytes  # noqa: E402
from tui.plain import event_lines  # noqa: E402

SHOW_IMPORTS = "import tui.cli, tui.cli.saved, tui.plain, engine.stored.transcript, engine.core.engine"


def child_cpu(argv: list[str]) -> float:
    """CPU time (user + system) of a finished child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=ROOT, env=ENV, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_cpu(runs: int) -> float:
    """Median CPU seconds `show`'s imports add to a bare interpreter's start."""
    py = sys.executable
    child_cpu([py, "-c", SHOW_IMPORTS])  # writes the bytecode cache
    imports = [child_cpu([py, "-c", SHOW_IMPORTS]) for _ in range(runs)]
    bare = [child_cpu([py, "-c", "pass"]) for _ in range(runs)]
    return max(0.0, statistics.median(imports) - statistics.median(bare))


def best(fn: Callable[[], Any], runs: int) -> float:
    """The least CPU seconds of `fn()` over `runs` calls, the collector paused."""
    times = []
    for _ in range(runs):
        with collector_paused():
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=at_least(1), default=50_000)
    parser.add_argument("--runs", type=at_least(1), default=5)
    parser.add_argument("--keep", type=Path, help="use (or make and keep) this transcript")
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "run.jsonl"
        if not path.exists():
            make_transcript(path, args.steps)
        data = read_bytes(path)
        index = LineIndex.scan(str(path), data)
        events = [index.parse(i) for i in range(len(index))]

        def json_pass() -> None:
            with open(path, "rb") as f:
                for line in f:
                    json.loads(line)

        def validation() -> None:
            steps = StepCheck()
            for i in range(len(index)):
                steps.problem(index.parse(i))

        def text() -> None:
            for event in events:
                event_lines(event)

        raw = best(json_pass, args.runs)
        phases = {
            "imports": import_cpu(args.runs),
            "read": best(lambda: read_bytes(path), args.runs),
            "scan": best(lambda: LineIndex.scan(str(path), data), args.runs),
            "validation": best(validation, args.runs),
            "text": best(text, args.runs),
        }
    lines = data.count(b"\n")
    print(f"{lines:,} lines ({len(data) / 1e6:.1f} MB), {len(events):,} events; CPU seconds, best of {args.runs}")
    print(f"  json.loads of every line (the baseline's work): {raw:.3f} s")
    for name, seconds in phases.items():
        print(f"  {name:<11} {seconds:.3f} s  {seconds / raw:.2f}x")
    total = sum(phases.values())
    least = phases["imports"] + phases["read"] + phases["validation"]
    print(f"  all phases: {total:.3f} s, {total / raw:.2f}x; imports + read + validation alone: {least:.3f} s, {least / raw:.2f}x (goal for the whole: 1.5x)")


if __name__ == "__main__":
    main()
