"""The support desk (seed 002): order status, delivery estimates, returns.

`open_return_request` is irreversible (a colleague must act on it), so the
engine asks the operator before it runs; `hand_to_human` is an exit that ends
the run and is never executed. The scripted policy behaves like the seed's
fake model: for a return it checks the order, opens a request and answers
with its number (or says which call failed or was rejected); for the courier it asks again and again; for compensation it
hands over to a person.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from engine import Budget, Decision, Param, RunView, Scenario, ScriptedPolicy, Task, Tool, ToolError
from engine.core.events import Observed
from engine.core.policy import ObservationView

DELIVERED = "delivered"
ORDERS = {
    "1187": {"status": DELIVERED, "date": "26 October"},
    "1042": {"status": "in transit", "date": "3 November"},
}

TASKS = {
    "return-1187": Task(
        "return-1187",
        "The headphones from order 1187 are broken. I want to return them.",
        expected="R-1",
    ),
    "courier-1042": Task("courier-1042", "When does 1042 arrive? The courier said today."),
    "compensation-1042": Task("compensation-1042", "I want 20 € compensation because 1042 is late."),
}

REQUEST_NUMBER = re.compile(r"\bR-\d+\b")
NOT_DELIVERED = "The order is not delivered yet. You can return it after delivery."
THANKS = "You are welcome! Write if you have a question."


@dataclass
class SupportWorld:
    requests: list[str] = field(default_factory=list)
    tools: list[Tool] = field(init=False)

    def __post_init__(self) -> None:
        order = (Param("order_id", description="The order number, e.g. 1187."),)
        self.tools = [
            Tool("get_order_status", "Status and date of an order by its number.", order, self.order_status),
            Tool("estimate_delivery", "The delivery date the courier expects.", order, self.estimate_delivery),
            Tool(
                "open_return_request",
                "Opens a return request. A colleague approves it.",
                order,
                self.open_return_request,
                kind="irreversible",
            ),
            Tool.exit(
                "hand_to_human",
                "Hands the conversation to a colleague, with the reason.",
                Param("reason", description="Why a person must take over."),
                outcome="handed_off",
            ),
        ]

    def _order(self, order_id: str) -> dict[str, str]:
        order = ORDERS.get(order_id.strip())
        if order is None:
            raise ToolError(f"no order {order_id}")
        return order

    def order_status(self, order_id: str) -> str:
        order = self._order(order_id)
        return f"{order_id} — {order['status']}, delivery {order['date']}"

    def estimate_delivery(self, order_id: str) -> str:
        order = self._order(order_id)
        if order["status"] == DELIVERED:
            return f"{order_id} — already delivered"
        return f"{order_id} — expected delivery {order['date']}, no new scan"

    def open_return_request(self, order_id: str) -> str:
        order = self._order(order_id)
        if order["status"] != DELIVERED:
            raise ToolError(f"{order_id} is not delivered yet")
        request = f"R-{len(self.requests) + 1} for {order_id}"
        self.requests.append(request)
        return f"{request} — waits for a colleague"

    def restore(self, executed: Sequence[Observed]) -> None:
        """Rebuild the request list from a transcript's successful return requests."""
        self.requests = [
            o.text.split(" — ")[0] for o in executed if o.tool == "open_return_request" and o.executed and not o.error
        ]


def support_policy(view: RunView) -> Decision:
    """The seed's fake model, reading the task and the observations so far."""
    task = view.task
    observations = view.observations()
    n = len(observations)
    order_id = "1187" if "1187" in task else "1042"
    if "return" in task:
        return _return(order_id, observations)
    if "compensation" in task:
        if n == 0:
            return Decision.act("I check the order.", "get_order_status", order_id=order_id)
        return Decision.act("A person decides about compensation, not me.", "hand_to_human", reason=f"compensation for {order_id}")
    if "courier" in task:
        plan = "I ask the courier for the date." if n == 0 else "No change. I ask again."
        return Decision.act(plan, "estimate_delivery", order_id=order_id)
    return Decision.final("Nothing to do.", THANKS)


def _last(observations: Sequence[ObservationView], tool: str, order_id: str | None = None) -> ObservationView | None:
    """The latest observation of `tool` (of that order's, with `order_id`)."""
    for o in reversed(observations):
        if o.tool == tool and (order_id is None or str(o.args.get("order_id", "")).strip() == order_id):
            return o
    return None


def _return(order_id: str, observations: Sequence[ObservationView]) -> Decision:
    """A return: the status, then a request if the order was delivered, then an answer that
    says what the calls did (a call that failed or was rejected is never reported as done)."""
    request = _last(observations, "open_return_request")
    if request is not None:
        number = REQUEST_NUMBER.search(request.text)
        if request.error or number is None:
            return Decision.final(
                f"The return request was not opened ({request.text}).",
                f"I could not open a return for {order_id}: {request.text}. A colleague will write to you.",
            )
        return Decision.final(
            "The request is open.",
            f"I opened request {number.group()} to return {order_id}. A colleague will approve it and write to you.",
        )
    status = _last(observations, "get_order_status", order_id)
    if status is None:
        return Decision.act("First I check whether the order was delivered.", "get_order_status", order_id=order_id)
    if status.error:
        return Decision.final(
            f"The status check failed ({status.text}).",
            f"I could not check order {order_id}: {status.text}. A colleague will write to you.",
        )
    if DELIVERED in status.text and f"not {DELIVERED}" not in status.text:
        return Decision.act("It was delivered. I open a return request.", "open_return_request", order_id=order_id)
    return Decision.final("The order is not delivered yet.", NOT_DELIVERED)


def _support(world, task):
    return ScriptedPolicy("scripted", support_policy)


SCENARIO = Scenario(
    name="support",
    description="A customer-support desk: orders, deliveries, returns a colleague approves (seed 002).",
    tasks=TASKS,
    policies={"scripted": _support},
    make_world=lambda task, options: SupportWorld(),
    budget=Budget(max_steps=5, max_tokens=2000),
)
