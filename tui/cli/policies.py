"""Which policy name the command line asks for (`--policy`, the model flags), checked before a run is built;
the name becomes a policy in `engine.sessions.policies.resolve_policy`."""

from __future__ import annotations

import argparse
from typing import Any, Mapping

from tui.cli.model_flags import config_from_args
from tui.exits import UsageError


def policy_from_flags(
    scenario: Any, args: argparse.Namespace, *, interactive: bool, default: str | None, named: Mapping[str, Any] | None = None
) -> tuple[str | None, Any]:
    """(policy name, model config) for `--policy` and the model flags.

    The name is a scenario policy's, "human", "model" (the flags' endpoint when the
    scenario has no policy of that name) or a configured model policy's (`named`: the
    configuration's [[policy]] tables), or None (`default` None: keep the stored run's
    policy). UsageError for a name that cannot run here.
    """
    named = named or {}
    try:
        model = config_from_args(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    name = args.policy or (("model" if args.model else default) if default is not None else None)
    if name is None:
        return None, model
    known = [*scenario.policies, "human", *named]
    if name == "human" and not interactive:
        raise UsageError("the human policy needs the cockpit; drop --headless (or give --policy)")
    if name == "model" and "model" not in scenario.policies and model is None:
        raise UsageError("--policy model needs a model: give --model NAME (or set AGENT_TUI_MODEL)")
    if name != "model" and name not in known:
        raise UsageError(f"scenario '{scenario.name}' has no policy '{name}' (policies: {', '.join(known)})")
    return name, model
