"""A test scenario whose policy can hang: for killing a headless run mid-way.

The `tick` tool appends its number to the file named by the `log` option, so
a test can count real executions across processes. With SLOW_HANG_AT=N in
the environment the policy, about to decide tick N, writes `<log>.hanging`
and sleeps, so a test can kill the process at a known point.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool

TICKS = 5


class SlowWorld:
    def __init__(self, log: str) -> None:
        self.log = Path(log)
        self.tools = [Tool("tick", "Write a tick to the log.", (Param("n", "integer"),), self.tick)]

    def tick(self, n: int) -> str:
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(f"{n}\n")
        return f"tick {n}"


def ticker(view) -> Decision:
    done = len(view.observations())
    if done >= TICKS:
        return Decision.final("All ticks are written.", f"{done} ticks")
    if os.environ.get("SLOW_HANG_AT") == str(done + 1):
        Path(os.environ["SLOW_HANG_MARK"]).write_text("hanging")
        time.sleep(120)
    return Decision.act(f"Tick {done + 1}.", "tick", n=done + 1)


SCENARIO = Scenario(
    name="slow",
    description="Ticks written to a log; the policy can hang on request (tests only).",
    tasks={"ticks": Task("ticks", "Write five ticks.")},
    policies={"ticker": lambda world, task: ScriptedPolicy("ticker", ticker)},
    make_world=lambda task, options: SlowWorld(options["log"]),
    budget=Budget(max_steps=20),
    repetition_threshold=None,
    options={"log": None},
)
