"""Installed scenario plugins (the `agent_tui.scenarios` entry-point group), found fast.

`importlib.metadata` costs more to import and scan than the rest of
`agent-tui list` together, so the names are read here from the
`entry_points.txt` files of the distributions installed in the folders on
`sys.path`, as `importlib.metadata` reads them (the first distribution of a
name wins). Anything this cannot see in a plain folder (a zip on the path)
falls back to `importlib.metadata`. Loading a plugin goes through
`importlib.metadata` as before.
"""

from __future__ import annotations

import os
import re
import sys

GROUP = "agent_tui.scenarios"
_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")


def plugin_names(group: str = GROUP) -> list[str]:
    """The names in `group`, as `importlib.metadata.entry_points(group=group)` gives them."""
    names: list[str] = []
    seen: set[str] = set()
    for folder in sys.path:
        folder = folder or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return _from_metadata(group)  # a zip or egg file on the path: the full machinery
            continue
        try:
            children = os.listdir(folder)
        except OSError:
            continue
        infos = [c for c in children if c.endswith(".dist-info")]
        eggs = [c for c in children if c.endswith(".egg-info")]
        for child in infos + eggs:
            dist = _dist_name(child)
            if dist not in seen:  # the first distribution of a name wins
                seen.add(dist)
                names.extend(_group_names(os.path.join(folder, child, "entry_points.txt"), group))
    return list(dict.fromkeys(names))


def _dist_name(child: str) -> str:
    """`Foo.Bar-1.0.dist-info` -> `foo_bar`, as importlib.metadata normalises it."""
    return re.sub(r"[-_.]+", "_", child.rsplit(".", 1)[0].partition("-")[0]).lower()


def _group_names(path: str, group: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return []
    if group not in text:
        return []
    names, inside = [], False
    for line in text.splitlines():
        section = _SECTION.match(line)
        if section:
            inside = section.group(1).strip() == group
        elif inside and "=" in line and not line.lstrip().startswith(("#", ";")):
            names.append(line.split("=", 1)[0].strip())
    return names


def _from_metadata(group: str) -> list[str]:
    from importlib.metadata import entry_points

    try:
        return list(dict.fromkeys(ep.name for ep in entry_points(group=group)))
    except Exception:
        return []
