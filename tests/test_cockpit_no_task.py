"""A run of MCP tools opened without a task and with the human policy (what
`agent-tui run --mcp CMD` gives without -t and --model): the header says the task is
missing and that t sets it, not "n types a step" (n does nothing yet), and shows no
empty quotes where the task goes; a cockpit opened too small asks once it is enlarged."""

from __future__ import annotations

import pytest

from tests.support.cockpit_mcp import SIZE, header_text, mcp_run, start_hub
from tui.app import CockpitApp
from tui.screens.ask import AskScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_header_of_a_human_run_without_a_task_says_t_sets_it(tmp_path):
    hub = start_hub(tmp_path)
    run = mcp_run(tmp_path, hub, "human", task="")
    app = CockpitApp(run)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, AskScreen)
            await pilot.press("escape")
            await pilot.pause()
            header = header_text(app)
            assert "no task yet: t sets it" in header and "n types a step" not in header
            assert "“”" not in header
            assert not app.action_applies("step")
            await pilot.press("t", *"tidy my notes", "enter")
            await pilot.pause()
            header = header_text(app)
            assert "“tidy my notes”" in header and "your turn: n types a step" in header
    finally:
        run.close()


async def test_the_task_is_asked_once_a_too_small_terminal_grows(tmp_path):
    """Opened at 40x12 the cockpit says the terminal is too small; enlarged, it asks for the
    task as it does at start (it used to wait for t)."""
    hub = start_hub(tmp_path)
    run = mcp_run(tmp_path, hub, "human", task="")
    app = CockpitApp(run)
    try:
        async with app.run_test(size=(40, 12)) as pilot:
            await pilot.pause()
            assert not isinstance(app.screen, AskScreen)
            await pilot.resize_terminal(*SIZE)
            await pilot.pause()
            await pilot.pause()
            assert isinstance(app.screen, AskScreen)
    finally:
        run.close()
