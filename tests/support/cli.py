"""`agent-tui` as installed: the console script next to the tests' interpreter."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def installed_agent_tui() -> str:
    found = shutil.which("agent-tui", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"the agent-tui console script is not installed next to {sys.executable}: pip install -e .")
    return found
