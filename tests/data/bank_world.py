"""A test scenario with an irreversible `transfer` that logs every real execution.

The `log` option names the file each transfer appends its amount to, so a test
can count executions across processes. With the `slow` option set, a transfer
writes `<log>.running` and then sleeps that many seconds (to signal a process
while the tool runs). The policy checks the balance, transfers 10, answers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool


class Bank:
    def __init__(self, options: dict[str, Any]) -> None:
        self.log = Path(options["log"])
        self.slow = float(options.get("slow") or 0)
        self.tools = [
            Tool("balance", "The balance.", (), lambda: "balance 100"),
            Tool("transfer", "Send money.", (Param("amount", "integer"),), self.transfer, kind="irreversible", timeout=None),
        ]

    def restore(self, executed) -> None:
        """The log file is the bank's only state, and it is already on disk."""

    def transfer(self, amount: int) -> str:
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(f"{amount}\n")
        if self.slow:
            Path(f"{self.log}.running").write_text("running")
            time.sleep(self.slow)
        return f"sent {amount}"


def payer(view) -> Decision:
    done = len(view.observations())
    if done == 0:
        return Decision.act("Check the balance first.", "balance")
    if done == 1:
        return Decision.act("Send 10.", "transfer", amount=10)
    return Decision.final("Paid.", "sent 10")


SCENARIO = Scenario(
    name="bank",
    description="A balance and an irreversible transfer that logs each execution (tests only).",
    tasks={"pay": Task("pay", "Pay 10.")},
    policies={"payer": lambda world, task: ScriptedPolicy("payer", payer)},
    make_world=lambda task, options: Bank(options),
    options={"log": "transfers.log", "slow": 0},
    budget=Budget(max_steps=10),
    repetition_threshold=None,
)
