"""The dialogs' keys: Enter never runs an edited call, a copy never overwrites unasked, the
budget pause keeps the first key, the take-over form's focus order, help from the approval."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static

from textual.app import App

from engine import Budget, Param, Tool
from tests.support.cockpit_worlds import desk_run, settle, support_run
from tui.app import CockpitApp
from tui.screens.approval import ApprovalScreen
from tui.screens.ask import AskScreen
from tui.screens.dialogs import HELP, BudgetScreen, ConfirmScreen, FocusBox, HelpScreen, PolicyPicker, SaveScreen
from tui.screens.forms import EditArgsScreen, ReasonScreen, TakeOverScreen
from tui.widgets.footer import CockpitFooter, FooterKeyLabel

SIZE = (120, 40)
pytestmark = pytest.mark.anyio


def support_app(tmp_path: Path) -> CockpitApp:
    return CockpitApp(support_run(tmp_path))


async def open_save(app: CockpitApp, pilot, path: str) -> SaveScreen:
    """One step, then the save dialog with `path` typed in and Enter pressed."""
    await pilot.press("n")
    await settle(pilot)
    await pilot.press("s")
    await pilot.pause()
    save = app.screen
    assert isinstance(save, SaveScreen)
    save.query_one("#save-path", Input).value = path
    await pilot.press("enter")
    await pilot.pause()
    return save


async def to_approval(app: CockpitApp, pilot) -> None:
    for _ in range(2):
        await pilot.press("n")
        await settle(pilot)
    assert isinstance(app.screen, ApprovalScreen)


def said(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def test_enter_in_the_edit_dialog_never_runs_the_irreversible_call(tmp_path: Path) -> None:
    app = support_app(tmp_path)
    run = app.run_
    async with app.run_test(size=SIZE) as pilot:
        await to_approval(app, pilot)
        await pilot.press("e")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, EditArgsScreen)
        for _ in range(3):
            await pilot.press("enter")
            await settle(pilot)
        assert app.screen is form and run.world.requests == []
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.screen is form and run.world.requests == [], "unchanged arguments are not an edit"
        assert "Nothing is changed" in said(form, "#edit-error")
        assert not [e for e in run.engine.events if e.type == "approval_decided"]
        form.query_one("#arg-0", Input).value = "1188"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is form and run.world.requests == [], "enter does not run a changed call either"
        assert "ctrl+r" in said(form, "#edit-error")
        await pilot.press("ctrl+r")
        await settle(pilot)
        decided = [e for e in run.engine.events if e.type == "approval_decided"]
        assert [(d.choice, d.args) for d in decided] == [("modify", {"order_id": "1188"})]


async def test_save_a_copy_onto_an_existing_file_asks_and_enter_keeps_it(tmp_path: Path) -> None:
    app = CockpitApp(desk_run("alpha", tmp_path))
    other = tmp_path / "other-run.jsonl"
    other.write_text("another run's transcript\n")
    async with app.run_test(size=SIZE) as pilot:
        save = await open_save(app, pilot, str(other))
        assert isinstance(app.screen, ConfirmScreen)
        assert "already exists" in str(app.screen.query_one(Static).content)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is save
        assert "Kept" in said(save, "#save-error")
        assert other.read_text() == "another run's transcript\n"
        await pilot.click("#do-save")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert not isinstance(app.screen, (SaveScreen, ConfirmScreen))
    assert other.read_text().startswith('{"type":"header"')


@pytest.mark.parametrize(
    ("target", "words"),
    [("folder", "is a folder"), ("/dev/null", "not a regular file"), ("live", "live transcript")],
)
async def test_save_a_copy_refuses_a_folder_a_device_and_the_live_transcript(
    tmp_path: Path, target: str, words: str
) -> None:
    run = desk_run("alpha", tmp_path)
    app = CockpitApp(run)
    path = {"folder": str(tmp_path), "live": str(run.path)}.get(target, target)
    before = Path(path).read_bytes() if Path(path).is_file() else None
    async with app.run_test(size=SIZE) as pilot:
        save = await open_save(app, pilot, path)
        assert app.screen is save
        assert words in said(save, "#save-error")
    if before is not None:
        assert Path(path).read_bytes().startswith(before)


async def test_the_budget_pause_does_not_swallow_the_first_key(tmp_path: Path) -> None:
    run = desk_run("alpha", tmp_path, budget=Budget(max_steps=1))
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BudgetScreen)
        assert "paused at the steps limit" in str(app.query_one("#header").content)
        assert isinstance(app.focused, FocusBox), "the dialog itself has the focus, not the field"
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is screen
        assert screen.query_one("#new-limit", Input).value == "6", "the key is not typed into the limit"
        assert "'n' does nothing here" in said(screen, "#budget-error")
        await pilot.press("e")
        await settle(pilot)
        assert run.engine.state.budget.max_steps == 6 and run.engine.status == "ready"


async def test_take_over_focus_goes_through_visible_fields_in_order(tmp_path: Path) -> None:
    app = CockpitApp(desk_run("alpha", tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, TakeOverScreen)
        order = []
        for _ in range(6):
            focused = app.focused
            assert focused is not None and focused.region.area > 0, f"focus on an invisible {focused!r}"
            order.append(focused.id)
            await pilot.press("tab")
        assert order == ["thought", "tool", "answer", "mode", "do-step", "cancel"]
        form.query_one("#tool", Select).value = "note"
        await pilot.pause()
        form.query_one("#thought", Input).focus()
        await pilot.press("tab", "tab")
        assert app.focused is form.query_one("#arg-0", Input)
        await pilot.press("h", "i")
        assert form.query_one("#arg-0", Input).value == "hi", "typed text lands in the field"
        await pilot.press("tab")
        assert app.focused.id == "mode", "the final answer is skipped while a tool is chosen"


async def test_question_mark_opens_help_over_the_approval_dialog(tmp_path: Path) -> None:
    app = support_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_approval(app, pilot)
        approval = app.screen
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is approval and app.run_.world.requests == []


async def test_help_lists_o_and_the_footer_puts_first_things_first(tmp_path: Path) -> None:
    assert "\no          expand" in HELP
    app = support_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        footer = app.query_one(CockpitFooter)
        keys = [key.action for key in footer.query(FooterKeyLabel) if key.parent is footer]
        assert keys[:2] == ["step", "continue_run"] and keys[-1] == "toggle_folds", keys
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        keys = [key.action for key in footer.query(FooterKeyLabel) if key.parent is footer]
        assert keys[:2] == ["step", "continue_run"] and "toggle_folds" not in keys, "o does not fit whole at 80: help lists it"
        always = [key for key in footer.query("#always-keys FooterKeyLabel") if key.display]
        assert [key.action for key in always] == ["help", "quit"]
        assert all(key.region.right <= 80 and key.region.area > 0 for key in always)


@pytest.mark.parametrize(("key", "opens"), [("s", SaveScreen), ("x", ConfirmScreen)])
async def test_the_footer_keys_shown_under_the_approval_dialog_work_there(tmp_path: Path, key, opens) -> None:
    """The footer under the dialog lists save, abort and quit (always): each closes the
    dialog and does what it says; the approval stays pending, nothing runs."""
    app = support_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_approval(app, pilot)
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, opens)
        await pilot.press("escape")
        await pilot.pause()
        assert app.view_state.pending is not None and app.run_.world.requests == []


async def test_q_quits_from_the_approval_dialog(tmp_path: Path) -> None:
    app = support_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_approval(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen), "the run can go on: q asks first"
        await pilot.press("y")
        await pilot.pause()
        assert not app.is_running
    assert app.run_.world.requests == []


async def test_the_take_over_form_at_80x24_shows_its_error_and_reaches_its_buttons(tmp_path: Path) -> None:
    """The form is taller than 24 rows: it scrolls, so what it says about a bad step and
    its buttons come into view (they used to be cut off below the dialog's edge)."""
    app = support_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, TakeOverScreen)
        dialog = form.query_one("#takeover-dialog")
        await pilot.press("enter")  # no tool and no answer
        await pilot.pause()
        error = form.query_one("#takeover-error")
        assert "Choose a tool" in str(error.render())
        assert dialog.region.contains_region(error.region) and error.region.height > 0
        form.query_one("#do-step").focus()  # focus scrolls the dialog to the button
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        button = form.query_one("#do-step")
        assert dialog.region.contains_region(button.region) and button.region.height > 0


async def test_save_a_copy_never_writes_through_a_link_nor_over_a_run_that_holds_its_file(tmp_path: Path) -> None:
    import fcntl
    import os

    app = CockpitApp(desk_run("alpha", tmp_path))
    victim = tmp_path / "victim.jsonl"
    victim.write_text("the file the link names\n")
    link = tmp_path / "copy.jsonl"
    link.symlink_to(victim)
    held = tmp_path / "waiting-run.jsonl"
    held.write_text('{"type":"header"} a run waiting at an approval\n')
    fd = os.open(held, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the run that writes it holds it
    try:
        async with app.run_test(size=SIZE) as pilot:
            save = await open_save(app, pilot, str(link))
            assert app.screen is save and "symbolic link" in said(save, "#save-error")
            save.query_one("#save-path", Input).value = str(held)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")  # even after a yes, a transcript another run holds is not cut
            await pilot.pause()
            assert app.screen is save and "another run is writing this transcript" in said(save, "#save-error")
    finally:
        os.close(fd)
    assert victim.read_text() == "the file the link names\n"
    assert held.read_text() == '{"type":"header"} a run waiting at an approval\n'


_TOOL = Tool("lookup", "Find a thing.", (Param("key"),))
_DIALOGS = {
    "reason": lambda: ReasonScreen("lookup"),
    "edit": lambda: EditArgsScreen(_TOOL, {"key": "a"}, lambda args: args),
    "take over": lambda: TakeOverScreen([_TOOL]),
    "save": lambda: SaveScreen("copy.jsonl", lambda path: None),
    "policy": lambda: PolicyPicker(["scripted", "human"], "scripted"),
    "ask": lambda: AskScreen("Go to step"),
}


_WAYS = [(dialog, "escape") for dialog in _DIALOGS] + [(dialog, "back") for dialog in ("reason", "edit", "take over", "save")]


@pytest.mark.parametrize(("dialog", "way"), _WAYS)
async def test_escape_or_back_closes_a_dialog_with_nothing_chosen(dialog: str, way: str) -> None:
    """Each dialog that asks for something is closed by escape, or by its Back button where it
    has one, and gives None: the caller's "nothing chosen"."""
    app: App[None] = App()
    results: list[object] = []
    async with app.run_test(size=SIZE) as pilot:
        screen = _DIALOGS[dialog]()
        app.push_screen(screen, results.append)
        await pilot.pause()
        if way == "escape":
            await pilot.press("escape")
        else:
            await pilot.click("#cancel")
        for _ in range(50):
            if results:
                break
            await pilot.pause()
        assert results == [None] and app.screen is not screen


@pytest.mark.parametrize(("kind", "limit", "used", "offered"), [
    ("steps", 10, 10, 15), ("steps", 10, 12, 17), ("tokens", 50, 76, 114), ("tokens", 1, 1, 2), ("tokens", 0, 0, 1),
    ("cost", 0.01, 0.012, 0.018), ("cost", 0.0, 0.00001, 0.000015), ("cost", 0.0, 0.0, 1.0), ("seconds", 60, 61, 91.5),
])
def test_the_limit_offered_is_always_above_what_is_used(kind: str, limit: float, used: float, offered: float) -> None:
    from tui.screens.dialogs import default_extension

    value = default_extension(kind, limit, used)
    assert value == pytest.approx(offered) and value > used


async def test_the_help_has_its_own_footer_not_the_cockpits_keys_it_holds_back(tmp_path: Path) -> None:
    """Over the help the cockpit's keys do nothing (the help holds them): the footer at the bottom
    is its own. It once still offered `a approve` there, at an approval looked past with escape."""
    from textual.widgets import Footer

    app = support_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n", "n")
        await settle(pilot)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        footer = app.screen.query_one(Footer)
        assert footer.region.bottom == 40 and footer.region.width == 120, "it covers the cockpit's"
        shown = {b.binding.action for b in app.screen.active_bindings.values() if b.binding.show}
        assert shown == {"close"}
