"""Key-press latency of the cockpit while a step is outstanding.

    python bench/cockpit_latency.py [--presses 30]

Goal (issue "prove it under faults"): the UI answers a key while a tool or a
policy is still running. The cockpit runs headless (`run_test`, 120x40); a
step is started with `n` and, while it is outstanding, `?` is sent N times
(each answered by `escape`). A press is timed from the key event reaching the
app's driver to the frame after the help screen is on top (a
`call_after_refresh` callback), so it counts dispatch, the binding, composing
the modal and drawing it. Keys are sent straight to the driver and the result
is polled every 0.5 ms: `pilot.press` waits for the process to go idle, which
it never does while a tool burns CPU.

Three conditions: idle (no step outstanding), a tool blocked on an event
(the hanging tool of the fault tests: it holds no GIL), and a tool computing
in pure Python (it competes for the GIL with the UI thread).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual import events  # noqa: E402

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from bench.options import at_least  # noqa: E402

SIZE = (120, 40)
POLL = 0.0005


class World:
    def __init__(self, release: threading.Event) -> None:
        self.release = release
        self.tools = [
            Tool("wait", "Blocks until released.", (Param("what"),), self._wait, timeout=None),
            Tool("burn", "Computes until released.", (Param("what"),), self._burn, timeout=None),
        ]

    def _wait(self, what: str) -> str:
        self.release.wait()
        return "released"

    def _burn(self, what: str) -> str:
        n = 0
        while not self.release.is_set():
            for i in range(10_000):
                n += i * i
        return f"burned {n}"


def make_run(tool: str | None, release: threading.Event):
    policy = lambda world, task: ScriptedPolicy(  # noqa: E731
        "p", lambda view: Decision.act("go", tool or "wait", what="x")
    )
    scenario = Scenario(
        name="latency",
        description="a step that stays outstanding",
        tasks={"t": Task("t", "Hold the step.")},
        policies={"p": policy},
        make_world=lambda task, options: World(release),
        budget=Budget(max_steps=10),
    )
    return new_run(scenario, "t", "p", save=False, interactive=True)


async def until(predicate, timeout: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError("the cockpit did not answer")
        await asyncio.sleep(POLL)


async def measure(tool: str | None, presses: int) -> list[float]:
    from tui.app import CockpitApp
    from tui.screens.dialogs import HelpScreen

    release = threading.Event()
    run = make_run(tool, release)
    app = CockpitApp(run)
    times: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        if tool is not None:
            await pilot.press("n")
            await until(lambda: app.busy)
            await asyncio.sleep(0.05)
        driver = app._driver
        for _ in range(presses):
            drawn = asyncio.Event()
            start = time.perf_counter()
            driver.send_message(events.Key("question_mark", "?"))
            await until(lambda: isinstance(app.screen, HelpScreen))
            app.screen.call_after_refresh(drawn.set)
            await drawn.wait()
            times.append(time.perf_counter() - start)
            if tool is not None:
                assert app.busy, "the step ended while measuring"
            driver.send_message(events.Key("escape", None))
            await until(lambda: not isinstance(app.screen, HelpScreen))
            await asyncio.sleep(0.01)
        release.set()
        await app.workers.wait_for_complete()
        await until(lambda: not app.busy)  # the step's WorkDone handled before the app closes
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=at_least(1), default=30)
    args = parser.parse_args()
    print(f"key '?' to help screen drawn, {args.presses} presses each (ms)")
    print(f"{'while':<34} {'median':>8} {'max':>8}")
    for label, tool in (("idle (no step outstanding)", None), ("a tool blocked (hanging)", "wait"), ("a tool computing in Python", "burn")):
        times = asyncio.run(measure(tool, args.presses))
        print(f"{label:<34} {statistics.median(times) * 1000:>8.1f} {max(times) * 1000:>8.1f}")


if __name__ == "__main__":
    main()
