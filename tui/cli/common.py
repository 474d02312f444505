"""What every subcommand shares: the parser with the project's usage errors, registering a command, argument types.

The exit codes, `UsageError` and the error printer, which the apps share too, are in tui/exits.py."""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from typing import Any, NoReturn

from tui.exits import EXIT_USAGE, report


class Parser(argparse.ArgumentParser):
    """argparse with the project's usage errors: usage and one line on stderr, exit 2."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        self.print_usage(sys.stderr)
        report(message)
        raise SystemExit(EXIT_USAGE)


def add_command(sub: Any, name: str, handler: Any, help: str | None = None) -> argparse.ArgumentParser:
    """Register subcommand `name`, run by `handler(args)`; its flags are added to the parser returned.

    Without `help`, the handler's docstring speaks for the command: its first
    paragraph is the line in `agent-tui --help`, the rest the description in
    `agent-tui NAME --help`.
    """
    description = None
    if help is None:
        first, _, rest = inspect.cleandoc(handler.__doc__ or "").partition("\n\n")
        first = " ".join(first.split()).rstrip(".")
        help = first[:1].lower() + first[1:]  # the style of argparse's own lines
        description = " ".join(rest.split()) or None
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler)
    return parser


def budget_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The limits set by --max-steps, --max-tokens, --max-cost and --max-seconds (unset ones left out)."""
    limits = {name: getattr(args, name, None) for name in ("max_steps", "max_tokens", "max_cost", "max_seconds")}
    return {name: value for name, value in limits.items() if value is not None}


def option_pair(text: str) -> tuple[str, Any]:
    """KEY=VALUE, the value read as JSON when it is JSON."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return key.strip(), parsed


def repetition(text: str) -> int:
    """How many identical actions in a row stop a run: 2 or more, 0 or 'off' for never.

    1 is read as 2: an action is a repetition from its second time, so both
    stop the run at the first repeat.
    """
    if text.lower() in ("off", "none", "0"):
        return 0
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a whole number of identical actions in a row, or 'off'") from None
    if value < 0:
        raise argparse.ArgumentTypeError("expected 1 or more identical actions in a row, or 'off' (0)")
    return max(value, 2)


def _number(text: str, kind: type[int] | type[float], expected: str) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None


def _at_least(value: Any, low: float, *, above: bool, message: str) -> Any:
    if not (value > low if above else value >= low):  # NaN is neither
        raise argparse.ArgumentTypeError(message)
    return value


def positive_int(text: str) -> int:
    return _at_least(_number(text, int, "a whole number"), 1, above=False, message="must be 1 or more")


def positive_float(text: str) -> float:
    return _at_least(_number(text, float, "a number"), 0, above=True, message="must be above 0")


def price(text: str) -> float:
    """Dollars per 1,000 tokens: a NaN or negative price would keep a cost budget from ever tripping."""
    value = _number(text, float, "a number")
    if not (0 <= value < float("inf")):  # NaN is neither
        raise argparse.ArgumentTypeError("must be a finite number of 0 or more")
    return value


def file_name(text: str) -> str:
    """A path argument: an empty one would name the current folder (`Path("")` is `.`)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file name, got an empty one")
    return text


def nonempty_name(text: str) -> str:
    """A policy or scenario name: an empty one would be taken as none given."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a name, got an empty one")
    return text


def step_or_end(text: str) -> int | str:
    """A step number (0 or more) or 'end'."""
    if text == "end":
        return "end"
    return _at_least(_number(text, int, "a step number or 'end'"), 0, above=False, message="steps start at 0")
