"""The engine's figures, each next to its baseline measured in the same run.

    python bench/engine_figures.py [--steps 30000] [--long 100000] [--repeat 2]

1. A headless run of a scenario file (`bench/worlds/lookup_world.py`, whose
   tool keeps the `Tool` defaults: a 10 s timeout) writing its transcript,
   next to a bare Python loop that writes the same JSON lines (goal <= 3x).
2. The same run in memory, per step (goal <= 12 us), next to the bare loop
   without the file.
3. Flatness: the last 3,000 steps of the run against the first 3,000
   (goal <= 1.1x), the last 10,000 of a `--long` run against the first
   10,000, and the longest garbage-collector pause (goal: none over 20 ms).
4. The model policy building its request at step 10,000 of a run (goal
   <= 1 ms, growing only with the new messages), next to building the
   request at step 10 and at step 40,000 (`--model-long`) in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scenarios  # noqa: E402
from bench.engine_bench import seed_step  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from bench.options import at_least  # noqa: E402

WORLD = Path(__file__).resolve().parent / "worlds" / "lookup_world.py"


def lookup(key: str) -> str:
    return f"value of {key} is {len(key) * 7}"


def bare_loop(steps: int, out: Path | None) -> None:
    """The seed's loop (a policy writes text, a regex reads the action, a dict runs
    it), writing a decision line and an observation line a step as the transcript
    holds them, when `out` is given."""
    tools = {"lookup": lookup}
    history = ["Question: Look up every item."]
    f = open(out, "w", encoding="utf-8") if out is not None else None
    dumps = json.dumps
    clock = time.time
    for step in range(1, steps + 1):
        started = clock()
        output, name, arg, observation = seed_step(step, tools)
        history.append(output)
        history.append("Observation: " + observation)
        if f is not None:
            f.write(
                dumps(
                    {
                        "at": clock(), "type": "decision", "step": step, "policy": "looker",
                        "thought": f"I look up item {step}.",
                        "actions": [{"tool": name, "args": {"key": arg}, "call_id": f"s{step}.0", "args_error": None}],
                        "answer": None, "parse_error": None, "raw": None,
                        "usage": {"input_tokens": 5, "output_tokens": 9, "estimated": True},
                        "duration": clock() - started,
                    }
                )
                + "\n"
            )
            f.write(
                dumps(
                    {
                        "at": clock(), "type": "observation", "step": step, "index": 0, "tool": name,
                        "args": {"key": arg}, "text": observation, "error": False, "executed": True,
                        "truncated": False, "duration": 0.0,
                    }
                )
                + "\n"
            )
    if f is not None:
        f.close()


class GcPauses:
    """The garbage collector's pauses, from gc.callbacks."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.pauses.append((info["generation"], time.perf_counter() - self._start))

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


class RunFigures(NamedTuple):
    total: float
    """Wall time of the run, in seconds."""
    blocks: list[float]
    """Wall time of each block of steps."""
    cpu: float
    """CPU time of the run (user + system), which a loaded machine moves less."""
    cpu_blocks: list[float]
    """CPU time of each block of steps."""


def engine_run(steps: int, out: Path | None, block: int = 0) -> RunFigures:
    """A headless run (`Engine.run`, as `agent-tui run --headless` drives it) of
    `steps` steps of the lookup world: its times, in all and by blocks of `block` steps."""
    scenario = scenarios.load_file(WORLD)
    run = new_run(scenario, "all", "looker", save=out is not None, out=out, budget=scenario.budget.with_limit("steps", steps))
    engine = run.engine
    blocks: list[float] = []
    cpu_blocks: list[float] = []
    marks = [0.0, 0.0]

    def mark_block() -> bool:
        if block and engine.state.step == (len(blocks) + 1) * block and not engine.state.queue:
            now, cpu_now = time.perf_counter(), time.process_time()
            blocks.append(now - marks[0])
            cpu_blocks.append(cpu_now - marks[1])
            marks[:] = [now, cpu_now]
        return False

    cpu = marks[1] = time.process_time()
    start = marks[0] = time.perf_counter()
    engine.run(should_stop=mark_block)
    end = time.perf_counter()
    cpu_end = time.process_time()
    if block and len(blocks) < steps // block:
        blocks.append(end - marks[0])  # the last block ends with the run
        cpu_blocks.append(cpu_end - marks[1])
    run.close()
    assert engine.state.step == steps, (engine.state.step, engine.state.ended)
    return RunFigures(end - start, blocks, cpu_end - cpu, cpu_blocks)


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def cpu_timed(fn, *args) -> float:
    """CPU time: on a shared machine the load moves it less than wall time."""
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


class RequestFigures(NamedTuple):
    at_10: float
    """ms to build the request at step 10."""
    same_view: float
    """ms to build it again at step `steps`, for the same view."""
    next_step: float
    """ms at step `steps` + 1, after one more step (median of 7)."""
    from_scratch: float
    """ms to build every message at step `steps` (what each request cost before)."""
    long_next_step: float
    """ms after one more step at step `long`."""


def model_request_figures(steps: int, long: int) -> RequestFigures:
    """The model policy building its request at step 10, at step `steps` and at step `long`."""
    from engine.model.policy import ModelConfig, ModelPolicy
    from engine.model.wire import build_messages

    scenario = scenarios.load_file(WORLD)
    run = new_run(scenario, "all", "looker", save=False, budget=scenario.budget.with_limit("steps", max(steps, long) + 20))
    policy = ModelPolicy(ModelConfig(model="bench", base_url="http://127.0.0.1:9/v1"))
    engine = run.engine

    def build_ms() -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            policy.request_body(engine.view())
            best = min(best, time.perf_counter() - start)
        return best * 1e3

    def after_a_step() -> float:
        times = []
        for _ in range(7):
            engine.step()
            start = time.perf_counter()
            policy.request_body(engine.view())
            times.append((time.perf_counter() - start) * 1e3)
        return sorted(times)[len(times) // 2]

    # The policy sees every step, as it would if it made them.
    while engine.state.step < 10:
        policy.request_body(engine.view())
        engine.step()
    at_10 = build_ms()
    while engine.state.step < steps:
        policy.request_body(engine.view())
        engine.step()
    same_view = build_ms()
    start = time.perf_counter()
    build_messages(engine.view(), "tools")
    from_scratch = (time.perf_counter() - start) * 1e3
    next_step = after_a_step()
    while engine.state.step < long:  # on to the long point; the policy then reads the steps it missed once
        engine.step()
    policy.request_body(engine.view())
    return RequestFigures(at_10, same_view, next_step, from_scratch, after_a_step())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=at_least(6_000, "flatness compares two blocks of 3,000 steps"), default=30_000)
    parser.add_argument("--long", type=at_least(20_000, "two blocks of 10,000 steps; --skip-long leaves that run out"), default=100_000)
    parser.add_argument("--repeat", type=at_least(1), default=2)
    parser.add_argument("--model-steps", type=at_least(10), default=10_000)
    parser.add_argument("--model-long", type=int, default=40_000, help="the second point of the model request's figures")
    parser.add_argument("--skip-long", action="store_true", help="leave out the --long run")
    args = parser.parse_args()
    if args.model_long <= args.model_steps:
        parser.error("--model-long takes more steps than --model-steps")
    steps = args.steps
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")

    with tempfile.TemporaryDirectory() as tmp:
        bare_file = Path(tmp) / "bare.jsonl"
        bare_saving = min(timed(bare_loop, steps, bare_file) for _ in range(args.repeat + 1))
        bare_memory = min(timed(bare_loop, steps, None) for _ in range(args.repeat + 1))
        bare_saving_cpu = min(cpu_timed(bare_loop, steps, bare_file) for _ in range(args.repeat + 1))
        bare_memory_cpu = min(cpu_timed(bare_loop, steps, None) for _ in range(args.repeat + 1))
        saving, saving_cpu = [], []
        for n in range(args.repeat):
            out = Path(tmp) / f"engine{n}.jsonl"
            total, _, cpu, _ = engine_run(steps, out)
            saving.append(total)
            saving_cpu.append(cpu)
        memory = [engine_run(steps, None, block=3000) for _ in range(args.repeat)]
        bare_size = bare_file.stat().st_size / 1e6
        engine_size = out.stat().st_size / 1e6

    print(f"1. {steps:,}-step headless run of a scenario file (Tool defaults) writing its transcript ({engine_size:.1f} MB)")
    print(f"   engine: {min(saving):.2f} s ({steps / min(saving):,.0f} steps/s); bare loop writing the same JSON lines "
          f"({bare_size:.1f} MB): {bare_saving:.3f} s; ratio {min(saving) / bare_saving:.1f}x (goal <= 3x)")
    print(f"   CPU time: engine {min(saving_cpu):.2f} s, bare loop {bare_saving_cpu:.3f} s; ratio {min(saving_cpu) / bare_saving_cpu:.1f}x")
    best_memory = min(r.total for r in memory)
    best_memory_cpu = min(r.cpu for r in memory)
    print(f"2. the same in memory: {best_memory * 1e6 / steps:.1f} us a step (goal <= 12); bare loop "
          f"{bare_memory * 1e6 / steps:.2f} us; ratio {best_memory / bare_memory:.0f}x")
    print(f"   CPU time a step: engine {best_memory_cpu * 1e6 / steps:.1f} us, bare loop {bare_memory_cpu * 1e6 / steps:.2f} us; "
          f"ratio {best_memory_cpu / bare_memory_cpu:.0f}x")
    flat = [r.blocks[-1] / r.blocks[0] for r in memory]
    flat_cpu = [r.cpu_blocks[-1] / r.cpu_blocks[0] for r in memory]
    print(f"3. last 3,000 steps / first 3,000 of {steps:,}: {', '.join(f'{r:.2f}x' for r in flat)} (goal <= 1.1x); "
          f"in CPU time {', '.join(f'{r:.2f}x' for r in flat_cpu)}")

    if not args.skip_long:
        with GcPauses() as pauses:
            total, blocks, _, cpu_blocks = engine_run(args.long, None, block=10_000)
        worst = max((p for _, p in pauses.pauses), default=0.0)
        full = [p for g, p in pauses.pauses if g == 2]
        print(f"   {args.long:,} steps in memory: {total:.1f} s; last 10,000 / first 10,000: {blocks[-1] / blocks[0]:.2f}x; "
              f"blocks {', '.join(f'{b:.2f}' for b in blocks)} s")
        print(f"   in CPU time: last 10,000 / first 10,000: {cpu_blocks[-1] / cpu_blocks[0]:.2f}x; "
              f"blocks {', '.join(f'{b:.2f}' for b in cpu_blocks)} s")
        print(f"   GC: {len(pauses.pauses)} collections, {len(full)} full; longest pause {worst * 1e3:.1f} ms "
              f"(full: {max(full, default=0) * 1e3:.1f} ms) (goal: none over 20 ms)")

    req = model_request_figures(args.model_steps, args.model_long)
    print(f"4. model request at step {args.model_steps:,}: {req.next_step:.3f} ms after one more step (median of 7), "
          f"{req.same_view:.3f} ms for the same view again (goal <= 1 ms); at step 10: {req.at_10:.3f} ms; every message "
          f"built from scratch at step {args.model_steps:,}: {req.from_scratch:.1f} ms")
    print(f"   at step {args.model_long:,}: {req.long_next_step:.3f} ms after one more step, "
          f"{req.long_next_step / req.next_step:.2f}x step {args.model_steps:,} (goal: growing with the new messages only)")


if __name__ == "__main__":
    main()
