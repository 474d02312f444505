"""One rule on resume for an approval the earlier session reached: asked again, whether
its line was recorded or torn by a crash, whatever --approve says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import scenarios
from engine.sessions.resume import resume_run
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript

ROOT = Path(__file__).resolve().parent.parent


def stopped_at_the_approval(path: Path, *, torn: bool) -> list[str]:
    """A support run stopped at open_return_request's approval; with `torn`, the
    approval_requested line is cut in half (the process died writing it)."""
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    assert run.engine.run() == "awaiting_approval"
    run.close()
    lines = path.read_text().splitlines()
    assert '"approval_requested"' in lines[-1]
    if torn:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        path.write_text("\n".join(lines))
    return lines


@pytest.mark.parametrize("torn", [False, True], ids=["recorded", "torn"])
def test_resume_with_approve_all_asks_again(tmp_path: Path, torn: bool) -> None:
    path = tmp_path / "crash.jsonl"
    stopped_at_the_approval(path, torn=torn)
    resumed = resume_run(scenarios.get("support"), read_transcript(path), approve="all")
    assert resumed.engine.run() == "awaiting_approval"
    assert resumed.world.requests == [], "not approved on its own"
    resumed.engine.approve()
    assert resumed.engine.run() == "ended"
    resumed.close()
    assert resumed.world.requests == ["R-1 for 1187"]
    decided = [e for e in read_transcript(path).events if e.type == "approval_decided"]
    assert [d.by for d in decided] == ["operator"]


@pytest.mark.parametrize("torn", [False, True], ids=["recorded", "torn"])
def test_cli_resume_headless_without_a_terminal_says_the_same_for_both(tmp_path: Path, torn: bool) -> None:
    path = tmp_path / "crash.jsonl"
    stopped_at_the_approval(path, torn=torn)
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "--resume", str(path), "--headless", "--approve", "all"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ROOT, timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "was waiting for approval of open_return_request when it stopped; it is asked again" in proc.stderr
    assert "approval_decided" not in path.read_text()


def test_approve_all_still_answers_approvals_reached_after_the_resume(tmp_path: Path) -> None:
    """--approve all applies to what the resumed run reaches itself."""
    path = tmp_path / "early.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    run.engine.step()
    run.close()
    resumed = resume_run(scenarios.get("support"), read_transcript(path), approve="all")
    assert resumed.engine.run() == "ended"
    resumed.close()
    assert resumed.world.requests == ["R-1 for 1187"]
