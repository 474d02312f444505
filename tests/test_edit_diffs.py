"""Which calls edit files and what their approval shows (engine/core/edits.py): a unified diff
against the file as it is now, the new content when the file cannot be read, a patch as it is;
bounded in time and memory whatever the call or the path names."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.edits import EDIT_TOOLS, MAX_DIFF_LINES, EditTool, edit_preview, edit_table, find_edit_tool
from engine.sessions.config import ConfigError, parse_config

OLD = "def greet():\n    print('hi')\n    return 1\n"


@pytest.fixture
def code(tmp_path: Path) -> Path:
    path = tmp_path / "greet.py"
    path.write_text(OLD)
    return path


def diff_of(tool: str, **args) -> list[str]:
    preview = edit_preview(tool, args)
    assert preview is not None, f"{tool} is not taken for a file edit"
    return list(preview.lines)


CHANGED = ["-    print('hi')", "+    print('hello')"]


@pytest.mark.parametrize(
    "tool, args",
    [
        ("write_file", {"path": "P", "content": OLD.replace("hi", "hello")}),  # MCP filesystem server
        ("edit_file", {"path": "P", "edits": [{"oldText": "'hi'", "newText": "'hello'"}]}),
        ("Write", {"file_path": "P", "content": OLD.replace("hi", "hello")}),  # Claude Code
        ("Edit", {"file_path": "P", "old_string": "'hi'", "new_string": "'hello'"}),
        ("MultiEdit", {"file_path": "P", "edits": [{"old_string": "hi", "new_string": "hel"}, {"old_string": "hel'", "new_string": "hello'"}]}),
        ("write_file", {"file_path": "P", "content": OLD.replace("hi", "hello")}),  # Gemini CLI
        ("replace", {"file_path": "P", "old_string": "'hi'", "new_string": "'hello'", "instruction": "greet warmly"}),
        ("notes.write_file", {"path": "P", "content": OLD.replace("hi", "hello")}),  # an MCP tool named server.tool
    ],
)
def test_each_tool_shape_diffs_against_the_file_as_it_is_now(code: Path, tool: str, args: dict) -> None:
    args = {k: (str(code) if v == "P" else v) for k, v in args.items()}
    preview = edit_preview(tool, args)
    assert preview is not None and preview.shows == "diff"
    assert preview.lines[:3] == (f"--- {code} (as it is now)", f"+++ {code} (after this call)", "@@ -1,3 +1,3 @@")
    assert [line for line in preview.lines if line.startswith(("+", "-")) and line[:3] not in ("---", "+++")] == CHANGED
    assert preview.note == f"diff against {code} as it is now"
    assert code.read_text() == OLD, "showing a diff never writes the file"


def test_a_call_that_is_no_file_edit_has_no_preview(code: Path) -> None:
    assert edit_preview("read_file", {"path": str(code)}) is None
    assert edit_preview("write_file", {"path": str(code)}) is None, "no content: not the shape of a write"
    assert edit_preview("write_file", {"path": 3, "content": "x"}) is None
    assert edit_preview("Edit", {"file_path": str(code), "old_string": "a"}) is None


def test_a_new_file_shows_its_content(tmp_path: Path) -> None:
    target = tmp_path / "new.py"
    preview = edit_preview("Write", {"file_path": str(target), "content": "x = 1\ny = 2\n"})
    assert preview is not None and preview.shows == "content"
    assert preview.lines == ("x = 1", "y = 2")
    assert preview.note == f"{target} does not exist yet (a new file); the content it writes"
    created = edit_preview("Edit", {"file_path": str(target), "old_string": "", "new_string": "z = 3\n"})
    assert created is not None and created.shows == "content" and created.lines == ("z = 3",)


def test_an_unreadable_file_shows_the_new_content_and_why(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00binary")
    for path, why in ((folder, "not a regular file"), (binary, "not UTF-8 text")):
        preview = edit_preview("write_file", {"path": str(path), "content": "text\n"})
        assert preview is not None and preview.shows == "content" and preview.lines == ("text",)
        assert preview.note.startswith(f"cannot read {path}: {why}"), preview.note
    relative = edit_preview("write_file", {"path": "notes/a.txt", "content": "text\n"})
    assert relative is not None and relative.shows == "content"
    assert "relative path, not read here" in relative.note


def test_an_edit_the_file_does_not_allow_shows_the_edit_itself_and_why(code: Path) -> None:
    missing = edit_preview("Edit", {"file_path": str(code), "old_string": "bye", "new_string": "ciao"})
    assert missing is not None and missing.shows == "diff"
    assert missing.note.startswith("the old text is not in the file as it is now")
    assert missing.lines == ("--- old text", "+++ new text", "@@ -1 +1 @@", "-bye", "+ciao")
    twice = edit_preview("Edit", {"file_path": str(code), "old_string": "i", "new_string": "I"})
    assert twice is not None and "in the file 2 times" in twice.note
    every = edit_preview("Edit", {"file_path": str(code), "old_string": "i", "new_string": "I", "replace_all": True})
    assert every is not None and every.note.startswith("diff against")
    assert "+    prInt('hI')" in every.lines
    first = edit_preview("edit_file", {"path": str(code), "edits": [{"oldText": "i", "newText": "I"}]})
    assert first is not None and "+    prInt('hi')" in first.lines, "the MCP server replaces the first"
    unreadable = edit_preview("Edit", {"file_path": str(code.parent / "gone.py"), "old_string": "a", "new_string": "b"})
    assert unreadable is not None and unreadable.lines[-2:] == ("-a", "+b")
    assert "does not exist yet" in unreadable.note


def test_a_codex_patch_is_shown_as_it_is_with_its_files_named() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: hello.txt\n+Hello world\n*** Update File: src/app.py\n"
        "*** Move to: src/main.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello, world!\")\n"
        "*** Delete File: obsolete.txt\n*** End Patch"
    )
    preview = edit_preview("apply_patch", {"input": patch})
    assert preview is not None and preview.shows == "patch"
    assert preview.lines == tuple(patch.split("\n"))
    assert preview.note == "the patch as given: adds hello.txt; updates src/app.py (moved to src/main.py); deletes obsolete.txt"
    odd = edit_preview("apply_patch", {"input": "rm -rf /"})
    assert odd is not None and "does not start with *** Begin Patch" in odd.note


def test_control_characters_in_a_diff_are_shown_as_escapes(code: Path) -> None:
    lines = diff_of("Edit", file_path=str(code), old_string="'hi'", new_string="'\x1b]0;owned\x07'")
    assert "+    print('\\x1b]0;owned\\x07')" in lines
    assert not any(c in "".join(lines) for c in "\x1b\x07\x9b")


def test_hostile_paths_are_refused_without_blocking(tmp_path: Path) -> None:
    """/dev/zero would be read without end, a FIFO's open waits for a writer: each is refused at once."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "zero-link"
    link.symlink_to("/dev/zero")
    results: dict[str, str] = {}

    def preview_all() -> None:
        for path in ("/dev/zero", str(fifo), str(link), "/dev/stdin", f"{tmp_path}/nul\x00byte"):
            preview = edit_preview("write_file", {"path": path, "content": "x\n"})
            assert preview is not None
            results[path] = preview.note

    worker = threading.Thread(target=preview_all, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), f"a path blocked the preview (done: {list(results)})"
    for path, note in results.items():
        assert note.startswith("cannot read"), (path, note)
        assert "\x00" not in note


def test_huge_content_and_files_are_bounded(tmp_path: Path) -> None:
    """A 10 MB content gets no diff, only its start; a 100,000-line file edited in one line
    diffs exactly (the shared start and end are set aside); two 100,000-line files that
    differ everywhere are cut at MAX_DIFF_LINES, and say so."""
    big = tmp_path / "big.txt"
    big.write_text("".join(f"{n}\n" for n in range(100_000)))
    huge = edit_preview("write_file", {"path": str(big), "content": "y\n" * 5_000_000})
    assert huge is not None and huge.shows == "content" and len(huge.lines) == 2_000
    assert "10,000,000 characters, over the 1 MiB a diff reads" in huge.note and "cut at 2,000 lines" in huge.note
    one = edit_preview("edit_file", {"path": str(big), "edits": [{"oldText": "\n77777\n", "newText": "\nLINE\n"}]})
    assert one is not None and one.lines[2] == "@@ -77775,7 +77775,7 @@"
    assert [l for l in one.lines if l.startswith(("+", "-"))][2:] == ["-77777", "+LINE"]
    other = "".join(f"o{n}\n" for n in range(100_000))
    everywhere = edit_preview("write_file", {"path": str(big), "content": other}, max_lines=10_000)
    assert everywhere is not None and everywhere.cut == MAX_DIFF_LINES
    assert everywhere.note.endswith(f"diff cut at {MAX_DIFF_LINES:,} lines")
    assert len(changed_lines(everywhere.lines)) == 2 * MAX_DIFF_LINES
    shown = edit_preview("write_file", {"path": str(big), "content": other})
    assert shown is not None and len(shown.lines) == 2_000 and shown.note.endswith("diff cut at 2,000 lines")
    long_line = edit_preview("write_file", {"path": str(tmp_path / "wide.txt"), "content": "x" * 2_000_000})
    assert long_line is not None and len(long_line.lines) == 1 and len(long_line.lines[0]) < 600
    bigger_file = tmp_path / "over.txt"
    bigger_file.write_bytes(b"a" * ((1 << 20) + 1))
    over = edit_preview("write_file", {"path": str(bigger_file), "content": "b"})
    assert over is not None and "larger than 1 MiB" in over.note


def test_prompt_sized_previews_hold_at_most_their_lines(code: Path) -> None:
    preview = edit_preview("write_file", {"path": str(code), "content": "z\n" * 1_000}, max_lines=50)
    assert preview is not None and len(preview.lines) == 50 and preview.note.endswith("diff cut at 50 lines")


def test_a_configured_edit_tool_is_used_first(tmp_path: Path, code: Path) -> None:
    config = parse_config(
        '[[edit_tool]]\ntool = "save_*"\nkind = "write"\npath = "filename"\ncontent = "text"\n\n'
        '[[edit_tool]]\ntool = "write_file"\nkind = "patch"\npatch = "path"\n',
        tmp_path / "agent-tui.toml",
    )
    table = edit_table(config.edit_tools)
    assert table[: len(config.edit_tools)] == tuple(config.edit_tools) and table[2:] == EDIT_TOOLS
    assert config.edit_tools[0].source == "agent-tui.toml:1"
    preview = edit_preview("save_note", {"filename": str(code), "text": OLD.replace("hi", "hello")}, table)
    assert preview is not None and [l for l in preview.lines if l.startswith(("+", "-"))][2:] == CHANGED
    assert find_edit_tool(table, "write_file", {"path": "x", "content": "y"}) == config.edit_tools[1]
    assert edit_preview("save_note", {"filename": str(code), "text": "x"}) is None, "not in the built-in table"


@pytest.mark.parametrize(
    "text, where, words",
    [
        ('[[edit_tool]]\ntool = "x"\nkind = "move"\n', 3, "'kind' must be write, replace, edits, patch"),
        ('[[edit_tool]]\ntool = "x"\nkind = "write"\npath = "p"\n', 1, "needs path, content; 'content' is missing"),
        ('[[edit_tool]]\ntool = "x"\nkind = "patch"\npatch = "p"\ncolour = "red"\n', 5, "unknown key 'colour'"),
        ('[[edit_tool]]\ntool = "x"\nkind = "patch"\npatch = 3\n', 4, "'patch' must name an argument"),
        ('edit_tool = 3\n', 1, "'edit_tool' must be an array of tables"),
    ],
)
def test_a_bad_edit_tool_row_is_named_by_its_line(tmp_path: Path, text: str, where: int, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, tmp_path / "c.toml")
    assert str(caught.value).startswith(f"{tmp_path / 'c.toml'}:{where}: "), str(caught.value)
    assert words in str(caught.value)


def test_each_built_in_row_names_the_arguments_its_kind_needs() -> None:
    needs = {"write": ("path", "content"), "replace": ("path", "old", "new"), "edits": ("path", "edits", "old", "new"), "patch": ("patch",)}
    for row in EDIT_TOOLS:
        assert isinstance(row, EditTool) and all(getattr(row, key) for key in needs[row.kind]), row
        assert row.source.startswith("built in: ")


def changed_lines(diff: str | tuple[str, ...]) -> list[str]:
    lines = diff.split("\n") if isinstance(diff, str) else list(diff)
    return [l for l in lines if l.startswith(("+", "-")) and l[:3] not in ("---", "+++")]


def test_the_reference_filesystem_server_takes_these_arguments_and_changes_what_the_diff_shows(tmp_path: Path) -> None:
    """The real @modelcontextprotocol/server-filesystem: its write_file and edit_file take the
    table's argument names, and its own dry-run diff of an edit changes the lines ours shows."""
    from engine.mcp import McpHub, hub_tools
    from engine.mcp.servers import McpServerConfig
    from tests.support.mcp_helpers import filesystem_bin

    folder = tmp_path / "files"
    folder.mkdir()
    code = folder / "greet.py"
    code.write_text(OLD + "print(greet())\n")
    hub = McpHub([McpServerConfig(name="fs", command=filesystem_bin(), args=(str(folder),), timeout=60)], tmp_path / "logs")
    hub.start()
    try:
        tools = {t.name: t for t in hub_tools(hub)}
        write, edit = tools["write_file"], tools["edit_file"]
        assert {"path", "content"} <= set(write.input_schema["properties"])
        assert set(edit.input_schema["properties"]["edits"]["items"]["properties"]) == {"oldText", "newText"}
        args = {"path": str(code), "edits": [{"oldText": "'hi'", "newText": "'hello'"}, {"oldText": "return 1", "newText": "return 2"}]}
        ours = edit_preview("edit_file", args)
        assert ours is not None and ours.note.startswith("diff against")
        theirs = edit.fn(**args, dryRun=True)
        assert changed_lines(theirs) == changed_lines(ours.lines) == [
            "-    print('hi')", "-    return 1", "+    print('hello')", "+    return 2",
        ]
        new_content = OLD.replace("hi", "hello")
        before = edit_preview("write_file", {"path": str(code), "content": new_content})
        write.fn(path=str(code), content=new_content)
        assert code.read_text() == new_content
        assert changed_lines(before.lines) == ["-    print('hi')", "+    print('hello')", "-print(greet())"]
    finally:
        hub.close()


texts = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "\n", "a", "b"]), max_size=40).map("".join)


def patched(before: str, diff: tuple[str, ...]) -> str:
    """`before` with a unified diff applied, each context and removed line checked."""
    old = before.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    last: str | None = None
    for line in diff[2:]:
        hunk = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if hunk:
            begin = int(hunk[1]) - (0 if hunk[2] == "0" else 1)
            out.extend(old[at:begin])
            at = begin
        elif line == "\\ No newline at end of file":
            if last == "new":
                out[-1] = out[-1].removesuffix("\n")
        elif line[0] in " -":
            assert old[at].removesuffix("\n") == line[1:], (at, line)
            if line[0] == " ":
                out.append(old[at])
            at, last = at + 1, "old" if line[0] == "-" else "new"
        else:
            out.append(line[1:] + "\n")
            last = "new"
    return "".join(out + old[at:])


@settings(max_examples=400, deadline=None)
@given(before=texts, after=texts)
def test_the_bounded_diff_turns_the_file_into_the_new_content(before: str, after: str) -> None:
    """Setting aside the shared start and end keeps the diff right: applied to the file as it
    is, it gives the content the call writes, line numbers and missing last newlines included."""
    from engine.core.edits import unified

    shown, cut = unified(before, after, "x", "y", 10_000)
    assert cut == 0
    if before == after:
        assert shown == ()
    else:
        assert patched(before, shown) == after
