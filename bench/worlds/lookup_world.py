"""A scenario file for the engine benchmarks: one lookup tool with the `Tool` defaults.

The tool keeps the default timeout (10 s) and the policy looks up a new key
every step, so a long run measures what a real scenario file costs a step.
"""

from __future__ import annotations

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool


def lookup(key: str) -> str:
    return f"value of {key} is {len(key) * 7}"


class LookupWorld:
    def __init__(self) -> None:
        self.tools = [Tool("lookup", "Look a key up.", (Param("key"),), lookup)]


def looker(view) -> Decision:
    return Decision.act(f"I look up item {view.step}.", "lookup", key=f"item-{view.step}")


SCENARIO = Scenario(
    name="lookup",
    description="Look up one key a step (benchmarks).",
    tasks={"all": Task("all", "Look up every item.")},
    policies={"looker": lambda world, task: ScriptedPolicy("looker", looker)},
    make_world=lambda task, options: LookupWorld(),
    budget=Budget(max_steps=30_000),
    repetition_threshold=None,
)
