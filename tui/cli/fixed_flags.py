"""The flags a continued run (`run --resume` / `--fork`) applies or refuses: none is ignored.

A resume appends to a run whose header (rules, limits, options, task) is
written: it refuses the flags that would change it. A fork writes its own
header: it takes --rules (added to the parent's), --max-* and --repetition,
and refuses --option and --task (the steps it copies were made in that world
and task).
"""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import budget_limits
from tui.exits import UsageError

RESUME_FIXED = {
    "rules": "--rules",
    "max_steps": "--max-steps",
    "max_tokens": "--max-tokens",
    "max_cost": "--max-cost",
    "max_seconds": "--max-seconds",
    "repetition": "--repetition",
    "option": "--option",
    "task": "--task",
}
FORK_FIXED = {"option": "--option", "task": "--task"}


def refuse_fixed_flags(args: argparse.Namespace) -> None:
    """UsageError naming every flag the resume or fork cannot apply."""
    fixed = RESUME_FIXED if args.resume else FORK_FIXED
    given = [flag for key, flag in fixed.items() if getattr(args, key, None) not in (None, [])]
    if not given:
        return
    if args.resume:
        raise UsageError(
            f"{', '.join(given)} cannot be used with --resume: a resumed run keeps the rules, limits, options and "
            f"task in its header; fork it to change them: agent-tui run --fork {args.resume} --at end ..."
        )
    raise UsageError(f"{', '.join(given)} cannot be used with --fork: a fork continues in the world and task of the steps it copies")


def fork_rules(args: argparse.Namespace) -> list[Any]:
    """The rules of --rules, which a fork adds to those it believes of the saved run
    (never to the file's own: those count only with this machine's seal)."""
    from engine.core.approvals import RulesError, load_rules

    if args.rules is None:
        return []
    try:
        return load_rules(args.rules)
    except RulesError as exc:
        raise UsageError(str(exc)) from None


def fork_changes(args: argparse.Namespace, header: Any) -> dict[str, Any]:
    """What --max-* and --repetition change in a fork's header (--rules: `fork_rules`)."""
    changes: dict[str, Any] = {}
    limits = budget_limits(args)
    if limits:
        changes["budget"] = header.budget.model_copy(update=limits)
    if args.repetition is not None:
        changes["repetition_threshold"] = args.repetition or None
    return changes
