"""`agent-tui list`: the scenarios, their tasks and policies."""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import add_command


def register(sub: Any) -> None:
    add_command(sub, "list", cmd_list, "list scenarios, their tasks and policies")


def cmd_list(args: argparse.Namespace | None = None) -> int:
    import scenarios
    from scenarios.catalogue import listing_of, stored_listings

    built_in = stored_listings()
    for name in scenarios.names():
        listing = built_in.get(name) if name in scenarios.BUILTIN else None
        if listing is None:  # an installed plugin: loaded to be listed
            try:
                scenario = scenarios.get(name)
            except scenarios.ScenarioError as exc:
                print(f"{name}: cannot load ({exc})")
                continue
            name, listing = scenario.name, listing_of(scenario)
        print(f"{name}: {listing.description}")
        for task_id, text in listing.tasks:
            print(f"  task    {task_id}: {text}")
        print(f"  policies {', '.join([*listing.policies, 'human'])}, model (with --model)")
    return 0
