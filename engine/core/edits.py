"""Which tool calls write or edit a file, and what the operator is shown before approving one:
a unified diff against the file as it is now, else the content it writes, else the patch it carries.

Which tools edit files is data, not code per tool: `EDIT_TOOLS`, a table of rows by tool name
pattern and argument names, to which the configuration's `[[edit_tool]]` rows are put first
(`edit_table`). A row fits a call when its pattern matches the tool's name (or, for an MCP tool
named `server.tool`, the name after the server's) and the call carries its arguments with the
right types; the first row that fits is used, so `write_file` with `path` and with `file_path`
are two rows.

Everything is bounded: the file is read by `read_small_text` (a regular file of at most 1 MiB,
never a device or a pipe), new content over 1 MiB is shown without a diff, the lines that
differ are cut at `MAX_DIFF_LINES` on each side before difflib sees them (its worst case grows
with the square of that), at most `max_lines` lines are returned, each of at most
`MAX_LINE_CHARS` characters, and every line is made safe to show (`visible`).
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence, get_args

from engine.core.smallfile import MAX_BYTES, SmallFileError, read_small_text
from engine.core.text import visible

EditKind = Literal["write", "replace", "edits", "patch"]
KINDS: tuple[str, ...] = get_args(EditKind)

MAX_DIFF_LINES = 1_000
"""Lines that differ, on each side, given to difflib: its worst case (few distinct lines in
another order) grows with their square: about 35 ms at 1,000, 0.4 s at 2,000 (bench/edit_diffs.py)."""
MAX_SHOWN_LINES = 2_000
"""Lines of diff, content or patch an `EditPreview` holds."""
MAX_LINE_CHARS = 500
"""Characters shown of one line; the rest is cut with a mark."""
CONTEXT = 3


class EditToolError(ValueError):
    """A table row that cannot be used; `key` is the key at fault (for FILE:LINE)."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class EditTool:
    """One row of the table: the tools it applies to and the arguments that hold the edit.

    kind "write": `path` and `content` (the whole new content); "replace": `path`, `old`,
    `new`, optionally `all` (a boolean argument: every occurrence); "edits": `path` and
    `edits`, a list of objects whose keys are `old`, `new` and optionally `all`; "patch":
    `patch`, a patch text shown as it is. `first`: an old text found several times has its
    first occurrence replaced (else the tool refuses it unless `all`)."""

    tool: str
    kind: EditKind
    path: str = ""
    content: str = ""
    old: str = ""
    new: str = ""
    all: str = ""
    edits: str = ""
    patch: str = ""
    first: bool = False
    source: str = "built in"

    def matches(self, tool: str) -> bool:
        names = (tool, tool.rsplit(".", 1)[1]) if "." in tool else (tool,)
        return any(fnmatch.fnmatchcase(name, self.tool) for name in names)

    def fits(self, args: Mapping[str, Any]) -> bool:
        """The call carries this row's arguments with the types it needs."""
        if self.kind == "patch":
            return isinstance(args.get(self.patch), str)
        if not isinstance(args.get(self.path), str):
            return False
        if self.kind == "write":
            return isinstance(args.get(self.content), str)
        if self.kind == "replace":
            return isinstance(args.get(self.old), str) and isinstance(args.get(self.new), str)
        edits = args.get(self.edits)
        return isinstance(edits, list) and bool(edits) and all(
            isinstance(e, dict) and isinstance(e.get(self.old), str) and isinstance(e.get(self.new), str) for e in edits
        )


_NEEDS: dict[str, tuple[str, ...]] = {
    "write": ("path", "content"),
    "replace": ("path", "old", "new"),
    "edits": ("path", "edits", "old", "new"),
    "patch": ("patch",),
}
_NAMES = ("path", "content", "old", "new", "all", "edits", "patch")
TABLE_KEYS = ("tool", "kind", *_NAMES, "first")


def edit_tool(item: Mapping[str, Any], source: str) -> EditTool:
    """A row from the configuration's keys; EditToolError names the key at fault."""
    for key in item:
        if key not in TABLE_KEYS:
            raise EditToolError(key, f"unknown key '{key}' in [[edit_tool]] (keys: {', '.join(TABLE_KEYS)})")
    tool, kind = item.get("tool"), item.get("kind")
    if not isinstance(tool, str) or not tool.strip():
        raise EditToolError("tool", "'tool' must be a non-empty tool name pattern")
    if kind not in KINDS:
        raise EditToolError("kind", f"'kind' must be {', '.join(KINDS)}, not {kind!r}")
    for key in _NAMES:
        if key in item and (not isinstance(item[key], str) or not item[key].strip()):
            raise EditToolError(key, f"'{key}' must name an argument, not {item[key]!r}")
    for key in _NEEDS[kind]:
        if key not in item:
            raise EditToolError(None, f"an [[edit_tool]] of kind '{kind}' needs {', '.join(_NEEDS[kind])}; '{key}' is missing")
    first = item.get("first", False)
    if not isinstance(first, bool):
        raise EditToolError("first", "'first' must be true or false")
    names = {key: item[key] for key in _NAMES if key in item}
    return EditTool(tool=tool, kind=kind, first=first, source=source, **names)


EDIT_TOOLS: tuple[EditTool, ...] = (
    # The reference MCP filesystem server (@modelcontextprotocol/server-filesystem 2026.8.31,
    # dist/index.js WriteFileArgsSchema {path, content} and EditFileArgsSchema {path, edits:
    # [{oldText, newText}], dryRun}; dist/lib.js applyFileEdits replaces each edit's first
    # occurrence in turn, else tries a line match that ignores indentation).
    EditTool("write_file", "write", path="path", content="content", source="built in: MCP filesystem server"),
    EditTool(
        "edit_file", "edits", path="path", edits="edits", old="oldText", new="newText", first=True,
        source="built in: MCP filesystem server",
    ),
    # Claude Code (the Claude Agent SDK's tool inputs, docs.claude.com/en/docs/claude-code/sdk/
    # sdk-typescript #write #edit #multiedit): Write {file_path, content}; Edit {file_path,
    # old_string, new_string, replace_all}; MultiEdit {file_path, edits: [{old_string,
    # new_string, replace_all}]}. An old_string must be unique unless replace_all.
    EditTool("Write", "write", path="file_path", content="content", source="built in: Claude Code"),
    EditTool("Edit", "replace", path="file_path", old="old_string", new="new_string", all="replace_all", source="built in: Claude Code"),
    EditTool(
        "MultiEdit", "edits", path="file_path", edits="edits", old="old_string", new="new_string", all="replace_all",
        source="built in: Claude Code",
    ),
    # Gemini CLI (google-gemini/gemini-cli packages/core/src/tools/definitions/base-declarations.ts
    # and model-family-sets/default-legacy.ts): write_file {file_path, content}; replace
    # {file_path, old_string, new_string, instruction, allow_multiple}: exactly one occurrence
    # unless allow_multiple.
    EditTool("write_file", "write", path="file_path", content="content", source="built in: Gemini CLI"),
    EditTool("replace", "replace", path="file_path", old="old_string", new="new_string", all="allow_multiple", source="built in: Gemini CLI"),
    # Codex (openai/codex codex-rs/core/src/tools/handlers/apply_patch.rs): the function form of
    # apply_patch takes {input}, "the entire contents of the apply_patch command", a patch from
    # "*** Begin Patch" to "*** End Patch" over relative paths; it is shown as it is.
    EditTool("apply_patch", "patch", patch="input", source="built in: Codex"),
    # An ACP agent's fs/write_text_file {path, content}, served by agent-tui (engine/acp/tools.py).
    EditTool("fs.write_text_file", "write", path="path", content="content", source="built in: ACP file writes"),
    # An ACP agent's permission request for an edit that carries a diff (schema Diff {path, newText}:
    # the file's whole new content), flattened by engine/acp/policy.py.
    EditTool("agent.permission.edit", "write", path="path", content="content", source="built in: ACP edits asked for"),
)
"""The built-in rows; each comment says where its argument names come from."""


def edit_table(extra: Sequence[EditTool] = ()) -> tuple[EditTool, ...]:
    """The table a run uses: the configuration's rows first, then the built-in ones."""
    return (*extra, *EDIT_TOOLS)


def find_edit_tool(table: Sequence[EditTool], tool: str, args: Mapping[str, Any]) -> EditTool | None:
    """The first row that fits the call, or None: the call is not a file edit."""
    return next((row for row in table if row.matches(tool) and row.fits(args)), None)


Shows = Literal["diff", "content", "patch"]


@dataclass(frozen=True)
class EditPreview:
    """What a file edit would do, ready to show: `lines` are a unified diff ("diff", with
    `---`/`+++`/`@@` headers), the content the call writes ("content", `path` says its
    language), or the call's patch ("patch"). `note` says what was compared, or why the file
    was not; every string is safe to show (controls as escapes)."""

    tool: str
    path: str
    shows: Shows
    lines: tuple[str, ...]
    note: str
    cut: int = 0
    """The number of lines the lines were cut at (0: nothing was cut)."""


def edit_preview(
    tool: str, args: Mapping[str, Any], table: Sequence[EditTool] = EDIT_TOOLS, *, max_lines: int = MAX_SHOWN_LINES
) -> EditPreview | None:
    """The preview of a call that edits a file, or None when no row of `table` fits it."""
    row = find_edit_tool(table, tool, args)
    if row is None:
        return None
    if row.kind == "patch":
        return _patch_preview(tool, args[row.patch], max_lines)
    path = args[row.path]
    current, why = _current(path)
    edits = [args] if row.kind == "replace" else args[row.edits] if row.kind == "edits" else []
    new, problem = (args[row.content], None) if row.kind == "write" else _apply(current, why, edits, row)
    shows: Shows = "diff"
    if new is None:
        lines, cut = _fragments(edits, row, max_lines)
        note = f"{problem}; the {'edit' if row.kind == 'replace' else 'edits'} as given"
    elif current is None or len(new) > MAX_BYTES:
        lines, cut = _head(new, max_lines)
        shows = "content"
        if current is None:
            note = f"{why}; the content it writes"
        else:
            note = f"the new content is {len(new):,} characters, over the {MAX_BYTES >> 20} MiB a diff reads: its start"
    elif new == current:
        lines, cut, note = (), 0, f"no change: {path} already holds this content"
    else:
        lines, cut = unified(current, new, f"{path} (as it is now)", f"{path} (after this call)", max_lines)
        note = f"diff against {path} as it is now"
    if cut:
        note += f"; {'diff' if shows == 'diff' else 'content'} cut at {cut:,} lines"
    return EditPreview(tool, visible(path), shows, lines, visible(note), cut)


def _current(path: str) -> tuple[str | None, str]:
    """The file's text now, or None and why not (a new file, a relative path, unreadable).
    `~` is the operator's home, as the MCP filesystem server reads it."""
    expanded = Path(os.path.expanduser(path))
    if not expanded.is_absolute():
        return None, f"{path} is a relative path, not read here (the tool resolves it in its own folder)"
    try:
        os.stat(expanded)
    except FileNotFoundError:
        return None, f"{path} does not exist yet (a new file)"
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    except ValueError:  # a NUL in the path
        return None, f"cannot read {path}: not a path"
    try:
        return read_small_text(expanded, "text file", regular_only=True), ""
    except SmallFileError as exc:
        reason = str(exc).removeprefix(f"{expanded}: ")
        return None, f"cannot read {path}: {reason}"


def _apply(
    current: str | None, why: str, edits: Sequence[Mapping[str, Any]], row: EditTool
) -> tuple[str | None, str | None]:
    """The file after the edits, in turn, or (None, why they cannot be applied to it here)."""
    if current is None:
        if len(edits) == 1 and edits[0][row.old] == "":
            return edits[0][row.new], None  # an empty old text on a missing file creates it
        return None, why
    text = current
    for n, edit in enumerate(edits, 1):
        old, new = edit[row.old], edit[row.new]
        which = f"edit {n}: " if len(edits) > 1 else ""
        if old == "":
            return None, f"{which}the old text is empty and the file exists"
        found = text.count(old)
        every = bool(row.all) and edit.get(row.all) is True
        if found == 0:
            return None, f"{which}the old text is not in the file as it is now (the tool refuses the edit, or matches it loosely)"
        if found > 1 and not every and not row.first:
            return None, f"{which}the old text is in the file {found} times (the tool refuses it unless it replaces all)"
        text = text.replace(old, new) if every else text.replace(old, new, 1)
    return text, None


def _fragments(edits: Sequence[Mapping[str, Any]], row: EditTool, max_lines: int) -> tuple[tuple[str, ...], int]:
    """Each edit's old text against its new text, when the file itself cannot be used."""
    shown: list[str] = []
    cut = 0
    for n, edit in enumerate(edits, 1):
        room = max_lines - len(shown)
        if room <= 1:
            cut = max_lines
            break
        if len(edits) > 1:
            shown.append(f"edit {n} of {len(edits)}")
        old, new = (text if text.endswith("\n") else text + "\n" for text in (edit[row.old], edit[row.new]))
        lines, edit_cut = unified(old, new, "old text", "new text", room - 1)
        shown.extend(lines)
        cut = cut or edit_cut
    return tuple(shown), cut


def _split(text: str, limit: int) -> tuple[list[str], bool]:
    """At most `limit` lines with their "\\n" (the last one may lack it), and whether there were more."""
    parts = text.split("\n", limit)
    more = len(parts) > limit
    if more:
        return [part + "\n" for part in parts[:limit]], True
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines, False


def _shared_length(a: str, b: str, at_end: bool = False) -> int:
    """How many characters `a` and `b` share at their start (or end): a binary search of slice
    comparisons, each done in C, so a large file costs milliseconds."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        same = a[len(a) - mid :] == b[len(b) - mid :] if at_end else a[:mid] == b[:mid]
        low, high = (mid, high) if same else (low, mid - 1)
    return low


def _middle(a: str, b: str) -> tuple[int, int, int]:
    """Where the lines that differ (with CONTEXT lines around them) start, in both texts, and
    where they end in `a` and in `b`: what comes before and after is the same in both."""
    start = a.rfind("\n", 0, _shared_length(a, b)) + 1  # the start of the first line that differs
    for _ in range(CONTEXT):
        if start:
            start = a.rfind("\n", 0, start - 1) + 1
    shared_end = min(_shared_length(a, b, at_end=True), len(a) - start, len(b) - start)
    end = a.find("\n", len(a) - shared_end) + 1 or len(a)  # a line end inside what both share
    for _ in range(CONTEXT):
        end = a.find("\n", end) + 1 or len(a)
    return start, end, len(b) - (len(a) - end)


def _short(line: str) -> str:
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + f"… ({len(line) - MAX_LINE_CHARS:,} more characters)"
    return visible(line)


def _head(text: str, max_lines: int) -> tuple[tuple[str, ...], int]:
    """The first `max_lines` lines of `text` (never split further than that), and where they were cut."""
    parts = text.split("\n", max_lines)
    cut = max_lines if len(parts) > max_lines else 0
    parts = parts[:max_lines]
    if parts and parts[-1] == "" and not cut:
        parts.pop()
    return tuple(_short(p) for p in parts), cut


_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def unified(before: str, after: str, before_name: str, after_name: str, max_lines: int) -> tuple[tuple[str, ...], int]:
    """A unified diff of two texts, bounded: each text is read up to MAX_BYTES characters, the
    lines both share at the start and the end are set aside before anything is split (an edit
    to a large file costs what the edit costs), what differs is cut at MAX_DIFF_LINES lines on
    each side, and the result at `max_lines` lines. (lines, the line count it was cut at or 0)."""
    cut = MAX_DIFF_LINES if len(before) > MAX_BYTES or len(after) > MAX_BYTES else 0
    before, after = before[:MAX_BYTES], after[:MAX_BYTES]
    start, a_end, b_end = _middle(before, after)
    first = before.count("\n", 0, start)
    (a_mid, a_more), (b_mid, b_more) = _split(before[start:a_end], MAX_DIFF_LINES), _split(after[start:b_end], MAX_DIFF_LINES)
    if a_more or b_more:
        cut = MAX_DIFF_LINES
    out: list[str] = []
    for n, line in enumerate(difflib.unified_diff(a_mid, b_mid, before_name, after_name, lineterm="", n=CONTEXT)):
        if len(out) > max_lines:
            break
        if n < 2:
            out.append(visible(line))
        elif line.startswith("@@"):
            out.append(_HUNK.sub(lambda m: f"@@ -{int(m[1]) + first}{m[2]} +{int(m[3]) + first}{m[4]} @@", line))
        elif line.endswith("\n"):
            out.append(_short(line[:-1]))
        else:
            out.append(_short(line))
            out.append("\\ No newline at end of file")
    if len(out) > max_lines:
        out, cut = out[:max_lines], max_lines
    return tuple(out), cut


_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.*)$|^\*\*\* Move to: (.*)$")
_PATCH_WORDS = {"Add": "adds", "Update": "updates", "Delete": "deletes"}


def _patch_preview(tool: str, patch: str, max_lines: int) -> EditPreview:
    """A patch (Codex's `*** Begin Patch` format) shown as it is, its files named in the note."""
    lines, cut = _head(patch, max_lines)
    touched: list[str] = []
    for line in lines:
        m = _PATCH_FILE.match(line)
        if m and m[1]:
            touched.append(f"{_PATCH_WORDS[m[1]]} {m[2].strip()}")
        elif m and touched:
            touched[-1] += f" (moved to {m[3].strip()})"
    if not patch[:1000].lstrip().startswith("*** Begin Patch"):
        note = "the patch as given (it does not start with *** Begin Patch)"
    elif touched:
        more = f" and {len(touched) - 8} more" if len(touched) > 8 else ""
        note = "the patch as given: " + "; ".join(touched[:8]) + more
    else:
        note = "the patch as given: it names no file"
    if cut:
        note += f"; cut at {max_lines:,} lines"
    return EditPreview(tool, "", "patch", lines, note, cut)
