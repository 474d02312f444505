"""docs/architecture.md's folder map names every module of engine/, scenarios/ and tui/,
and names no module that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "scenarios", "tui")
DESCRIPTION_COLUMN = 24
"""Where the map's descriptions start: a line that starts left of it names a folder or files."""


def folder_map(text: str) -> str:
    """The code block under "Which folder holds what"."""
    section = text.split("## Which folder holds what", 1)[1]
    return section.split("```", 2)[1]


def named_modules(block: str) -> set[str]:
    """Every `NAME.py` (or `folder/NAME.py`) the map names, as a path from the repository root:
    relative to the folder it is listed under, or whole when it starts with a package."""
    folders: list[tuple[int, str]] = []
    named: set[str] = set()
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent < DESCRIPTION_COLUMN:
            while folders and folders[-1][0] >= indent:
                folders.pop()
            first = line.split()[0]
            if first.endswith("/"):
                folders.append((indent, (folders[-1][1] if folders else "") + first))
        here = folders[-1][1] if folders else ""
        for name in re.findall(r"(?<![\w./])([\w/]+\.py)\b", line):
            named.add(name if name.split("/")[0] in PACKAGES else here + name)
    return named


def modules() -> set[str]:
    """Every module file of the packages."""
    return {str(path.relative_to(ROOT)) for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def mapped_modules() -> set[str]:
    """The modules the map must name: all but a package's `__init__.py` and `__main__.py`
    (`engine/__init__.py`, the public API, is named)."""
    return {
        name
        for name in modules()
        if not Path(name).name.startswith("__") or name == "engine/__init__.py"
    }


def test_the_map_reader_places_names_in_their_folders() -> None:
    block = (
        "engine/                 the engine\n"
        "  __init__.py           the public API\n"
        "  core/                 the state machine\n"
        "    events.py           the events; see state.py\n"
        "  stored/               runs on disk: reader.py,\n"
        "                        (importers/detect.py)\n"
        "tui/                    everything\n"
        "  plain.py, export.py   words; engine/core/text.py\n"
    )
    assert named_modules(block) == {
        "engine/__init__.py",
        "engine/core/events.py",
        "engine/core/state.py",
        "engine/stored/reader.py",
        "engine/stored/importers/detect.py",
        "tui/plain.py",
        "tui/export.py",
        "engine/core/text.py",
    }


def test_the_folder_map_names_every_module_and_only_real_ones() -> None:
    named = named_modules(folder_map((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")))
    assert sorted(mapped_modules() - named) == [], "modules missing from docs/architecture.md's folder map"
    assert sorted(named - modules()) == [], "modules the folder map names that do not exist"
