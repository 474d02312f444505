"""Budget gauges: steps, tokens, cost and time against their limits, and the context chart.

Each gauge is a bar with numbers; at the budget's warning fraction (80 % by
default) it takes the `-warning` class, at the limit `-alarm`. Below them a
sparkline of the input tokens of every step shows the context growing.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from engine.core.amounts import amount
from engine.core.events import Budget, BudgetKind

KINDS: tuple[BudgetKind, ...] = ("steps", "tokens", "cost", "seconds")
LABELS = {"steps": "steps", "tokens": "tokens", "cost": "cost", "seconds": "time"}
BAR_WIDTH = 14


def budget_level(used: float, limit: float | None, warn_at: float = 0.8) -> str:
    """"ok", "warning" (at `warn_at` of the limit) or "alarm" (at the limit)."""
    if limit is None or limit <= 0:
        return "ok"
    if used >= limit:
        return "alarm"
    if used >= warn_at * limit:
        return "warning"
    return "ok"


class Gauge(Static):
    """One budget kind as a bar with `used/limit`, or `used · no limit`."""

    def __init__(self, kind: BudgetKind) -> None:
        super().__init__(id=f"gauge-{kind}", classes="gauge", markup=False)
        self.kind = kind
        self.used: float = 0.0
        self.limit: float | None = None
        self.level = "ok"

    def set_value(self, used: float, limit: float | None, warn_at: float = 0.8) -> None:
        self.used, self.limit = used, limit
        level = budget_level(used, limit, warn_at)
        self.level = level
        self.set_class(level == "warning", "-warning")
        self.set_class(level == "alarm", "-alarm")
        self.update(self.line())

    def line(self) -> Text:
        text = Text()
        text.append(f"{LABELS[self.kind]:<7}")
        if self.limit is None:
            text.append("·" * BAR_WIDTH, style="dim")
            text.append(f" {amount(self.kind, self.used)} · no limit")
            return text
        fraction = 0.0 if self.limit <= 0 else min(1.0, self.used / self.limit)
        filled = round(fraction * BAR_WIDTH)
        if self.used > 0 and filled == 0:
            filled = 1
        text.append("█" * filled)
        text.append("░" * (BAR_WIDTH - filled), style="dim")
        text.append(f" {amount(self.kind, self.used)}/{amount(self.kind, self.limit)}")
        return text


class BudgetGauges(Vertical):
    """The four gauges and the input-tokens-per-step sparkline."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)

    def compose(self) -> ComposeResult:
        for kind in KINDS:
            yield Gauge(kind)
        yield Static(Text("context (input tokens per step)", style="dim"), id="context-label", markup=False)
        yield Sparkline([], id="context-chart")
        yield Static("", id="context-numbers", markup=False)

    def gauge(self, kind: BudgetKind) -> Gauge:
        return self.query_one(f"#gauge-{kind}", Gauge)

    def update_state(self, budget: Budget, used: dict[str, float], input_tokens_per_step: list[int]) -> None:
        for kind in KINDS:
            self.gauge(kind).set_value(used[kind], budget.limit(kind), budget.warn_at)
        chart = self.query_one("#context-chart", Sparkline)
        chart.data = list(input_tokens_per_step)
        numbers = self.query_one("#context-numbers", Static)
        if len(input_tokens_per_step) == 1:
            numbers.update(Text(f"step 1: {input_tokens_per_step[0]}", style="dim"))
        elif input_tokens_per_step:
            first, last = input_tokens_per_step[0], input_tokens_per_step[-1]
            numbers.update(Text(f"step 1: {first} → step {len(input_tokens_per_step)}: {last}", style="dim"))
        else:
            numbers.update(Text("no steps yet", style="dim"))
