"""The real Claude Code, Gemini CLI and opencode, run offline against the scripted fake models, write session
files that `agent-tui` imports without loss: every call, result and answer the file holds (counted
from the file as tests/test_import_samples.py counts the samples) is in the run, and the shell call
the model asked for is the run's action. The agents are installed pinned into .agents (.ci/run does)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from engine.stored.importers import load_runs
from tests.support import agent_sessions as record
from tests.support.samples import import_counts, source_counts

AGENTS = Path(__file__).resolve().parent.parent / ".agents" / "node_modules" / ".bin"
INSTALL = "npm install --no-audit --no-fund --save-exact --prefix .agents @anthropic-ai/claude-code@2.1.197 @google/gemini-cli@0.61.0 opencode-ai@1.18.33"


@pytest.mark.parametrize("agent, binary, fmt", [("claude", "claude", "claude-code"), ("gemini", "gemini", "gemini-cli"), ("opencode", "opencode", "opencode")])
def test_a_fresh_session_of_the_real_agent_imports_whole(agent: str, binary: str, fmt: str, tmp_path: Path) -> None:
    program = AGENTS / binary
    if not program.exists():
        pytest.fail(f"{program} is not installed: {INSTALL} (.ci/run does)")
    home, work = Path(tempfile.mkdtemp(dir=tmp_path)), Path(tempfile.mkdtemp(dir=tmp_path))
    session = getattr(record, agent)(str(program), home, work)
    assert (work / "note.txt").read_text() == "hello\n"  # the agent ran the shell call the model asked for
    assert record.KEY not in session.read_text()
    copy = tmp_path / f"session{session.suffix}"
    shutil.copyfile(session, copy)
    runs = load_runs(copy)
    assert {r.header.options["format"] for r in runs} == {fmt}
    assert import_counts(runs) == source_counts(copy, fmt) == (1, 1, 1, 1)
    (run,) = runs
    action = next(e for e in run.events if e.type == "decision").actions[0]
    assert action.args["command"] == "echo hello > note.txt"
    assert not [e for e in run.events if e.type == "note" and e.kind == "unrecognised"]
