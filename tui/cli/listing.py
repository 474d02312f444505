"""`agent-tui list`: the scenarios, their tasks and policies."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    sub.add_parser("list", help="list scenarios, their tasks and policies").set_defaults(handler=cmd_list)


def cmd_list(args: argparse.Namespace | None = None) -> int:
    import scenarios

    for name in scenarios.names():
        try:
            scenario = scenarios.get(name)
        except scenarios.ScenarioError as exc:
            print(f"{name}: cannot load ({exc})")
            continue
        print(f"{scenario.name}: {scenario.description}")
        for task in scenario.tasks.values():
            print(f"  task    {task.id}: {task.text}")
        print(f"  policies {', '.join([*scenario.policies, 'human'])}, model (with --model)")
    return 0
