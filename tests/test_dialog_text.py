"""Dialog text wraps inside the dialog at 80x24: a long line (the budget pause's
explanation, a tool field's description from an MCP server) was cut at the
dialog's right edge, because a Label is as wide as its text."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import Label

from engine import Budget, Param, Tool
import tui.app
from tests.support.cockpit_worlds import desk_run, settle
from tui.app import CockpitApp
from tui.screens.dialogs import BudgetScreen
from tui.screens.forms import EditArgsScreen

pytestmark = pytest.mark.anyio

LONG = "The path of the file to write, relative to the folder the server was started in; parent folders are created."


def labels_inside(screen, dialog_id: str) -> list[str]:
    """Every Label of the dialog, after checking it is drawn inside the dialog's content."""
    dialog = screen.query_one(f"#{dialog_id}")
    inside = dialog.content_region
    texts = []
    for label in dialog.query(Label):
        text = str(label.render())
        assert label.region.right <= inside.right, f"{text!r} runs past the dialog's edge"
        lines = [label.render_line(y).text.rstrip() for y in range(label.size.height)]
        assert " ".join(line.strip() for line in lines).split() == text.split(), (text, lines)
        texts.append(text)
    return texts


async def test_the_budget_pause_says_all_it_says_at_80x24(tmp_path: Path) -> None:
    app = CockpitApp(desk_run("alpha", tmp_path, budget=Budget(max_steps=1)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, BudgetScreen)
        texts = labels_inside(app.screen, "budget-dialog")
        assert any(text.endswith("or end the run here.") for text in texts), texts


async def test_a_long_field_description_wraps_in_the_edit_form_at_80x24() -> None:
    tool = Tool("write_file", "Write a file.", (Param("path", description=LONG),), lambda path: "ok", kind="irreversible")

    class Host(App[None]):
        CSS_PATH = str(Path(tui.app.__file__).with_name("app.tcss"))  # the cockpit's dialog styles

        def on_mount(self) -> None:
            self.push_screen(EditArgsScreen(tool, {"path": "notes.txt"}, check=lambda args: args))

    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, EditArgsScreen)
        texts = labels_inside(app.screen, "edit-dialog")
        assert any(LONG in text for text in texts), texts
