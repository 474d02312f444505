"""Leaving the cockpit and the replay viewer: q, Ctrl+C and Ctrl+Q ask while the run can go on,
a run left unfinished says how to resume it and exits with its own code, `--version`."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version


def test_version_prints_the_installed_version_and_exits_0() -> None:
    done = subprocess.run([sys.executable, "-m", "tui.cli", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"agent-tui {version('agent-tui')}\n"
    assert version("agent-tui") == "0.1.0"
