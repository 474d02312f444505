"""A scenario file for the sealed-rules tests: irreversible refunds the engine must never run unasked.

`agent-tui run tests/support/refund_world.py` loads it like any scenario file. The policy
`notify-then-refund` asks to notify the customer (irreversible) at step 1, then
refunds orders 1, 2 and 3 at steps 2 to 4, and answers at step 5. The world keeps
every call it ran (`calls`), rebuilt from the recorded executions on resume and fork.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from engine import Decision, Param, RunView, Scenario, ScriptedPolicy, Task, Tool
from engine.core.events import Observed

PLAN = [
    Decision.act("Tell the customer first.", "notify", order="1"),
    Decision.act("Refund the first order.", "refund", order="1"),
    Decision.act("Refund the second order.", "refund", order="2"),
    Decision.act("Refund the third order.", "refund", order="3"),
]


@dataclass
class RefundWorld:
    calls: list[str] = field(default_factory=list)
    tools: list[Tool] = field(init=False)

    def __post_init__(self) -> None:
        order = (Param("order", description="The order number."),)
        self.tools = [
            Tool("refund", "Pay an order's money back.", order, lambda order: self._ran("refund", order), kind="irreversible"),
            Tool("notify", "Write to the customer.", order, lambda order: self._ran("notify", order), kind="irreversible"),
        ]

    def _ran(self, tool: str, order: str) -> str:
        self.calls.append(f"{tool} {order}")
        return f"{tool} done for order {order}"

    def restore(self, executed: Sequence[Observed]) -> None:
        self.calls = [f"{e.tool} {e.args.get('order')}" for e in executed]


def _plan(view: RunView) -> Decision:
    return PLAN[view.step - 1] if view.step <= len(PLAN) else Decision.final("All refunded.", "done")


SCENARIO = Scenario(
    name="refunds",
    description="Irreversible refunds (the sealed-rules tests).",
    tasks={"refund": Task("refund", "Refund orders 1, 2 and 3.")},
    policies={"notify-then-refund": lambda world, task: ScriptedPolicy("notify-then-refund", _plan)},
    make_world=lambda task, options: RefundWorld(),
)
