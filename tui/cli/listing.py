"""`agent-tui list`: the scenarios, their tasks and policies."""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import add_command


def register(sub: Any) -> None:
    add_command(sub, "list", cmd_list, "list scenarios, their tasks and policies")


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
