"""An ACP run in the cockpit: the agent's command waits in the ordinary approval dialog, runs
once approved, and the agent's answer ends the run (tests/support/fake_acp_agent.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.acp.run import new_acp_run
from tests.support.cockpit_worlds import settle, wait_until
from tui.app import CockpitApp
from tui.screens.approval import ApprovalScreen

pytestmark = pytest.mark.anyio
FAKE = Path(__file__).parent / "support" / "fake_acp_agent.py"


async def test_the_agent_command_is_approved_in_the_dialog_then_runs(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    run = new_acp_run([sys.executable, str(FAKE), "terminal"], "make the file", cwd=work, out=tmp_path / "run.jsonl",
                      log_path=tmp_path / "agent.log", interactive=True)
    app = CockpitApp(run)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("n")
            await settle(pilot)
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval dialog")
            assert run.engine.state.pending.tool == "terminal.run" and not (work / "made.txt").exists()
            await pilot.press("a")
            await settle(pilot)
            assert (work / "made.txt").read_text() == "made\n"
            await pilot.press("n")
            await settle(pilot)
            assert run.engine.state.ended is not None and run.engine.state.ended.answer == "exit 0: done"
    finally:
        run.close()
