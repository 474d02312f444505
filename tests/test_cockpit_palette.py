"""The cockpit's command palette offers the transcript pane's expand/fold (`o`), as the
README says of every cockpit action, before, during and after a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cockpit_worlds import settle, support_run
from tui.app import CockpitApp
from tui.widgets.transcript import TranscriptPane


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _fold_command(app: CockpitApp):
    return next((c for c in app.get_system_commands(app.screen) if c.title == "Expand / fold"), None)


@pytest.mark.anyio
async def test_the_palette_expands_and_folds_the_transcript(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(TranscriptPane)
        command = _fold_command(app)
        assert command is not None
        assert pane.index.expand_all is False
        command.callback()
        await pilot.pause()
        assert pane.index.expand_all is True
        await pilot.press("x")  # abort: the run ends, the transcript can still be unfolded
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert app.run_status == "ended"
        command = _fold_command(app)
        assert command is not None
        command.callback()
        await pilot.pause()
        assert pane.index.expand_all is False
