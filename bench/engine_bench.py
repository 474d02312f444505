"""Engine throughput next to a bare seed-style loop, and transcript reading next to raw JSON.

    python bench/engine_bench.py [--steps 20000]

Prints steps per second, the per-step cost of the engine and of a bare loop
measured in the same run, their ratio, and the transcript read rate next to
json.loads over the same file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from engine.stored.transcript import read_transcript  # noqa: E402
from bench.options import at_least  # noqa: E402

COUNTER = {"n": 0}


def lookup(key: str) -> str:
    COUNTER["n"] += 1
    return f"value of {key} is {len(key) * 7}"


class World:
    tools = [Tool("lookup", "Look a key up.", (Param("key"),), lookup, timeout=None)]


def policy(view) -> Decision:
    return Decision.act(f"I look up item {view.step}.", "lookup", key=f"item-{view.step}")


def scenario(steps: int) -> Scenario:
    return Scenario(
        name="bench",
        description="",
        tasks={"t": Task("t", "Look up every item.")},
        policies={"p": lambda w, t: ScriptedPolicy("p", policy)},
        make_world=lambda task, options: World(),
        budget=Budget(max_steps=steps),
        repetition_threshold=None,
    )


ACTION = re.compile(r"^Action: (\w+)\[(.*)\]$", re.M)


def seed_step(step: int, tools: dict) -> tuple[str, str, str, str]:
    """One step of the seed's loop: the policy's text, the action read from it by a
    regex, run from a dict; errors become observations. Returns the text, the tool,
    its argument and the observation."""
    output = f"Thought: I look up item {step}.\nAction: lookup[item-{step}]"
    m = ACTION.search(output)
    if not m:
        return output, "", "", "ERROR: invalid format"
    name, arg = m.groups()
    try:
        observation = str(tools[name](arg)) if name in tools else f"ERROR: no tool {name}"
    except Exception as exc:
        observation = f"ERROR: {type(exc).__name__}"
    return output, name, arg, observation[:4000]


def bare_loop(steps: int) -> int:
    """The seed's loop, the history kept as a list of lines."""
    tools = {"lookup": lookup}
    history = ["Question: Look up every item."]
    for step in range(1, steps + 1):
        output, _, _, observation = seed_step(step, tools)
        history.append(output)
        history.append("Observation: " + observation)
    return steps


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=at_least(1), default=20_000)
    args = parser.parse_args()
    steps = args.steps

    def engine_run(save: Path | None) -> None:
        run = new_run(scenario(steps), "t", "p", save=save is not None, out=save)
        run.engine.run()
        assert run.engine.state.step == steps, run.engine.state.ended
        run.close()

    bare = min(timed(bare_loop, steps) for _ in range(3))
    in_memory = min(timed(engine_run, None) for _ in range(2))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        saved = timed(engine_run, path)
        lines = path.read_bytes().splitlines()
        size_mb = path.stat().st_size / 1e6
        raw = min(timed(lambda: [json.loads(line) for line in lines]) for _ in range(3))
        read = min(timed(read_transcript, path) for _ in range(3))
        events = len(lines) - 1

    print(f"steps: {steps}")
    print(f"bare seed-style loop:        {bare * 1e6 / steps:8.2f} us/step  ({steps / bare:,.0f} steps/s)")
    print(f"engine, in memory:           {in_memory * 1e6 / steps:8.2f} us/step  ({steps / in_memory:,.0f} steps/s)")
    print(f"engine, writing transcript:  {saved * 1e6 / steps:8.2f} us/step  ({steps / saved:,.0f} steps/s)")
    print(f"engine / bare loop:          {in_memory / bare:8.1f}x (in memory), {saved / bare:.1f}x (saving)")
    print(f"transcript: {events} events, {size_mb:.1f} MB")
    print(f"raw json.loads per line:     {raw:8.3f} s  ({events / raw:,.0f} events/s)")
    print(f"read_transcript (validated): {read:8.3f} s  ({events / read:,.0f} events/s)")
    print(f"read_transcript / raw json:  {read / raw:8.1f}x")


if __name__ == "__main__":
    main()
