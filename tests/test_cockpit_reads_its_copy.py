"""The cockpit reads a run's state only from what the worker hands it: its folded copy of the
events, and with each finished operation the engine's halt and tool fault, never the live engine
from the UI thread."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UI = ["tui/app.py", "tui/mcp_cockpit.py", "tui/gateway_cockpit.py", "tui/take_over.py"]
LIVE = {"state", "halted", "fault", "status", "pending", "events_of"}


def test_no_screen_code_reads_the_live_engines_state_halt_or_fault() -> None:
    found = []
    for name in UI:
        for node in ast.walk(ast.parse((ROOT / name).read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in LIVE
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "engine"
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"
            ):
                found.append(f"{name}:{node.lineno} self.engine.{node.attr}")
    assert found == []
