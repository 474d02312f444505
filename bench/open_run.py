"""The engine side of opening a 100,000-event run, each figure next to its floor from the same run.

    python bench/open_run.py [--events 100000] [--rounds 5] [--keep FILE] [--tree DIR] [--only FIGURE ...]

Every figure is a fresh process, timed by its CPU (user + system, the interpreter's
start included), run in turns with the floor: a process that reads the file and keeps
`json.loads` of every line (as bench/replay.py's yardstick). The figures:

- read + fold: `read_transcript` and the fold of its events (what a resume folds);
- resume, engine built: `read_transcript` and `resume_run` (the run's engine with its
  event log and state);
- resume, lazy read: the same from `read_transcript(lazy=True)`, as `run --resume` reads
  it (each line parsed once, in the resume's one pass);
- tail: `read_tail` of the last 400 events (the cockpit's first frame);
- index: `Timeline.open` and its whole index pass (the replay viewer's);
- index, then packed: the same and `Timeline.pack`, as the viewer holds the run once
  its pass is done (the bytes compressed; a checkout without `pack` packed in the pass).

`--only index` (a figure's first word, or its whole name): time only those figures.

`--tree DIR`: time the code of another checkout (a copy of main, for before and after).
Goal: read + fold and the resume within 1x the floor.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.options import at_least  # noqa: E402

FLOOR = "import json, sys\nparsed = [json.loads(line) for line in open(sys.argv[1], 'rb').read().splitlines()]\n"
READ_FOLD = (
    "import sys\nfrom engine.stored.transcript import read_transcript\nfrom engine.core.state import fold\n"
    "t = read_transcript(sys.argv[1])\nfold(t.header, t.events)\n"
)
RESUME = (
    "import sys\nfrom bench.replay import _scenario\nfrom engine.stored.transcript import read_transcript\n"
    "from engine.sessions.resume import resume_run\n"
    "run = resume_run(_scenario(), read_transcript(sys.argv[1]), 'human', interactive=True)\nrun.close()\n"
)
RESUME_LAZY = RESUME.replace("read_transcript(sys.argv[1])", "read_transcript(sys.argv[1], lazy=True)")
TAIL = "import sys\nfrom engine.stored.tail import read_tail\nread_tail(sys.argv[1], 400)\n"
INDEX = "import sys\nfrom engine.stored.replay import Timeline\nTimeline.open(sys.argv[1]).build_index()\n"
INDEX_PACKED = (  # dropped before the exit, as INDEX's is (the exit's collection would walk all it made: 0.3 s)
    "import sys\nfrom engine.stored.replay import Timeline\nt = Timeline.open(sys.argv[1])\nt.build_index()\nt.pack()\ndel t\n"
)


def child_cpu(code: str, path: Path, tree: Path) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of a fresh process running `code` on `path`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tree)!r})\n{code}", str(path)], cwd=tree, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=at_least(2), default=100_000)
    parser.add_argument("--rounds", type=at_least(1), default=5)
    parser.add_argument("--keep", help="the run's transcript here (made when missing); it must not have ended")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code is timed (default: this one)")
    parser.add_argument("--only", action="append", metavar="FIGURE", help="time only this figure (its first word or its name; repeatable)")
    args = parser.parse_args()
    tree = args.tree.resolve()
    if not (tree / "engine").is_dir():
        parser.error(f"--tree {args.tree}: not a checkout of agent-tui (no engine/ in it)")
    work = Path(tempfile.mkdtemp())
    path = Path(args.keep) if args.keep else work / "run.jsonl"
    if not path.exists():
        from bench.replay import make_transcript

        make_transcript(work / "ended.jsonl", args.events)
        lines = (work / "ended.jsonl").read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]))  # without its end line: a run that can be resumed
    copy = work / "resumed.jsonl"
    figures = {"read + fold": READ_FOLD, "resume, engine built": RESUME, "resume, lazy read": RESUME_LAZY,
               "tail (400 events)": TAIL, "index pass": INDEX, "index, then packed": INDEX_PACKED}
    if "lazy" not in (tree / "engine" / "stored" / "transcript.py").read_text():
        del figures["resume, lazy read"]
    if not (tree / "engine" / "stored" / "tail.py").exists():
        del figures["tail (400 events)"]
    if "def pack(" not in (tree / "engine" / "stored" / "replay.py").read_text():
        del figures["index, then packed"]
    if args.only:
        wanted = {name.lower() for name in args.only}
        figures = {name: code for name, code in figures.items() if name in wanted or name.split()[0].strip(",") in wanted}
        if not figures:
            parser.error(f"--only {', '.join(args.only)}: no such figure (the figures: read, resume, tail, index)")
    cpu: dict[str, list[float]] = {"floor": [], **{name: [] for name in figures}}
    for _ in range(args.rounds):
        for name, code in figures.items():
            cpu["floor"].append(child_cpu(FLOOR, path, tree)[0])
            shutil.copyfile(path, copy)  # a resume records its policy swap: each starts from the same file
            cpu[name].append(child_cpu(code, copy, tree)[0])
    floor = statistics.median(cpu["floor"])
    print(f"{path}: {path.stat().st_size / 1e6:.1f} MB; code of {tree}; load {os.getloadavg()[0]:.1f}; CPU medians of {args.rounds}")
    print(f"  {'floor (json.loads every line)':32} {floor:7.3f} s")
    for name in figures:
        seconds = statistics.median(cpu[name])
        print(f"  {name:32} {seconds:7.3f} s  {seconds / floor:5.2f}x the floor")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
