"""One way to write an amount of a budget kind: "12" steps, "3400" tokens, "$0.0012", "1.0 s".

The engine's reasons, the plain log, the Markdown report and the cockpit's
gauges all write amounts with `amount`, so a figure reads the same wherever
it shows.
"""

from __future__ import annotations

import math

HUGE = 1e12
"""From here up (a hand-edited file's -1e308 seconds) a figure is written in three digits and
an exponent, not in hundreds of digits; NaN and infinity, which no count is, as "?"."""


def amount(kind: str, value: float) -> str:
    """`value` of budget kind `kind` (steps, tokens, cost, seconds) as text."""
    if kind == "cost":
        return dollars(value)
    if kind == "seconds":
        return seconds(value)
    if not _finite(value):
        return "?"
    return str(int(value)) if abs(value) < HUGE else _odd(value)


def short_amount(kind: str, value: float) -> str:
    """`amount` in at most about six characters where room is short: counts from 10,000 up as
    "12.3k", "4.5M", "17.9G"; cost and time as `amount` writes them."""
    if kind in ("cost", "seconds") or not 10_000 <= abs(value) < HUGE:  # (False for NaN too)
        return amount(kind, value)
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}"
    return amount(kind, value)  # not reached


def dollars(value: float) -> str:
    """"$0.0012" below a dollar, "$12.35" from one dollar up."""
    if not _finite(value) or abs(value) >= HUGE:
        return f"${_odd(value)}"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def seconds(value: float) -> str:
    if not _finite(value) or abs(value) >= HUGE:
        return f"{_odd(value)} s"
    return f"{value:.1f} s"


def _finite(value: float) -> bool:
    """Not NaN nor infinite (an int of any size is finite: `math.isfinite` cannot take one past a float's range)."""
    return isinstance(value, int) or math.isfinite(value)


def _odd(value: float) -> str:
    """A figure no count reaches: "?" for NaN and infinity, else three digits and an exponent (an int
    past a float's range too: 10**400 is "1.00e+400")."""
    if not _finite(value):
        return "?"
    if isinstance(value, int) and abs(value) >= 10**300:
        exponent = int(math.log10(abs(value)))
        return f"{'-' if value < 0 else ''}{abs(value) / 10**exponent:.2f}e+{exponent}"
    return f"{value:.3g}"
