"""Each job of setting up a run has one owner: grep the code for the old ones and find none."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "scenarios", "tui")


def where(pattern: str) -> set[str]:
    """The modules (paths from the repository root) whose code matches `pattern`."""
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if re.search(pattern, path.read_text(encoding="utf-8")):
                found.add(str(path.relative_to(ROOT)))
    return found


def test_a_policy_name_becomes_a_policy_in_one_place() -> None:
    assert where(r"(?<![\"{])\bModelPolicy\(") == {"engine/sessions/policies.py"}
    assert where(r"def resolve_policy\b") == {"engine/sessions/policies.py"}
    assert where(r"\bmake_policy\(") <= {"engine/sessions/run.py", "tui/app.py", "tui/take_over.py"}  # Run.make_policy calls it
