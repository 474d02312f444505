"""The footer draws every key it shows whole, at 80x24 and at other widths, in the
cockpit and in the replay viewer: a key that does not fit is left out (help lists
it), never cut mid-word under the help and quit keys docked on the right."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.stored.replay import Timeline
from tests.support.cockpit_worlds import footer_actions, settle, shown_keys, support_run
from tests.support.runs import saved_run
from tui.app import CockpitApp
from tui.replay_app import ReplayApp, _fork_from
from tui.screens.approval import ApprovalScreen

pytestmark = pytest.mark.anyio


async def test_the_cockpit_footer_keeps_whole_keys_at_80x24_in_every_state(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        ready = await footer_actions(pilot)
        assert ready[:2] == ["step", "continue_run"] and "toggle_folds" not in ready, ready
        await pilot.press("n")
        await settle(pilot)
        assert (await footer_actions(pilot))[:2] == ["step", "continue_run"]
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("escape")
        await pilot.pause()
        pending = await footer_actions(pilot)
        assert pending[:4] == ["approve", "approve_always", "reject", "edit"], pending
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert app.view_state.ended is not None
        assert await footer_actions(pilot) == ["save", "toggle_folds"]


async def test_the_footer_chooses_its_keys_again_when_the_terminal_is_resized(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        wide = await footer_actions(pilot)
        assert "toggle_folds" in wide
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        narrow = await footer_actions(pilot)
        assert narrow == [action for action in wide if action in narrow] and len(narrow) < len(wide), (wide, narrow)
        await pilot.resize_terminal(62, 20)
        await pilot.pause()
        await pilot.pause()
        assert (await footer_actions(pilot))[0] == "step"
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.pause()
        assert await footer_actions(pilot) == wide


@pytest.mark.parametrize(("size", "expected"), [
    ((80, 24), ["forward", "next_step", "play", "fork", "goto"]),
    ((120, 40), ["forward", "next_step", "play", "fork", "goto", "next_marker", "search"]),
])
async def test_the_replay_footer_shows_whole_keys(tmp_path: Path, size, expected) -> None:
    timeline = Timeline.open(saved_run(tmp_path)[0])
    app = ReplayApp(timeline, fork=_fork_from, policy_names=["scripted", "human"])
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("right")
        await pilot.pause()
        assert await footer_actions(pilot) == expected
        labels = [f"{key.key_display} {key.description}" for key in shown_keys(app)]
        assert labels[:2] == ["←/→ event", "shift+←/→ step"], labels
