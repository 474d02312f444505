"""An ACP run in the cockpit: the agent's command waits in the ordinary approval dialog, runs
once approved, and the agent's answer ends the run (tests/support/fake_acp_agent.py)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

from engine.acp.run import new_acp_run
from engine.acp.tools import ANSWER
from tests.support.cockpit_worlds import settle, wait_until
from tui.app import CockpitApp
from tui.screens.approval import ApprovalScreen

pytestmark = pytest.mark.anyio
FAKE = Path(__file__).parent / "support" / "fake_acp_agent.py"


@contextlib.asynccontextmanager
async def _cockpit(tmp_path: Path, behaviour: str, task: str, **kwargs: object):
    """The cockpit on an interactive run of the fake agent (tests/support/fake_acp_agent.py) in a folder
    of its own: (run, app, pilot); the run is closed after."""
    work = tmp_path / "work"
    work.mkdir()
    run = new_acp_run([sys.executable, str(FAKE), behaviour], task, cwd=work, out=tmp_path / "run.jsonl",
                      log_path=tmp_path / "agent.log", interactive=True, **kwargs)
    app = CockpitApp(run)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            yield run, app, pilot
    finally:
        run.close()


async def _approve_the_held_answer(pilot, app, run) -> None:
    await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the agent's answer, held")
    assert run.engine.state.pending.tool == ANSWER
    await pilot.press("a")
    await settle(pilot)


async def test_the_agent_command_is_approved_in_the_dialog_then_runs(tmp_path: Path) -> None:
    async with _cockpit(tmp_path, "terminal", "make the file") as (run, app, pilot):
        await pilot.press("n")
        await settle(pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval dialog")
        assert run.engine.state.pending.tool == "terminal.run" and not (tmp_path / "work" / "made.txt").exists()
        await pilot.press("a")
        await settle(pilot)
        assert (tmp_path / "work" / "made.txt").read_text() == "made\n"
        await pilot.press("n")
        await settle(pilot)
        await _approve_the_held_answer(pilot, app, run)
        await pilot.press("n")
        await settle(pilot)
        assert run.engine.state.ended is not None and run.engine.state.ended.answer == "exit 0: done"


async def test_take_over_between_turns_prompts_the_agent_and_p_switches_its_mode(tmp_path: Path) -> None:
    from textual.widgets import Input, OptionList, Select

    from engine.acp.tools import PROMPT
    from tui.screens.dialogs import PolicyPicker
    from tui.screens.forms import TakeOverScreen

    async with _cockpit(tmp_path, "wait,echo", "wait for me", env={"FAKE_ACP_MODES": "ask,[b]code[/b]"}) as (run, app, pilot):
        agent = run.engine.policy
        await pilot.press("n")
        await wait_until(pilot, lambda: bool(agent._calls), what="the agent's call")
        await pilot.press("escape", "escape")
        await settle(pilot)
        await pilot.press("n")  # the step that reads the end of the cancelled turn
        await settle(pilot)
        assert run.engine.status == "policy_failed"
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, PolicyPicker), what="the policy picker")
        options = app.screen.query_one(OptionList)
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        assert ids == ["mode:ask", "mode:[b]code[/b]", "human"]
        assert options.get_option_at_index(1).prompt.plain == "mode:[b]code[/b]"  # the agent's name as text, not markup
        await pilot.press("down", "enter")
        await settle(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, TakeOverScreen), what="the take-over form")
        screen = app.screen
        screen.query_one("#tool", Select).value = PROMPT
        await wait_until(pilot, lambda: len(screen.query(".param-input")) > 0, what="the prompt's field")
        screen.query_one("#arg-0", Input).value = "now say hello"
        await pilot.pause()
        await pilot.click("#do-step")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await _approve_the_held_answer(pilot, app, run)
        await pilot.press("n")
        await settle(pilot)
        assert run.engine.state.ended is not None
        assert run.engine.state.ended.answer == "you said: now say hello (mode [b]code[/b])"
    swaps = [(e.old, e.new) for e in run.engine.events if e.type == "policy_swapped"]
    assert swaps[0] == ("acp", "acp mode:[b]code[/b]")
    assert [e.policy for e in run.engine.events if e.type == "decision"][-3:] == ["human", "acp mode:[b]code[/b]", "acp mode:[b]code[/b]"]


async def test_a_mode_the_agent_refuses_is_one_clean_notice(tmp_path: Path) -> None:
    from textual.widgets import OptionList

    from tui.screens.dialogs import PolicyPicker

    async with _cockpit(tmp_path, "echo", "hello", env={"FAKE_ACP_MODES": "ask,broken\x1b[31mred"}) as (run, app, pilot):
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, PolicyPicker), what="the policy picker")
        assert app.screen.query_one(OptionList).option_count == 3
        await pilot.press("down", "enter")
        await settle(pilot)
        await wait_until(pilot, lambda: any("refused" in str(n.message) for n in app._notifications), what="the refusal")
        notes = [(n.title, str(n.message)) for n in app._notifications if "refused" in str(n.message)]
        assert run.engine.policy.name == "acp"
    title, message = notes[0]
    assert "\x1b" not in title and "\x1b" not in message
    assert "the agent refused session/set_mode broken" in message and "Invalid params" in message


async def test_the_agents_answer_waits_and_the_reason_typed_is_its_next_prompt(tmp_path: Path) -> None:
    from textual.widgets import Input

    from tui.screens.forms import ReasonScreen

    async with _cockpit(tmp_path, "echo", "hello") as (run, app, pilot):
        await pilot.press("c")
        await settle(pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the agent's answer, held")
        assert run.engine.state.ended is None and run.engine.state.pending.args == {"answer": "you said: hello"}
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ReasonScreen), what="the reason form")
        app.screen.query_one("#reason", Input).value = "now say goodbye"
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the next answer, held")
        assert run.engine.state.pending.args == {"answer": "you said: now say goodbye"}
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert run.engine.state.ended is not None and run.engine.state.ended.answer == "you said: now say goodbye"
