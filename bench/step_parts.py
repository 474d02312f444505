"""What each part of an engine step costs, next to the bare loop, measured in one run.

    python bench/step_parts.py [--steps 20000] [--repeat 5]

The engine's in-memory step (`bench/engine_figures.py`, row 2) is compared
with its floor, the loop of the parts it keeps (`floor_loop`, goal <= 2x), and
with a bare Python loop (the goal of 12 us, ten bare steps on the machine the
goal was set on, is retired: it is below that floor). This script times, each on its own and in CPU time, the
parts one step of the lookup world (`bench/worlds/lookup_world.py`, a
scenario file whose tool keeps the `Tool` defaults) is made of, using the
objects of a real run:

- what a scenario file and the run's promises fix: the scenario's policy
  (`Decision.act` builds a validated `Action`: scenario code, public API),
  the view it is given, the check of its decision, the tool's arguments
  checked against its parameters, the tool called under its deadline (the
  timeout promise), the two events of the step built and turned into their
  JSON lines (the transcript format);
- the rest of the engine's step: the fold of the two events into the run's
  state, the approval rules, the event log, and the engine's own code (the
  step measured whole minus every part timed).

Each part is the best of `--repeat` timings of `--steps` calls (timeit), so
the figures are what the part costs at least; the whole step is the best of
`--repeat` headless runs of `--steps` steps.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scenarios  # noqa: E402
from bench.engine_figures import WORLD, bare_loop, cpu_timed, engine_run  # noqa: E402
from bench.options import at_least  # noqa: E402
from engine.core.approvals import decide_effect  # noqa: E402
from engine.core.collector import collector_paused  # noqa: E402
from engine.core.decisions import check_decision  # noqa: E402
from engine.core.events import DecisionMade, Observed, Usage  # noqa: E402
from engine.core.policy import RunView  # noqa: E402
from engine.core.state import fold  # noqa: E402
from engine.core.tools import DEFAULT_OBSERVATION_CAP, execute, validate_args  # noqa: E402
from engine.sessions.run import new_run  # noqa: E402
from engine.core.eventlog import EventLog  # noqa: E402


def best(fn: Callable[[], Any], number: int, repeat: int) -> float:
    """The least CPU time of one call of `fn`, in microseconds."""
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=time.process_time)) * 1e6 / number


def parts(steps: int, repeat: int) -> dict[str, float]:
    """Microseconds of CPU time a step, by part, for the lookup world's objects at step 5."""
    scenario = scenarios.load_file(WORLD)
    run = new_run(scenario, "all", "looker", save=False, budget=scenario.budget.with_limit("steps", 5))
    engine = run.engine
    engine.run()
    decision_event = next(e for e in reversed(engine.events) if e.type == "decision")
    observation = next(e for e in reversed(engine.events) if e.type == "observation")
    tool = engine.tools["lookup"]
    view = engine.view()
    decision = engine.policy.decide(view)
    args = dict(decision.actions[0].args)
    fields = dict(decision_event.__dict__)
    observed = dict(observation.__dict__)
    to_json, observation_json = DecisionMade.__pydantic_serializer__.to_json, Observed.__pydantic_serializer__.to_json
    state = fold(engine.header, [])
    log = EventLog([])
    line = to_json(decision_event)
    run.close()

    def events() -> None:
        DecisionMade.trusted(**fields)
        Observed.trusted(**observed)

    def lines() -> None:
        to_json(decision_event)
        observation_json(observation)

    def folded() -> None:
        state.apply(decision_event, decision_words=8)
        state.apply(observation)

    def logged() -> None:
        log.append(decision_event, line)
        log.append(observation, line)

    n, r = steps, repeat
    return {
        "policy (scenario code)": best(lambda: engine.policy.decide(view), n, r),
        "view": best(engine.view, n, r),
        "decision check": best(lambda: check_decision(decision), n, r),
        "arguments check": best(lambda: validate_args(tool, args), n, r),
        "tool under its deadline": best(lambda: execute(tool, args, cap=DEFAULT_OBSERVATION_CAP, clock=time.time), n, r),
        "two events built": best(events, n, r),
        "two JSON lines": best(lines, n, r),
        "fold of two events": best(folded, n, r),
        "approval rules": best(lambda: decide_effect(state.rules, tool, args, args), n, r),
        "event log, two events": best(logged, n, r),
        "usage estimate": best(lambda: Usage.trusted(input_tokens=10, output_tokens=11, estimated=True), n, r),
    }


def floor_loop(steps: int, out: Path | None = None, *, events: bool = True) -> float:
    """CPU seconds of a loop that does only the kept parts, with new objects every step
    as a run makes them: a view, the scenario's policy, the checks, the tool under its
    deadline, the two events and their JSON lines, the events kept (as a run keeps its
    history), with the garbage collector paused. No fold, no rules, no event log: the
    least an engine made of these parts costs. With `out`, the lines are also written
    there (buffered, as the bare loop writes its own). Without `events`, no event is
    built: the policy's decision, the call and its result are what is kept."""
    scenario = scenarios.load_file(WORLD)
    run = new_run(scenario, "all", "looker", save=False, budget=scenario.budget.with_limit("steps", 1))
    engine, policy = run.engine, run.engine.policy
    tool, tools = engine.tools["lookup"], list(engine.tools.values())
    to_json, observation_json = DecisionMade.__pydantic_serializer__.to_json, Observed.__pydantic_serializer__.to_json
    kept: list[Any] = []
    clock = time.time
    f = open(out, "wb") if out is not None else None
    with collector_paused():
        started = time.process_time()
        for step in range(1, steps + 1):
            view = RunView(task="Look up every item.", tools=tools, history=kept, step=step)
            decision = policy.decide(view)
            check_decision(decision)
            action = decision.actions[0].with_call_id(f"s{step}.0")
            args = validate_args(tool, action.args)
            result = execute(tool, args, cap=DEFAULT_OBSERVATION_CAP, clock=clock)
            if not events:
                kept.append((decision, action, result))
                continue
            usage = Usage.trusted(input_tokens=step, output_tokens=11, estimated=True)
            made = DecisionMade.trusted(at=clock(), step=step, policy=policy.name, thought=decision.thought, actions=[action], usage=usage, duration=0.0)
            seen = Observed.trusted(at=clock(), step=step, index=0, tool=tool.name, args=args, text=result.text, executed=True, duration=result.duration)
            kept.append((made, made_line := to_json(made), seen, seen_line := observation_json(seen)))
            if f is not None:
                f.write(made_line + b"\n" + seen_line + b"\n")
        if f is not None:
            f.close()
        elapsed = time.process_time() - started
    run.close()
    return elapsed


FIXED = ("policy (scenario code)", "view", "decision check", "arguments check", "tool under its deadline", "two events built", "two JSON lines")
"""The parts a scenario file (its policy, its tool) and the run's promises (the tool's
timeout, the transcript's lines of the public event classes) keep in every step."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=at_least(1_000), default=20_000)
    parser.add_argument("--repeat", type=at_least(1), default=5)
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    bare = min(timeit.repeat(lambda: bare_loop(args.steps, None), number=1, repeat=args.repeat, timer=time.process_time))
    bare_us = bare * 1e6 / args.steps
    whole_us = min(engine_run(args.steps, None).cpu for _ in range(args.repeat)) * 1e6 / args.steps
    floor_us = min(floor_loop(args.steps) for _ in range(args.repeat)) * 1e6 / args.steps
    bare_floor_us = min(floor_loop(args.steps, events=False) for _ in range(args.repeat)) * 1e6 / args.steps
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "lines.jsonl"
        bare_writing_us = min(cpu_timed(bare_loop, args.steps, file) for _ in range(args.repeat)) * 1e6 / args.steps
        floor_writing_us = min(floor_loop(args.steps, file) for _ in range(args.repeat)) * 1e6 / args.steps
        whole_writing_us = min(engine_run(args.steps, Path(tmp) / f"run{n}.jsonl").cpu for n in range(args.repeat)) * 1e6 / args.steps
    timed = parts(args.steps, args.repeat)
    fixed = sum(timed[name] for name in FIXED)
    print(f"CPU time a step, best of {args.repeat} ({args.steps:,} calls or steps each)")
    print(f"  {'bare loop step':<28}{bare_us:8.2f} us   1.0x")
    print(f"  {'engine step, whole':<28}{whole_us:8.2f} us  {whole_us / bare_us:4.0f}x   (goal: 10x the bare loop)")
    for name, us in timed.items():
        mark = "*" if name in FIXED else " "
        print(f"  {mark} {name:<26}{us:8.2f} us  {us / bare_us:4.1f}x")
    rest = whole_us - sum(timed.values())
    own = "the rest"
    print(f"    {own:<26}{rest:8.2f} us  {rest / bare_us:4.1f}x   (the whole step minus the parts: the engine's own code, and what the parts cost in a run beyond their best alone)")
    print(f"* kept by the scenario file and the run's promises, each timed alone: {fixed:.2f} us a step, {fixed / bare_us:.1f}x the bare loop")
    print(f"  the same parts in a loop of their own, new objects every step: {floor_us:.2f} us a step, {floor_us / bare_us:.1f}x the bare loop")
    print(f"  the engine's step against that floor: {whole_us / floor_us:.2f}x (goal <= 2x)")
    print(f"  the same loop building no event (no record of the step): {bare_floor_us:.2f} us a step, {bare_floor_us / bare_us:.1f}x the bare loop")
    print(f"  the goal (10x) leaves {10 * bare_us - floor_us:.2f} us a step for the fold, the rules, the limits, the event log and the engine's own code")
    print("writing the transcript, CPU time a step:")
    print(f"  bare loop writing its lines {bare_writing_us:.2f} us; engine {whole_writing_us:.2f} us ({whole_writing_us / bare_writing_us:.1f}x, goal 3x); "
          f"the kept parts' loop writing its lines {floor_writing_us:.2f} us ({floor_writing_us / bare_writing_us:.1f}x)")
    print(f"  the goal (3x) leaves {3 * bare_writing_us - floor_writing_us:.2f} us a step for the fold, the rules, the limits, the event log, "
          "the crash promises' writes and the engine's own code")


if __name__ == "__main__":
    main()
