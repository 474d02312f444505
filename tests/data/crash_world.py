"""A test scenario for killing headless runs at random points (tests/test_crash.py).

Every real tool execution appends one line `<tool> <step>.<index>` to the file
named by the `log` option, so a test counts executions across processes (a
killed run and its resume; options are saved in the header). Each call sleeps
the `sleep` option's seconds (default 0.02) so a run lasts long enough to be
killed in the middle of anything.

The policy works for STEPS steps, then answers. Every third step makes two
calls in one decision (a kill can fall between them); every fifth step's
first call is `send`, an irreversible tool (run with --approve all).
"""

from __future__ import annotations

import time

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool
from engine.core.events import Action

STEPS = 30


class CrashWorld:
    def __init__(self, log: str, pause: float) -> None:
        self.log = log
        self.pause = pause
        self.tools = [
            Tool("work", "Do one unit of work.", (Param("call"),), self._run("work")),
            Tool("send", "Send a message; cannot be taken back.", (Param("call"),), self._run("send"), kind="irreversible"),
        ]

    def _run(self, name: str):
        def run(call: str) -> str:
            time.sleep(self.pause / 2)
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(f"{name} {call}\n")
            time.sleep(self.pause / 2)
            return f"{name} {call} done"

        return run


def worker(view) -> Decision:
    step = view.step
    if step > STEPS:
        return Decision.final("All the work is done.", f"{STEPS} steps of work")
    first = "send" if step % 5 == 0 else "work"
    actions = [Action(tool=first, args={"call": f"{step}.0"})]
    if step % 3 == 0:
        actions.append(Action(tool="work", args={"call": f"{step}.1"}))
    return Decision(thought=f"Step {step}.", actions=actions)


SCENARIO = Scenario(
    name="crash",
    description="Tools that log every execution, for kill-and-resume tests.",
    tasks={"work": Task("work", f"Do {STEPS} steps of work.")},
    policies={"worker": lambda world, task: ScriptedPolicy("worker", worker)},
    make_world=lambda task, options: CrashWorld(options["log"], float(options.get("sleep", 0.02))),
    budget=Budget(max_steps=40),
    repetition_threshold=None,
    options={"log": None, "sleep": 0.02},
)
