"""One way to write an amount of a budget kind: "12" steps, "3400" tokens, "$0.0012", "1.0 s".

The engine's reasons, the plain log, the Markdown report and the cockpit's
gauges all write amounts with `amount`, so a figure reads the same wherever
it shows.
"""

from __future__ import annotations


def amount(kind: str, value: float) -> str:
    """`value` of budget kind `kind` (steps, tokens, cost, seconds) as text."""
    if kind == "cost":
        return dollars(value)
    if kind == "seconds":
        return seconds(value)
    return str(int(value))


def short_amount(kind: str, value: float) -> str:
    """`amount` in at most about six characters where room is short: counts from 10,000 up as
    "12.3k", "4.5M", "17.9G"; cost and time as `amount` writes them."""
    if kind in ("cost", "seconds") or abs(value) < 10_000:
        return amount(kind, value)
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}"
    return amount(kind, value)  # not reached


def dollars(value: float) -> str:
    """"$0.0012" below a dollar, "$12.35" from one dollar up."""
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def seconds(value: float) -> str:
    return f"{value:.1f} s"
