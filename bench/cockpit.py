"""The cockpit (CockpitApp) holding a long run, and the time to the first frame of `agent-tui`.

    python bench/cockpit.py [--steps 50000] [--starts 5]

Goals (issue 3): append one step and draw a frame with 1,000 and with 100,000
events already shown, flat and under 15 ms; memory of the whole cockpit
holding a 100,000-event run (the engine's events, the folded state, the
pane) under 150 MB; time to the first frame of `agent-tui`.

The run is made by the real engine (bench/engine_bench.py's scripted lookup
run, repetition off): 50,000 steps are 100,000 events. A step in the cockpit
is the real path: `app.start("step", ...)` runs `engine.step()` in the worker,
the bridge posts its events, the pane appends them, and the timing stops when
the frame after `WorkDone` is drawn (`pilot.pause()`). Memory is measured in
fresh processes (tracemalloc from before the run is made, and RSS).

The first frame of the installed console script is timed under a
pseudo-terminal: from spawning `agent-tui run support --task return-1187` to
the first bytes of the header ("return-1187") on the terminal. Import time is
`python -X importtime` of what that command imports.

`--resume` (issue 30): `agent-tui run WORLD --resume FILE` of a 100,000-event
run (bench/worlds/lookup_world.py, cut before its end line), spawned under a
pseudo-terminal to the last step's words drawn in the transcript pane, in
turns with its floor, a process that `json.loads` every line of the file;
and the resumed cockpit's RSS at that frame and once its pane has figured
every event's rows (`--settle` seconds later).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import pty
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.engine_bench import scenario  # noqa: E402
from bench.replay_app import Frames, rss_mb  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from bench.options import at_least  # noqa: E402

SIZE = (120, 40)


def make_run(steps: int, limit: int):
    """A live run already `steps` steps long (no transcript file), able to go on to `limit`."""
    run = new_run(scenario(limit), "t", "p", save=False)
    engine = run.engine
    while engine.state.step < steps:
        engine.step()
    return run


async def step_times(steps: int, rounds: int) -> tuple[float, float, list[float], int, list[float], list[float], list[int]]:
    """(seconds to mount the cockpit, seconds until its pane has figured the rows of
    every event (tui/widgets/rows.py counts a long run from its tail, the rest while
    idle), per-step times to `pilot.pause()` returning,
    events shown, per-step times to the state and widgets updated, per-step times
    to the last frame drawn, frames drawn per step)."""
    from tui.app import CockpitApp
    from tui.widgets.transcript import TranscriptPane

    run = make_run(steps, steps + rounds + 10)
    start = time.perf_counter()
    app = CockpitApp(run)
    times: list[float] = []
    updated: list[float] = []
    drawn: list[float] = []
    counts: list[int] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        mounted = time.perf_counter() - start
        pane = app.query_one(TranscriptPane)
        for _ in range(6000):  # the steps are timed once the pane has figured every event's rows
            if not pane.index.estimated:
                break
            await asyncio.sleep(0.01)
        filled = time.perf_counter() - start
        shown = pane.event_count
        frames = Frames(app.screen)
        for _ in range(rounds):
            frames.start()
            start = time.perf_counter()
            app.start("step", lambda op: op.step())
            while app.busy:  # until the app has handled WorkDone: state and widgets updated
                await asyncio.sleep(0.0005)
            updated.append(time.perf_counter() - start)
            await pilot.pause()  # and the frame drawn (pilot.pause adds its own wait for idle)
            times.append(time.perf_counter() - start)
            drawn.append(frames.last - start if frames.count else times[-1])
            counts.append(frames.count)
        assert pane.event_count == shown + 2 * rounds, (pane.event_count, shown)
    return mounted, filled, times, shown, updated, drawn, counts


async def memory(steps: int, trace: bool) -> None:
    from tui.app import CockpitApp

    gc.collect()
    if trace:
        tracemalloc.start()
    base_rss = rss_mb()[0]
    run = make_run(steps, steps + 10)
    made = tracemalloc.get_traced_memory()[0] if trace else 0
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        gc.collect()
        result = {"rss": rss_mb()[0], "hwm": rss_mb()[1], "base_rss": base_rss, "events": len(run.engine.events)}
        if trace:
            current, peak = tracemalloc.get_traced_memory()
            result.update(current=current / 1e6, peak=peak / 1e6, run=made / 1e6)
    print(json.dumps(result))


def in_fresh_process(steps: int, trace: bool) -> dict[str, float]:
    args = [sys.executable, __file__, "--steps", str(steps), "--memory"] + (["--trace"] if trace else [])
    out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def first_frame(
    command: list[str],
    home: str,
    marker: bytes = b"return-1187",
    timeout: float = 30.0,
    probe: Callable[[int, int], None] | None = None,
) -> float:
    """Seconds from spawning `command` under a pty to `marker` appearing on its terminal;
    `probe(pid, terminal)` is called once it has, before the process is stopped."""
    master, slave = pty.openpty()
    import fcntl
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    env = dict(os.environ, TERM="xterm-256color", AGENT_TUI_HOME=home, COLUMNS=str(SIZE[0]), LINES=str(SIZE[1]))
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True)
    os.close(slave)
    seen = b""
    elapsed = float("nan")
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                seen += chunk
                # the escape sequences between segments do not split a word
                if marker in re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen):
                    elapsed = time.perf_counter() - start
                    if probe is not None:
                        probe(proc.pid, master)
                    break
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(master)
    return elapsed


def child_rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def drain(master: int, seconds: float) -> None:
    """Read what the terminal gets for `seconds` (a process blocked on a full pty draws nothing)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                os.read(master, 65536)
            except OSError:
                return


def resumed(steps: int, starts: int, settle: float) -> None:
    """`run --resume` of a `steps`-step run to its first frame, in turns with the json.loads floor; RSS."""
    from bench.commands import JSON_ONLY, make_transcript, wall

    world = str(ROOT / "bench" / "worlds" / "lookup_world.py")
    script = shutil.which("agent-tui") or str(Path(sys.executable).with_name("agent-tui"))
    with tempfile.TemporaryDirectory() as work:
        whole, unfinished, copy = (Path(work) / name for name in ("run.jsonl", "unfinished.jsonl", "resumed.jsonl"))
        made = time.perf_counter()
        make_transcript(whole, steps)
        print(f"  made the run in {time.perf_counter() - made:.1f} s", file=sys.stderr)
        lines = whole.read_bytes().splitlines(keepends=True)
        unfinished.write_bytes(b"".join(lines[:-1]))
        events = sum(1 for line in lines[1:-1] if b'"type":"tool_started"' not in line)
        marker = f"item-{steps}".encode()  # the last step's action, at the foot of the pane
        frames: list[float] = []
        floors: list[float] = []
        floor_cpu: list[float] = []
        rss: list[tuple[float, float]] = []

        def probe(pid: int, terminal: int) -> None:
            at_frame = child_rss_mb(pid)
            drain(terminal, settle)
            rss.append((at_frame, child_rss_mb(pid)))

        with tempfile.TemporaryDirectory() as home:
            for _ in range(starts):
                copy.write_bytes(unfinished.read_bytes())
                frames.append(first_frame([script, "run", world, "--resume", str(copy)], home, marker, 60.0, probe))
                floor, cpu = wall([sys.executable, "-c", JSON_ONLY, str(unfinished)])
                floors.append(floor)
                floor_cpu.append(cpu)
    frame, floor = statistics.median(frames), statistics.median(floors)
    print(f"run --resume of a {events:,}-event run, spawn to its last step drawn ({starts} runs, in turns): "
          f"median {frame:.3f} s, range {min(frames):.3f}-{max(frames):.3f} s, {frame / floor:.2f}x the floor   goal <= 1x")
    print(f"  floor, a process that json.loads every line: median {floor:.3f} s (CPU {statistics.median(floor_cpu):.3f} s)")
    print(f"  RSS of the resumed cockpit: {statistics.median(r for r, _ in rss):6.1f} MB at that frame, "
          f"{statistics.median(r for _, r in rss):6.1f} MB {settle:g} s later   goal <= 120 MB")


def import_time(modules: str) -> float:
    """Seconds of `import modules` by `python -X importtime` (the cumulative of the top-level ones)."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {modules}"], capture_output=True, text=True, cwd="/")
    total = 0
    for line in out.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)
        if m and not m.group(2).startswith(" "):
            total += int(m.group(1))
    return total / 1e6


def p95(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * 0.95))]


def ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"median {statistics.median(values) * 1000:6.2f} ms, p95 {p95 * 1000:6.2f} ms, max {values[-1] * 1000:6.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=at_least(1_000), default=50_000)
    parser.add_argument("--rounds", type=at_least(1), default=60)
    parser.add_argument("--starts", type=at_least(1), default=5)
    parser.add_argument("--steps-only", action="store_true", help="only the step timings (no memory, no start-up)")
    parser.add_argument("--resume-only", action="store_true", help="only `run --resume` of a long run (first frame, RSS)")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds after the resumed first frame to read RSS again")
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory:
        asyncio.run(memory(args.steps, args.trace))
        return

    print(f"cockpit benchmark (terminal {SIZE[0]}x{SIZE[1]}), load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.resume_only:
        resumed(args.steps, args.starts, args.settle)
        return
    _, _, small, shown_small, small_updated, small_drawn, small_frames = asyncio.run(step_times(500, args.rounds))
    mounted, filled, big, shown_big, big_updated, big_drawn, big_frames = asyncio.run(step_times(args.steps, args.rounds))
    print(f"one step through the cockpit to its state and widgets updated, {shown_small:,} events shown:   {ms(small_updated)}")
    print(f"one step through the cockpit to its state and widgets updated, {shown_big:,} events shown: {ms(big_updated)}")
    print(f"one step (2 events) to its frame drawn, {shown_small:,} events shown:   {ms(small_drawn)}   goal median <= 50 ms")
    print(f"one step (2 events) to its frame drawn, {shown_big:,} events shown: {ms(big_drawn)}   goal median <= 50 ms")
    print(f"  frames drawn per step: {statistics.mean(small_frames):.2f} / {statistics.mean(big_frames):.2f} (max {max(small_frames + big_frames)})")
    print(f"one step (2 events) appended + pilot.pause(), {shown_small:,} events shown:   {ms(small)}")
    print(f"one step (2 events) appended + pilot.pause(), {shown_big:,} events shown: {ms(big)}")
    print(f"  ratio of medians {shown_big:,} / {shown_small:,}: {statistics.median(big) / statistics.median(small):.2f}   goal: flat")
    print(f"  p95 {shown_big:,} / {shown_small:,} (to the frame): {p95(big_drawn) / p95(small_drawn):.2f}   goal <= 1.2")
    print(f"cockpit mounted on a {shown_big:,}-event run to its first frame: {mounted:7.3f} s")
    print(f"  ... to every event's rows figured (in the background, the steps above timed after it): {filled:7.3f} s")
    if args.steps_only:
        return

    traced = in_fresh_process(args.steps, trace=True)
    plain = in_fresh_process(args.steps, trace=False)
    print(
        f"memory of the cockpit holding {traced['events']:,} events: {traced['current']:6.1f} MB held "
        f"({traced['run']:.1f} MB of it the run itself: events, folded state, engine), {traced['peak']:6.1f} MB peak "
        f"(tracemalloc)   goal < 150 MB"
    )
    print(
        f"  RSS: {plain['rss']:6.1f} MB now, {plain['hwm']:6.1f} MB peak, {plain['rss'] - plain['base_rss']:6.1f} MB "
        f"over the process before the run was made (interpreter, Textual and imports: {plain['base_rss']:.1f} MB)"
    )

    script = shutil.which("agent-tui") or str(Path(sys.executable).with_name("agent-tui"))
    with tempfile.TemporaryDirectory() as home:
        frames = [first_frame([script, "run", "support", "--task", "return-1187"], home) for _ in range(args.starts)]
    imports_cli = [import_time("tui.cli") for _ in range(args.starts)]
    imports_app = [import_time("tui.cli, tui.app, scenarios") for _ in range(args.starts)]
    resumed(args.steps, args.starts, args.settle)
    print(f"agent-tui run support --task return-1187, spawn to the header on the terminal ({args.starts} runs): "
          f"median {statistics.median(frames):.3f} s, range {min(frames):.3f}-{max(frames):.3f} s")
    print(f"  import time (-X importtime): tui.cli {statistics.median(imports_cli):.3f} s, "
          f"tui.cli + tui.app + scenarios {statistics.median(imports_app):.3f} s (medians of {args.starts})")


if __name__ == "__main__":
    main()
