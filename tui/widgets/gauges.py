"""Budget gauges: steps, tokens, cost and time against their limits, the context chart, and
tokens and dollars per policy with their sum once a second policy has decided.

Each gauge is a bar with numbers; at the budget's warning fraction (80 % by
default) it takes the `-warning` class, at the limit `-alarm`. Below them a
sparkline of the input tokens of every step shows the context growing.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Vertical
from textual.renderables.sparkline import Sparkline as SparklineRenderable
from textual.widgets import Sparkline, Static

from engine.core.amounts import amount, short_amount
from engine.core.events import Budget, BudgetKind
from engine.core.state import PolicyUsage
from engine.core.text import clean
from tui.widgets.extremes import SeriesExtremes
from tui.widgets.sparkline import QuickSparkline, SparklineStrips

KINDS: tuple[BudgetKind, ...] = ("steps", "tokens", "cost", "seconds")
LABELS = {"steps": "steps", "tokens": "tokens", "cost": "cost", "seconds": "time"}
BAR_WIDTH = 14
NUMBERS_WIDTH = 16
"""Cells kept for a limited gauge's numbers (` $0.1234/$1.0000`), so its bars are as long
as the others'; longer numbers shorten the bar of their gauge only."""
LINE_WIDTH = 44
"""A gauge's width in the widest side panel (before the first layout tells it its own)."""


def budget_level(used: float, limit: float | None, warn_at: float = 0.8) -> str:
    """"ok", "warning" (at `warn_at` of the limit) or "alarm" (at the limit)."""
    if limit is None or limit <= 0:
        return "ok"
    if used >= limit:
        return "alarm"
    if used >= warn_at * limit:
        return "warning"
    return "ok"


def append_bar(text: Text, fraction: float, width: int) -> None:
    """`███░░░` for `fraction` (0 to 1) of `width` cells; any fraction above 0 fills one cell at least."""
    fraction = max(0.0, min(1.0, fraction))
    filled = round(fraction * width)
    if fraction > 0 and filled == 0:
        filled = 1
    text.append("█" * filled)
    text.append("░" * (width - filled), style="dim")


class Gauge(Static):
    """One budget kind as a bar with `used/limit`, or `used · no limit`."""

    def __init__(self, kind: BudgetKind) -> None:
        super().__init__(id=f"gauge-{kind}", classes="gauge", markup=False)
        self.kind = kind
        self.used: float = 0.0
        self.limit: float | None = None
        self.level = "ok"
        self.shown: tuple[float, float | None, str] | None = None
        """What the gauge last drew (a seek that changes nothing redraws nothing)."""

    def set_value(self, used: float, limit: float | None, warn_at: float = 0.8) -> None:
        level = budget_level(used, limit, warn_at)
        if (used, limit, level) == self.shown:
            return
        self.shown = (used, limit, level)
        self.used, self.limit = used, limit
        self.level = level
        self.set_class(level == "warning", "-warning")
        self.set_class(level == "alarm", "-alarm")
        self.update(self.line(), layout=False)  # one line, whatever it says

    def on_resize(self) -> None:
        if self.shown is not None:
            self.update(self.line(), layout=False)

    def numbers(self, write: Callable[[str, float], str]) -> str:
        if self.limit is None:
            return f" {write(self.kind, self.used)} · no limit"
        return f" {write(self.kind, self.used)}/{write(self.kind, self.limit)}"

    def line(self) -> Text:
        """`label bar numbers`; in a narrow panel the bar shortens (to 3 cells), the numbers stay whole."""
        room = (self.size.width or LINE_WIDTH) - 7
        numbers = self.numbers(amount)
        if len(numbers) > room - 3:  # a long count in a narrow panel: written short, never cut
            numbers = self.numbers(short_amount)
        if len(numbers) > room - 3 and self.limit is None:
            numbers = f" {short_amount(self.kind, self.used)}"
        bar = max(3, min(BAR_WIDTH, room - max(len(numbers), NUMBERS_WIDTH)))
        text = Text()
        text.append(f"{LABELS[self.kind]:<7}")
        if self.limit is None:
            text.append("·" * max(3, min(bar, room - len(numbers))), style="dim")
        else:
            append_bar(text, 0.0 if self.limit <= 0 else self.used / self.limit, bar)
        text.append(numbers)
        return text


POLICY_WIDTH = 12


def usage_lines(usage: Mapping[str, PolicyUsage]) -> Text:
    """`name  tokens  $cost` per policy that decided, then their `sum`; nothing while only one
    policy has decided (the gauges above say it all then)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if len(usage) < 2:
        return text
    text.append(f"{'policy':<{POLICY_WIDTH}} {'tokens':>8} {'cost':>9}\n", style="dim")
    for name, used in usage.items():
        shown = clean(name).replace("\n", " ")
        if len(shown) > POLICY_WIDTH:
            shown = shown[: POLICY_WIDTH - 1] + "…"
        tokens = used.input_tokens + used.output_tokens
        text.append(f"{shown:<{POLICY_WIDTH}} {tokens:>8} {amount('cost', used.cost):>9}\n")
    tokens = sum(u.input_tokens + u.output_tokens for u in usage.values())
    cost = sum(u.cost for u in usage.values())
    text.append(f"{'sum':<{POLICY_WIDTH}} {tokens:>8} {amount('cost', cost):>9}", style="bold")
    return text


def _usage_rows(policies: int) -> int:
    """Rows `usage_lines` takes for this many policies (a heading and the sum around them)."""
    return policies + 2 if policies >= 2 else 0


class PolicyUsageTable(Static):
    """Tokens and dollars per policy and their sum, shown once a second policy has decided."""

    DEFAULT_CSS = """
    PolicyUsageTable { height: auto; display: none; margin-top: 1; }
    PolicyUsageTable.-several { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.shown: tuple[tuple[str, int, int, float], ...] = ()

    def show_usage(self, usage: Mapping[str, PolicyUsage]) -> None:
        key = tuple((name, u.input_tokens, u.output_tokens, u.cost) for name, u in usage.items())
        if key == self.shown:
            return
        same_height = _usage_rows(len(key)) == _usage_rows(len(self.shown))
        self.shown = key
        self.set_class(len(usage) > 1, "-several")
        self.update(usage_lines(usage), layout=not same_height)


def chart_points(series: Sequence[int], width: int, extremes: SeriesExtremes | None = None) -> list[int]:
    """`series` cut to what a `width`-cell sparkline draws of it, with the same picture.

    Textual's sparkline splits its data into `width` buckets (bucket k is
    `[n*k//width, n*(k+1)//width)`), draws each bucket's maximum, and scales
    by the data's minimum and maximum. Each bucket's minimum and maximum, in
    order, keep all three: the sparkline re-buckets these 2*width points in
    pairs. A run of 50,000 steps then draws from 2*width points, not 50,000.
    `extremes`, when given, answers each bucket from its blocks (it follows `series`).
    """
    n = len(series)
    if width <= 0 or n <= 2 * width:
        return list(series)
    points: list[int] = []
    if extremes is not None:
        extremes.follow(series)
        for k in range(width):
            points += extremes.extremes(n * k // width, n * (k + 1) // width)
        return points
    for k in range(width):
        part = series[n * k // width : n * (k + 1) // width]
        points += (min(part), max(part))
    return points


class ContextChart(Sparkline):
    """The input tokens of every step as a sparkline, drawn from `chart_points`.

    `show` takes the state's list without copying it and redraws only when a
    step was added or removed (the list only grows within a run, so its length
    and ends tell whether it changed)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__([], id=id)
        self.series: Sequence[int] = ()
        self.extremes = SeriesExtremes()
        self.shown: tuple[int, int | None, int | None] = (0, None, None)

    def show(self, series: Sequence[int]) -> None:
        key = (len(series), series[0] if series else None, series[-1] if series else None)
        self.series = series
        if key != self.shown:
            self.shown = key
            self.refresh()

    def render(self) -> RenderResult:
        # data is set here, for the width being drawn, without a second refresh
        self.set_reactive(Sparkline.data, chart_points(self.series, self.size.width, self.extremes))
        drawn = super().render()
        if isinstance(drawn, SparklineRenderable) and len(drawn.data) >= 2:
            return SparklineStrips(QuickSparkline.like(drawn))
        return drawn


class BudgetGauges(Vertical):
    """The four gauges and the input-tokens-per-step sparkline."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.numbers_shown = ""

    def compose(self) -> ComposeResult:
        for kind in KINDS:
            yield Gauge(kind)
        yield Static(Text("context (input tokens per step)", style="dim"), id="context-label", markup=False)
        yield ContextChart(id="context-chart")
        yield Static("", id="context-numbers", markup=False)
        yield PolicyUsageTable(id="policy-usage")

    def gauge(self, kind: BudgetKind) -> Gauge:
        return self.query_one(f"#gauge-{kind}", Gauge)

    def update_state(
        self,
        budget: Budget,
        used: dict[str, float],
        input_tokens_per_step: list[int],
        policy_usage: Mapping[str, PolicyUsage] | None = None,
    ) -> None:
        if policy_usage is not None:
            self.query_one(PolicyUsageTable).show_usage(policy_usage)
        for kind in KINDS:
            self.gauge(kind).set_value(used[kind], budget.limit(kind), budget.warn_at)
        self.query_one(ContextChart).show(input_tokens_per_step)
        if len(input_tokens_per_step) == 1:
            words = f"step 1: {input_tokens_per_step[0]}"
        elif input_tokens_per_step:
            first, last = input_tokens_per_step[0], input_tokens_per_step[-1]
            words = f"step 1: {first} → step {len(input_tokens_per_step)}: {last}"
        else:
            words = "no steps yet"
        if words != self.numbers_shown:
            self.numbers_shown = words
            self.query_one("#context-numbers", Static).update(Text(words, style="dim"), layout=False)
