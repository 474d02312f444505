"""The one place the command line turns a policy name into the policy to run."""

from __future__ import annotations

import argparse
from typing import Any, Mapping

from tui.cli.model_flags import config_from_args
from tui.exits import UsageError


def resolve_policy(
    scenario: Any, args: argparse.Namespace, *, interactive: bool, default: str | None, named: Mapping[str, Any] | None = None
) -> tuple[Any, Any]:
    """(policy, model config) for `--policy` and the model flags.

    The policy is a scenario policy's name, "human", a ModelPolicy for "model"
    when the scenario has no policy of that name or for a configured model
    policy (`named`: the configuration's [[policy]] tables), or None (`default`
    None: keep the stored run's policy). UsageError for a name that cannot run here.
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
    if name == "model" and "model" not in scenario.policies:
        if model is None:
            raise UsageError("--policy model needs a model: give --model NAME (or set AGENT_TUI_MODEL)")
        from engine.model.policy import ModelPolicy

        return ModelPolicy(model), model
    if name in named and name not in scenario.policies:
        from engine.model.policy import ModelPolicy

        return ModelPolicy(named[name], name=name), model
    if name not in known:
        raise UsageError(f"scenario '{scenario.name}' has no policy '{name}' (policies: {', '.join(known)})")
    return name, model
