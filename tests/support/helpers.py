"""Small builders shared by the engine tests."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool
from engine.sessions.run import Run, new_run


def script(*decisions: Decision | str, name: str = "script") -> ScriptedPolicy:
    """A policy that plays the given decisions in order, then answers "done"."""
    items = list(decisions)

    def decide(view):
        index = view.step - 1
        if index < len(items):
            return items[index]
        return Decision.final("nothing left", "done")

    return ScriptedPolicy(name, decide)


class CountingWorld:
    """Tools that count their executions: `echo` (ordinary), `pay` (irreversible), `stop` (exit)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.tools = [
            Tool("echo", "Echo the text.", (Param("text"),), self._run("echo"), timeout=None),
            Tool("pay", "Pay an amount.", (Param("amount", "integer"),), self._run("pay"), kind="irreversible", timeout=None),
            Tool("stop", "Hand over.", (Param("reason"),), kind="exit", outcome="handed_off", answer_param="reason"),
        ]

    def _run(self, name: str) -> Callable[..., str]:
        def run(**args) -> str:
            self.calls.append((name, args))
            return f"{name} ok {args}"

        return run


def counting_scenario(budget: Budget | None = None) -> Scenario:
    return Scenario(
        name="counting",
        description="test tools",
        tasks={"t": Task("t", "do the thing")},
        policies={"none": lambda w, t: script()},
        make_world=lambda task, options: CountingWorld(),
        budget=budget or Budget(max_steps=20),
    )


def counting_run(*decisions: Decision | str, budget: Budget | None = None, **kwargs) -> Run:
    return new_run(counting_scenario(budget), "t", script(*decisions), save=False, **kwargs)


def types(events: Iterable) -> list[str]:
    return [e.type for e in events]


def fail_writes_of(run: Run, kind: str) -> None:
    """Make the run's transcript refuse every line of event type `kind`, as a full disk would."""
    writer = run.writer
    write = writer.write  # type: ignore[union-attr]

    def failing(event_type: str, line: bytes) -> None:
        if event_type == kind:
            raise OSError(28, "No space left on device")
        write(event_type, line)

    writer.write = failing  # type: ignore[union-attr, method-assign]


def rejected_support_run(path: Path, reason: str = "the customer changed their mind") -> Run:
    """The support scenario's return-1187 saved to `path`, its irreversible call rejected
    with `reason`, run to its end and closed."""
    import scenarios

    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    run.engine.run()
    run.engine.reject(reason)
    run.engine.run()
    run.close()
    return run
