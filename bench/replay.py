"""Replay on a 100,000-event transcript: open, index, seek, search, memory.

    python bench/replay.py [--events 100000] [--every 100] [--keep FILE]

The transcript is made by the real engine (a scripted policy over an echo
tool, with approvals, rejections, errors and policy swaps mixed in) and
written by the real writer. Each figure is printed next to the time plain
`json.loads` takes over the same lines in the same process, with the ratio.

Goals: open (read + fold to the first state) under 1.5 s; a seek to any
position under 100 ms once indexed; memory under 150 MB.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import subprocess
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool  # noqa: E402
from engine.stored.replay import DEFAULT_CHECKPOINT_EVERY, Timeline  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from engine.core.state import fold  # noqa: E402
from bench.options import at_least  # noqa: E402


def _scenario() -> Scenario:
    class World:
        def __init__(self) -> None:
            self.tools = [
                Tool("echo", "Echo.", (Param("text"),), lambda text: f"echo {text} and a few more words", timeout=None),
                Tool("pay", "Pay.", (Param("amount", "integer"),), lambda amount: f"paid {amount}", kind="irreversible", timeout=None),
            ]

    return Scenario(
        name="bench",
        description="replay benchmark",
        tasks={"t": Task("t", "Echo many times.")},
        policies={},
        make_world=lambda task, options: World(),
        budget=Budget(),
        repetition_threshold=None,
    )


def make_transcript(path: Path, events: int) -> None:
    def decide(view) -> Decision:
        n = view.step
        if n % 50 == 0:
            return Decision.act(f"Step {n}: pay.", "pay", amount=n)
        if n % 37 == 0:
            return Decision.act(f"Step {n}: a tool that does not exist.", "nope", x=1)
        return Decision.act(f"Step {n}: I echo the number and look at the result.", "echo", text=str(n))

    run = new_run(_scenario(), "t", ScriptedPolicy("bench", decide), out=path, clock=lambda: 1_790_000_000.0)
    engine = run.engine
    while len(engine.events) < events - 1:
        status = engine.step()
        if status == "awaiting_approval":
            if engine.state.step % 100 == 0:
                engine.reject("not this one")
            else:
                engine.approve()
        if engine.state.step % 5000 == 0 and engine.state.status == "ready":
            engine.swap_policy(ScriptedPolicy("bench", decide))
    engine.abort("benchmark size reached")
    run.close()


def _time(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=at_least(2), default=100_000)
    parser.add_argument("--every", type=at_least(1), default=DEFAULT_CHECKPOINT_EVERY, help="checkpoint every K events (the default: the Timeline's)")
    parser.add_argument("--keep", help="write the transcript here (and reuse it if it exists)")
    args = parser.parse_args()

    path = Path(args.keep) if args.keep else Path(tempfile.mkdtemp()) / "bench.jsonl"
    if not path.exists():
        t = time.perf_counter()
        make_transcript(path, args.events)
        print(f"made {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    data = path.read_bytes()
    lines = data.splitlines()
    n_events = len(lines) - 1
    print(f"transcript: {n_events} events, {len(data) / 1e6:.1f} MB, checkpoints every {args.every} events")

    raw_read = _time(lambda: [json.loads(line) for line in path.read_bytes().splitlines()], repeat=3)
    print(f"raw json.loads of every line (read + parse):  {raw_read:7.3f} s   (the yardstick)")

    def ratio(seconds: float) -> str:
        return f"{seconds / raw_read:5.2f}x raw json"

    holder: dict[str, Timeline] = {}

    def open_first_state() -> None:
        timeline = Timeline.open(path, checkpoint_every=args.every)
        timeline.state_at(0)
        timeline.events(0, 60)  # what a first screen draws
        holder["t"] = timeline

    opened = _time(open_first_state, repeat=3)
    print(f"open (read + header + first state + 60 events): {opened:7.3f} s   {ratio(opened)}   goal < 1.5 s")

    timeline = holder["t"]
    cold_end = _time(lambda: timeline.state_at(len(timeline)))
    print(f"index (validate + fold all, checkpoints):     {cold_end:7.3f} s   {ratio(cold_end)}   (once, in a worker)")

    rng = random.Random(7)
    positions = [rng.randrange(len(timeline) + 1) for _ in range(200)]
    seeks = []
    for k in positions:
        start = time.perf_counter()
        timeline.seek(k)
        seeks.append(time.perf_counter() - start)
    seeks.sort()
    print(
        f"seek to a random position (200 seeks):         median {statistics.median(seeks) * 1000:6.1f} ms, "
        f"p95 {seeks[int(len(seeks) * 0.95)] * 1000:6.1f} ms, max {seeks[-1] * 1000:6.1f} ms   goal < 100 ms"
    )
    back_forward = _time(lambda: (timeline.back(), timeline.forward()), repeat=20)
    print(f"step back + forward:                          {back_forward * 1000:7.1f} ms")
    markers = _time(lambda: timeline.markers(), repeat=3)
    print(f"markers ({len(timeline.markers())}):                              {markers * 1000:7.1f} ms")
    search = _time(lambda: timeline.search("not this one"), repeat=1)
    print(f"search 'not this one' ({len(timeline.search('not this one'))} hits):              {search * 1000:7.1f} ms")

    k = positions[0]
    full = _time(lambda: fold(timeline.header, timeline.events(0, k)))
    print(f"for comparison, a plain fold from 0 to {k}:   {full * 1000:7.1f} ms")

    del holder, timeline
    gc.collect()
    tracemalloc.start()
    timeline = Timeline.open(path, checkpoint_every=args.every)
    timeline.build_index()
    timeline.seek(len(timeline) // 2)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"memory, opened + indexed: {current / 1e6:6.1f} MB held, {peak / 1e6:6.1f} MB peak (Python allocations)   goal < 150 MB")
    code = (
        "from engine.stored.replay import Timeline\n"
        f"t = Timeline.open({str(path)!r}, checkpoint_every={args.every}); t.build_index(); t.seek(len(t) // 2)\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
        "print(int(peak) / 1024)\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    print(f"memory, a fresh process that opens, indexes and seeks: peak RSS {float(out.stdout):6.1f} MB (interpreter and imports included)   goal <= 120 MB")
    gc.disable()
    seeks = []
    for k in positions:
        start = time.perf_counter()
        timeline.seek(k)
        seeks.append(time.perf_counter() - start)
    gc.enable()
    seeks.sort()
    print(f"seeks again with the garbage collector off: max {seeks[-1] * 1000:6.1f} ms (the max above is a GC pause)")


if __name__ == "__main__":
    main()
