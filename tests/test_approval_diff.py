"""The approval dialog of a file edit: the diff against the file as it is now comes first, `d`
shows the raw arguments and back, approving still runs the call; the headless prompt prints the
diff too; a picture of the dialog at 80x24."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from engine import Budget, Decision, Param, Scenario, ScriptedPolicy, Task, Tool
from engine.core.edits import EditTool, edit_table
from engine.sessions.run import Run, new_run
from tests.support.cockpit_worlds import fixed_clock, settle
from tests.support.hostile import drawn
from tui.app import CockpitApp
from tui.cli.run import _ask_on_terminal
from tui.screens.approval import ApprovalScreen
from tui.widgets.diff_view import DiffView

OLD = "def greet(name):\n    print('hi', name)\n    return len(name)\n"
NEW = "def greet(name):\n    print('hello,', name)\n    return len(name)\n"


class FileWorld:
    """`write_file` (irreversible) with the MCP filesystem server's arguments, `save_note` with others."""

    def __init__(self) -> None:
        self.tools = [
            Tool("write_file", "Write a file.", (Param("path"), Param("content")), self._write, kind="irreversible", timeout=None),
            Tool("save_note", "Save a note.", (Param("filename"), Param("text")), self._write, kind="irreversible", timeout=None),
        ]

    def _write(self, path: str | None = None, content: str | None = None, filename: str | None = None, text: str | None = None) -> str:
        target = Path(path or filename or "").expanduser()
        target.write_text(content if content is not None else text or "")
        return f"wrote {target.name}"


def file_run(out: Path, decision: Decision, **kwargs: Any) -> Run:
    scenario = Scenario(
        name="files", description="a folder of files", tasks={"t": Task("t", "Greet more warmly.")},
        policies={"p": lambda w, t: ScriptedPolicy("p", lambda view: decision if view.step == 1 else Decision.final("done", "done"))},
        make_world=lambda task, options: FileWorld(), budget=Budget(max_steps=3),
    )
    return new_run(scenario, "t", "p", save=True, out=out, interactive=True, clock=fixed_clock, **kwargs)


def greet_file(folder: Path) -> Path:
    path = folder / "greet.py"
    path.write_text(OLD)
    return path


async def first_approval(pilot) -> ApprovalScreen:
    """Step once: the call waits in the approval dialog."""
    await pilot.press("n")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ApprovalScreen)
    return pilot.app.screen


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_dialog_shows_the_diff_and_d_shows_the_arguments(tmp_path: Path) -> None:
    path = greet_file(tmp_path)
    app = CockpitApp(file_run(tmp_path / "run.jsonl", Decision.act("greet warmly", "write_file", path=str(path), content=NEW)))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await first_approval(pilot)
        assert screen.showing_diff
        diff = screen.query_one("#approval-diff", DiffView)
        text, _ = drawn(diff)
        assert f"diff against {path} as it is now" in " ".join(text.split())
        assert "-    print('hi', name)" in text and "+    print('hello,', name)" in text
        assert not screen.query_one("#approval-args-text").display
        assert "Diff" in screen.query_one("#approval-body-title").visual.plain
        assert "d: the arguments" in screen.query_one("#approval-body-title").visual.plain
        await pilot.press("d")
        await pilot.pause()
        assert not screen.showing_diff and not diff.display
        arguments = screen.query_one("#approval-args-text")
        assert arguments.display and "content = def greet(name):" in drawn(arguments)[0]
        assert "d: diff" in screen.query_one("#approval-body-title").visual.plain
        await pilot.press("d")
        await pilot.pause()
        assert screen.showing_diff
        await pilot.press("a")
        await settle(pilot)
        assert path.read_text() == NEW, "approving from the diff runs the call"
        assert app.view_state.tool_calls == {"write_file": 1}


@pytest.mark.anyio
async def test_a_new_file_shows_its_content_in_its_language_colours(tmp_path: Path) -> None:
    path = tmp_path / "new.py"
    app = CockpitApp(file_run(tmp_path / "run.jsonl", Decision.act("new", "write_file", path=str(path), content=NEW)))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await first_approval(pilot)
        assert screen.showing_diff
        assert screen.query_one("#approval-body-title").visual.plain.startswith("New content")
        text, styles = drawn(screen.query_one("#approval-diff"))
        assert "does not exist yet (a new file); the content it writes" in " ".join(text.split())
        assert "def greet(name):" in text and not path.exists()
        assert len({style.color for style in styles if style.color is not None}) >= 2, "python's colours"


@pytest.mark.anyio
async def test_a_call_that_edits_no_file_keeps_its_arguments_and_has_no_d(tmp_path: Path) -> None:
    app = CockpitApp(file_run(tmp_path / "run.jsonl", Decision.act("note", "save_note", filename=str(tmp_path / "n.txt"), text="x")))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await first_approval(pilot)
        assert screen.preview is None
        assert not screen.query("#approval-diff") and screen.query_one("#approval-args-text").display
        assert screen.query_one("#approval-body-title").visual.plain == "Arguments"
        assert screen.check_action("toggle_body", ()) is False


@pytest.mark.anyio
async def test_a_configured_edit_tool_shows_its_diff_and_hostile_text_stays_inert(tmp_path: Path) -> None:
    path = greet_file(tmp_path)
    run = file_run(
        tmp_path / "run.jsonl",
        Decision.act("note", "save_note", filename=str(path), text=OLD.replace("'hi'", "'[/] [bold]\x1b]0;x\x07'")),
    )
    run.edit_tools = edit_table([EditTool("save_*", "write", path="filename", content="text")])
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await first_approval(pilot)
        assert screen.showing_diff
        text, styles = drawn(screen.query_one("#approval-diff"))
        assert "+    print('[/] [bold]\\x1b]0;x\\x07', name)" in text, text
        assert not any(c in text for c in "\x1b\x07\x9b")
        assert not any(style.link or (style._meta and "@click" in style.meta) for style in styles)


@pytest.mark.anyio
async def test_a_long_diff_scrolls(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("".join(f"line {n}\n" for n in range(300)))
    app = CockpitApp(file_run(tmp_path / "run.jsonl", Decision.act("x", "write_file", path=str(path), content="other\n" * 300)))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await first_approval(pilot)
        assert screen.showing_diff
        scroll = screen.query_one("#approval-args")
        assert scroll.max_scroll_y > 100, "the diff is longer than its box"
        await pilot.press("end")
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y > 0


def test_the_headless_prompt_prints_the_diff_escaped_and_capped(tmp_path: Path, monkeypatch, capsys) -> None:
    path = tmp_path / "long.txt"
    path.write_text("".join(f"line {n}\n" for n in range(500)))
    content = "\x1b[2J" + "".join(f"line {n}\n" for n in range(500)) + "".join(f"more {n}\n" for n in range(400))
    run = file_run(tmp_path / "run.jsonl", Decision.act("x", "write_file", path=str(path), content=content))
    assert run.engine.run() == "awaiting_approval"
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr(builtins, "input", lambda prompt="": "a")
    assert _ask_on_terminal(run.engine, run.edit_tools)
    printed = capsys.readouterr().out
    lines = printed.split("\n")
    start = next(n for n, line in enumerate(lines) if line.startswith("  diff     diff against"))
    assert lines[start] == f"  diff     diff against {path} as it is now; diff cut at 200 lines"
    assert lines[start + 1 : start + 6] == [
        f"           --- {path} (as it is now)", f"           +++ {path} (after this call)", "           @@ -1,4 +1,4 @@",
        "           -line 0", "           +\\x1b[2Jline 0",
    ]
    assert len([line for line in lines[start + 1 :] if line.startswith("           ")]) == 200  # after the question's lines
    assert "\x1b" not in printed
    run.close()


def test_dialog_with_a_diff_at_80x24(snap_compare, tmp_path: Path, monkeypatch) -> None:
    """The approval dialog of write_file at 80x24: the thought "greet more warmly", then
    "Diff   d: the arguments" over a box holding, in italics, "diff against ~/greet.py as it is
    now", the --- (red) / +++ (green) lines, "@@ -1,3 +1,3 @@", the print line removed (red)
    and added (green) between the two unchanged lines, then the five buttons. The dialog's
    title, description and reason are scrolled above its top at this size: the dialog's
    layout (its title kept in view, tui/app.tcss) is not this test's, and this picture is
    taken again when it changes."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    greet_file(tmp_path)
    app = CockpitApp(file_run(Path("runs/cockpit.jsonl"), Decision.act("greet more warmly", "write_file", path="~/greet.py", content=NEW)))

    async def run_before(pilot) -> None:
        screen = await first_approval(pilot)
        assert screen.showing_diff
        assert screen.preview is not None and screen.preview.note == "diff against ~/greet.py as it is now"

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
