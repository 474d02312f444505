"""Handing back in the cockpit when there is no policy to hand back to: the operator's
fork of an imported log (its scenario has no policies, and no model is configured).
`h` there ended the cockpit with a traceback (StopIteration from the scenario's
first policy); now it is not offered, and "one step, then hand back" keeps the
operator in control and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, RadioButton, Select

from engine.sessions.imported import imported_scenario
from engine.sessions.resume import fork_position, fork_run
from engine.stored.importers import load_runs
from tests.support.cockpit_worlds import settle
from tests.support.cockpit_worlds import actions
from tui.app import CockpitApp
from tui.screens.forms import TakeOverScreen
from tui.take_over import NOBODY_TO_HAND_BACK

pytestmark = pytest.mark.anyio
TRACES = Path(__file__).resolve().parent / "data" / "traces"


def operator_fork(tmp_path: Path):
    source = load_runs(TRACES / "claude_code_simonw_sample_session.jsonl")[0]
    return fork_run(imported_scenario(source.header), source, fork_position(source, 1), "human", out=tmp_path / "f.jsonl", interactive=True)


async def test_no_hand_back_is_offered_when_there_is_nobody_to_hand_back_to(tmp_path: Path) -> None:
    run = operator_fork(tmp_path)
    app = CockpitApp(run)
    notes: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.notify = lambda message, **kwargs: notes.append(str(message))  # type: ignore[method-assign]
        await pilot.pause()
        assert app.human_in_control and app.run_status == "awaiting_input"
        assert "hand_back" not in actions(app) and "step" in actions(app)
        assert "h hands back" not in str(app.query_one("#header").content)
        await pilot.press("h")
        await pilot.pause()
        assert app.is_running and app.human_in_control
        await pilot.press("n")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, TakeOverScreen)
        await pilot.press(*"I look again")
        form.query_one("#tool", Select).value = "Bash"
        await pilot.pause()
        form.query_one("#arg-0", Input).value = "ls"
        await pilot.click("#one-step")
        assert form.query_one("#one-step", RadioButton).value
        await pilot.click("#do-step")
        await settle(pilot)
        assert not isinstance(app.screen, TakeOverScreen) and app.is_running
        assert run.engine.state.step == 2 and app.human_in_control, "the step ran; the operator keeps control"
    assert NOBODY_TO_HAND_BACK in notes, notes
