"""The per-user data folder: transcripts and the approval key live under it."""

from __future__ import annotations

import os
from pathlib import Path


def user_data_dir() -> Path:
    """$AGENT_TUI_HOME, else $XDG_DATA_HOME/agent-tui (by default ~/.local/share/agent-tui)."""
    home = os.environ.get("AGENT_TUI_HOME")
    if home:
        return Path(home)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agent-tui"
