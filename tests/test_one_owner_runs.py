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


def test_a_runs_engine_is_made_in_one_place() -> None:
    assert where(r"(?<![`\w])(?<!class )Engine\(") == {"engine/sessions/build.py"}
    assert where(r"seal_approval =") == {"engine/sessions/build.py", "engine/sessions/run.py"}  # run.py: a task set later


def test_a_saved_run_is_continued_through_one_entry() -> None:
    assert where(r"\b(resume_run|fork_run)\(") == {"engine/sessions/resume.py"}  # continue_run calls them
    assert where(r"\bcontinue_run\(") == {"engine/sessions/resume.py", "tui/cli/run.py", "tui/replay_fork.py",
                                          "engine/acp/run.py"}  # a resumed ACP run: its agent's session loaded first


def test_what_a_saved_run_is_trusted_with_is_decided_in_one_module() -> None:
    assert not (ROOT / "tui/cli/vouched.py").exists()
    assert where(r"def (vouched_servers|believe)\b") == {"engine/sessions/trust.py"}


def test_mcp_servers_are_chosen_and_started_in_engine_mcp() -> None:
    assert where(r"(?<!class )\bMcpHub\(") == {"engine/mcp/start.py"}
    assert where(r"def (server_name|servers_from_flags|guard_servers)\b") <= {"engine/mcp/servers.py", "engine/mcp/start.py"}
    assert where(r"McpServerConfig\(") <= {"engine/mcp/servers.py", "engine/sessions/config.py"}
