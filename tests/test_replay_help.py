"""`?` in the replay viewer opens its keys and escape closes them (it used to end the
viewer with a traceback: the help was an AskScreen whose on_mount looked for an input);
the help of the cockpit and of the viewer wraps each description beside its key."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from engine.stored.replay import Timeline
from tests.support.runs import saved_run
from tui.replay_app import REPLAY_HELP, ReplayApp
from tui.screens.dialogs import HELP, HelpScreen, key_table

pytestmark = pytest.mark.anyio


async def test_question_mark_shows_the_replay_keys_and_escape_closes_them(tmp_path: Path) -> None:
    path, _ = saved_run(tmp_path, scenario="library", task=None, policy="good")
    app = ReplayApp(Timeline.open(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen) and app.is_running
        assert app.screen.heading == "Replay keys" and app.screen.keys == REPLAY_HELP
        assert "scroll the transcript" in REPLAY_HELP
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("right")
        await pilot.pause()
        assert app.position == 1
    assert app.return_code in (None, 0)


@pytest.mark.parametrize("keys", [HELP, REPLAY_HELP])
def test_help_descriptions_wrap_beside_their_keys(keys: str) -> None:
    """At 60 columns a description's second line starts under the description, not under
    the keys (where it read as a key of its own)."""
    console = Console(width=60, record=True, color_system=None)
    console.print(key_table(keys))
    lines = console.export_text().split("\n\n")[0].splitlines()
    starts = {line.split("  ")[0].strip() for line in keys.splitlines() if line[:1].strip()}
    assert len(lines) > len(starts), "some descriptions wrap at 60 columns"
    for line in lines:
        assert line.startswith(" ") or any(line.startswith(start) for start in starts), line


async def test_the_palette_offers_the_replay_actions(tmp_path: Path) -> None:
    """ctrl+p listed only Textual's own commands (keys, quit, screenshot, theme)."""
    path, _ = saved_run(tmp_path, scenario="library", task=None, policy="good")
    app = ReplayApp(Timeline.open(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert {"Next step", "Search", "Go to step", "Next marker"} <= set(titles), titles
        assert "Fork" not in titles, "this viewer has no fork: the palette does not offer it"
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"next step", "enter")
        await pilot.pause()
        await pilot.pause()
        assert app.position == Timeline.open(path).next_step(0)
