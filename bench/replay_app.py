"""The replay viewer (ReplayApp) on a 100,000-event transcript: first frame, seeks, memory.

    python bench/replay_app.py [--steps 50000] [--keep FILE] [--seeks 60]

The transcript is made by the real engine (bench/engine_bench.py's scripted
lookup run, repetition off, 50,000 steps: 100,001 events) and written by the
real writer. Every figure is printed next to plain `json.loads` over the same
lines in the same run, with the ratio.

Goals (issue 4): open to the first frame under 1.5 s; a seek to any position
under 100 ms; memory under 150 MB.

First frame: from `Timeline.open` + `ReplayApp(...)` to the app's first
screen drawn (`run_test` ready + one `pilot.pause()`), opening at the start
and at the end of the run. Seeks: `app.seek(p)`, to random positions and
alternately to the two ends, once the index is built, timed two ways: to the
frame that shows it (the end of the last screen refresh the seek caused; the
number of such frames is printed too: one is the goal) and to the return of
`await pilot.pause()`, which adds the harness's own wait for the process to
go idle (20 ms sleeps until one passes without work). Memory is measured in fresh processes (tracemalloc, and RSS from
/proc/self/status) so one figure does not carry the other's garbage.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.engine_bench import scenario  # noqa: E402
from engine.stored.replay import Timeline  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from bench.options import at_least  # noqa: E402

SIZE = (120, 40)


def make_transcript(path: Path, steps: int) -> None:
    run = new_run(scenario(steps), "t", "p", out=path, clock=lambda: 1_790_000_000.0)
    run.engine.run()
    run.close()


def raw_json(path: Path) -> float:
    best = float("inf")
    for _ in range(3):
        gc.collect()
        start = time.perf_counter()
        [json.loads(line) for line in path.read_bytes().splitlines()]
        best = min(best, time.perf_counter() - start)
    return best


async def wait_indexed(app, pilot) -> None:
    """Until the viewer's index worker (started after the first frame) is done."""
    while not app.timeline.indexed:
        await pilot.pause(0.02)
    await app.workers.wait_for_complete()
    await pilot.pause()


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB."""
    fields = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


async def first_frame(path: Path, at: int | None) -> tuple[float, float, float]:
    """Seconds from open to the first frame drawn, to `pilot.pause()` after it, and to
    the index being built. The first frame is timed by a callback queued for after the
    first refresh that follows mounting (`call_after_refresh`, as the viewer queues
    its index worker); `pilot.pause()` adds the harness's wait for the app to go
    idle, which the index worker, started after that frame, holds up."""
    from tui.replay_app import ReplayApp

    drawn: list[float] = []

    import tui.replay_app

    here = Path(tui.replay_app.__file__).parent
    css = ReplayApp.CSS_PATH if isinstance(ReplayApp.CSS_PATH, list) else [ReplayApp.CSS_PATH]

    class TimedViewer(ReplayApp):
        CSS_PATH = [here / path for path in css]  # relative paths resolve from the class's own file

        def on_mount(self) -> None:  # runs before the viewer's own on_mount (Textual calls both)
            self.call_after_refresh(lambda: drawn.append(time.perf_counter()))

    gc.collect()
    start = time.perf_counter()
    timeline = Timeline.open(path)
    app = TimedViewer(timeline, len(timeline) if at == -1 else at)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        paused = time.perf_counter() - start
        await wait_indexed(app, pilot)
        indexed = time.perf_counter() - start
    return drawn[0] - start, paused, indexed


class Frames:
    """When the screen last drew, and how often, since `start()`.

    Textual has no public hook for "a frame was drawn"; this wraps the
    screen's compositor refresh (a private method: benchmark only, Textual
    is pinned) to time-stamp each one."""

    def __init__(self, screen) -> None:
        self.count = 0
        self.last = 0.0
        draw = screen._compositor_refresh

        def drawn() -> None:
            draw()
            self.count += 1
            self.last = time.perf_counter()

        screen._compositor_refresh = drawn

    def start(self) -> None:
        self.count, self.last = 0, 0.0


async def seeks(path: Path, count: int) -> dict[str, list[float]]:
    from tui.replay_app import ReplayApp

    timeline = Timeline.open(path)
    app = ReplayApp(timeline)
    out: dict[str, list[float]] = {
        "first far": [], "random": [], "ends": [], "step": [], "updated": [],
        "random frame": [], "ends frame": [], "step frame": [], "frames": [],
    }
    async with app.run_test(size=SIZE) as pilot:
        await wait_indexed(app, pilot)
        frames = Frames(app.screen)
        total = len(timeline)

        async def timed(position: int, kind: str = "") -> float:
            frames.start()
            start = time.perf_counter()
            app.seek(position)  # state folded, pane, panels and timeline updated
            out["updated"].append(time.perf_counter() - start)
            await pilot.pause()  # and the frame drawn (pilot.pause adds its own wait for idle)
            end = time.perf_counter() - start
            if kind:
                out[f"{kind} frame"].append(frames.last - start if frames.count else end)
                out["frames"].append(frames.count)
            return end

        out["first far"].append(await timed(total))
        rng = random.Random(7)
        for _ in range(count):
            out["random"].append(await timed(rng.randrange(total + 1), "random"))
        for i in range(count // 3):
            out["ends"].append(await timed(total if i % 2 == 0 else 1, "ends"))
        app.seek(total // 2)
        await pilot.pause()
        for _ in range(count // 3):
            out["step"].append(await timed(app.position + 1, "step"))  # what the right arrow does
    return out


async def go_to_step(path: Path, count: int) -> list[float]:
    """Seconds from the Enter of `g N Enter` to the main screen's frame at step N (indexed, random N)."""
    from tui.replay_app import ReplayApp

    timeline = Timeline.open(path)
    app = ReplayApp(timeline)
    times: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_indexed(app, pilot)
        frames = Frames(app.screen_stack[0])
        rng = random.Random(11)
        steps = timeline.steps()
        for _ in range(count):
            step = rng.randrange(steps + 1)
            await pilot.press("g", *str(step))
            await pilot.pause()
            target = timeline.position_after_step(step)
            frames.start()
            start = time.perf_counter()
            await pilot.press("enter")
            for _ in range(500):
                if app.position == target and frames.count and len(app.screen_stack) == 1:
                    break
                await pilot.pause(0.002)
            await pilot.pause()
            times.append(frames.last - start)
            assert app.position == target, (app.position, target)
    return times


async def minimal_key_to_frame(count: int) -> list[float]:
    """The floor: a minimal Textual app, a key that changes one Static, to the frame drawn."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    class Minimal(App[None]):
        BINDINGS = [("g", "bump", "bump")]
        presses = 0

        def compose(self) -> ComposeResult:
            yield Static("0", id="n")

        def action_bump(self) -> None:
            self.presses += 1
            self.query_one("#n", Static).update(str(self.presses))

    app = Minimal()
    times: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        frames = Frames(app.screen)
        for _ in range(count):
            await pilot.pause()
            frames.start()
            start = time.perf_counter()
            await pilot.press("g")
            for _ in range(500):
                if frames.count:
                    break
                await pilot.pause(0.002)
            times.append(frames.last - start)
    return times


async def keys_while_indexing(path: Path, count: int) -> tuple[list[float], list[float]]:
    """Key to frame of `right` (one event forward) while the index pass runs in its worker,
    and the same key once it is done (opened at the start of the run)."""
    from tui.replay_app import ReplayApp

    timeline = Timeline.open(path)
    app = ReplayApp(timeline)
    during: list[float] = []
    after: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        frames = Frames(app.screen)

        async def key() -> float:
            position = app.position
            frames.start()
            start = time.perf_counter()
            app.simulate_key("right")  # not pilot.press: it waits for the process to go idle, which the pass holds up
            for _ in range(2000):
                if app.position == position + 1 and frames.count:
                    break
                await asyncio.sleep(0.001)
            return frames.last - start

        while not timeline.indexed and len(during) < count:
            timed = await key()
            if not timeline.indexed:
                during.append(timed)
            await asyncio.sleep(0.05)
        await wait_indexed(app, pilot)
        for _ in range(count):
            after.append(await key())
            await asyncio.sleep(0.05)
    return during, after


async def memory(path: Path, trace: bool) -> None:
    """Printed as JSON: the app opened, indexed, at the end, then at the middle."""
    from tui.replay_app import ReplayApp

    if trace:
        tracemalloc.start()
    timeline = Timeline.open(path)
    app = ReplayApp(timeline)
    async with app.run_test(size=SIZE) as pilot:
        await wait_indexed(app, pilot)
        app.seek(len(timeline))
        await pilot.pause()
        app.seek(len(timeline) // 2)
        await pilot.pause()
        gc.collect()
        result = {"rss": rss_mb()[0], "hwm": rss_mb()[1]}
        if trace:
            current, peak = tracemalloc.get_traced_memory()
            result.update(current=current / 1e6, peak=peak / 1e6)
    print(json.dumps(result))


def in_fresh_process(path: Path, trace: bool) -> dict[str, float]:
    args = [sys.executable, __file__, "--keep", str(path), "--memory"] + (["--trace"] if trace else [])
    out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ms(values: list[float]) -> str:
    values = sorted(values)
    if len(values) == 1:
        return f"{values[0] * 1000:7.1f} ms"
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"median {statistics.median(values) * 1000:6.1f} ms, p95 {p95 * 1000:6.1f} ms, max {values[-1] * 1000:6.1f} ms"


def print_seeks(times: dict[str, list[float]], count: int, ratio) -> None:
    print(f"first seek to the end after indexing + frame:        {ms(times['first far'])}   {ratio(times['first far'][0])}")
    print(f"seek to a random position to its frame drawn ({count}): {ms(times['random frame'])}   goal p95 <= 50 ms")
    print(f"  ... to pilot.pause() returning:                    {ms(times['random'])}")
    print(f"  of which the seek itself (state, pane, panels, bar): {ms(times['updated'])}")
    print(f"  frames drawn per seek: {statistics.mean(times['frames']):.2f} (max {max(times['frames'])})")
    print(f"seek between the end and the start to its frame:     {ms(times['ends frame'])}")
    print(f"  ... to pilot.pause() returning:                    {ms(times['ends'])}")
    print(f"one event forward to its frame:                      {ms(times['step frame'])}")
    print(f"  ... to pilot.pause() returning:                    {ms(times['step'])}")


def print_keys(path: Path, count: int) -> None:
    """Go-to-step and keys during the index pass, each next to the minimal app's key to frame (same run)."""
    floor = asyncio.run(minimal_key_to_frame(count))
    goto = asyncio.run(go_to_step(path, count))
    during, after = asyncio.run(keys_while_indexing(path, count))
    print(f"a minimal Textual app, key to frame ({count}):          {ms(floor)}   (the floor)")
    print(f"go to step (g N enter), enter to its frame ({count}):  {ms(goto)}   goal p95 <= 50 ms")
    print(f"one event forward (right) while the index pass runs ({len(during)}): {ms(during) if during else 'none: the pass ended first'}")
    print(f"  ... once it is done ({count}):                       {ms(after)}   goal: the same")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=at_least(1), default=50_000)
    parser.add_argument("--keep", help="write the transcript here (and reuse it if it exists)")
    parser.add_argument("--seeks", type=at_least(1), default=60)
    parser.add_argument("--seeks-only", action="store_true", help="only the seek timings (no opening, no memory)")
    parser.add_argument("--keys-only", action="store_true", help="only go-to-step and keys during the index pass")
    parser.add_argument("--opens-only", action="store_true", help="only the opening timings (no seeks, no memory)")
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    path = Path(args.keep) if args.keep else Path(tempfile.mkdtemp()) / "bench.jsonl"
    if not path.exists():
        t = time.perf_counter()
        make_transcript(path, args.steps)
        print(f"made {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    if args.memory:
        asyncio.run(memory(path, args.trace))
        return

    data = path.read_bytes()
    n_lines = len(data.splitlines()) - 1
    n_events = len(Timeline.open(path))
    print(
        f"replay viewer benchmark: {n_events:,} events ({n_lines:,} lines with the tool_started notes), "
        f"{len(data) / 1e6:.1f} MB, terminal {SIZE[0]}x{SIZE[1]}"
    )
    raw = raw_json(path)
    print(f"raw json.loads of every line (read + parse):       {raw:7.3f} s   (the yardstick)")

    def ratio(seconds: float) -> str:
        return f"{seconds / raw:5.2f}x raw json"

    if args.seeks_only:
        print_seeks(asyncio.run(seeks(path, args.seeks)), args.seeks, ratio)
        return
    if args.keys_only:
        print_keys(path, args.seeks)
        return
    for label, at in (("open at the start", None), ("open at the end (--at end)", -1)):
        opens = [asyncio.run(first_frame(path, at)) for _ in range(3)]
        frame, paused, indexed = (statistics.median(o[k] for o in opens) for k in range(3))
        print(f"{label + ' to the first frame drawn (median of 3):':52} {frame:7.3f} s   {ratio(frame)}   goal <= 1 s / 1.5 s")
        print(f"  ... to pilot.pause() after it (the worker running): {paused:7.3f} s   {ratio(paused)}")
        print(f"  ... to the index built in the worker:              {indexed:7.3f} s   {ratio(indexed)}")
    if args.opens_only:
        return

    print_seeks(asyncio.run(seeks(path, args.seeks)), args.seeks, ratio)
    print_keys(path, args.seeks)

    traced = in_fresh_process(path, trace=True)
    plain = in_fresh_process(path, trace=False)
    print(
        f"memory, opened + indexed + seen at the end and the middle: {traced['current']:6.1f} MB held, "
        f"{traced['peak']:6.1f} MB peak (tracemalloc)   goal < 150 MB"
    )
    print(
        f"  RSS of a fresh process doing the same: {plain['rss']:6.1f} MB now, {plain['hwm']:6.1f} MB peak "
        f"(interpreter, Textual and imports included)"
    )


if __name__ == "__main__":
    main()
