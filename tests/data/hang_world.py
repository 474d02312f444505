"""A scenario whose policy hangs and cannot be cancelled (for the quit test)."""

import time

from engine import Decision, Scenario, ScriptedPolicy, Task


class World:
    tools = []


def hang(view):
    time.sleep(600)
    return Decision.final("too late", "late")


SCENARIO = Scenario(
    name="hang",
    description="a policy that never returns",
    tasks={"wait": Task("wait", "Wait for a policy that never answers.")},
    policies={"hang": lambda world, task: ScriptedPolicy("hang", hang)},
    make_world=lambda task, options: World(),
)
