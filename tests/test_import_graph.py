"""No import circle between the project's modules, counting imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "scenarios", "tui")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body."""
    files = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in files else base)
            graph[name] |= {t for t in targets if t in files and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_between_project_modules() -> None:
    graph = import_graph()
    assert "tui.cli.run" in graph["tui.cli.replay"] and "engine.core.events" in graph["engine.core.state"]
    assert cycles(graph) == []


def test_the_circle_finder_sees_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def part(module: str) -> str:
    """The package a module belongs to for the layer rules: `engine.core`, `engine.stored`, ...,
    `engine` (the public API), `scenarios`, `tui.cli` (the commands, `tui.bench` among them),
    `tui.screens`, `tui.widgets`, or `tui` (the apps and what they share)."""
    parts = module.split(".")
    if parts[0] == "engine":
        return f"engine.{parts[1]}" if len(parts) > 1 and parts[1] in ENGINE_RANK else "engine"
    if parts[0] == "tui":
        if module == "tui.bench":
            return "tui.cli"
        return f"tui.{parts[1]}" if len(parts) > 1 and parts[1] in ("cli", "screens", "widgets") else "tui"
    return parts[0]


ENGINE_RANK = {"core": 0, "stored": 1, "wires": 1, "model": 2, "mcp": 3, "sessions": 4, "gateway": 5}
"""Within engine/, a package imports only packages of a lower rank: the core below the
stored runs and the wire modules (each model API's translation), the wires below the model
client, those below MCP, all of them below the sessions, which the gateway builds on;
`engine` (the public API) sits above them all."""


def wrong_way(importer: str, imported: str) -> str | None:
    """Why the arrow `importer -> imported` goes the wrong way between packages, or None."""
    a, b = part(importer), part(imported)
    if a == b:
        return None
    if a.startswith("engine") and not b.startswith("engine"):
        return "engine/ imports neither scenarios/ nor tui/"
    if a.startswith("engine.") and b == "engine":
        return "a part of engine/ imports its parts, not the public API above them"
    if a.startswith("engine.") and b.startswith("engine."):
        if ENGINE_RANK[b.split(".")[1]] >= ENGINE_RANK[a.split(".")[1]]:
            return f"{a} sits below {b}"
        return None
    if a == "scenarios" and b not in ("engine", "engine.core"):
        return "scenarios/ are written against engine's public API and core"
    if a.startswith("tui") and b == "tui.cli":
        return "the commands (tui/cli/) sit above the apps, screens and widgets"
    if a == "tui.widgets" and b == "tui.screens":
        return "widgets sit below screens"
    if a == "tui.widgets" and b.startswith("engine.") and b not in ("engine.core", "engine.stored"):
        return "a widget draws the core's and the stored runs' data, not a service's"
    return None


KNOWN_WRONG_WAY: set[tuple[str, str]] = set()
"""Arrows that go the wrong way today, each with why it is left: the test fails on any other,
and on one of these once it is gone (so the list only shrinks)."""


def test_packages_import_only_downwards() -> None:
    graph = import_graph()
    found = {(a, b): why for a in sorted(graph) for b in sorted(graph[a]) if (why := wrong_way(a, b))}
    new = {f"{a} -> {b}": why for (a, b), why in found.items() if (a, b) not in KNOWN_WRONG_WAY}
    assert new == {}
    assert sorted(KNOWN_WRONG_WAY - set(found)) == [], "gone: take them off KNOWN_WRONG_WAY"


def test_the_layer_rules_see_wrong_arrows() -> None:
    assert wrong_way("engine.core.engine", "engine.stored.transcript")
    assert wrong_way("engine.core.engine", "engine.stored.eventlog")  # the live run's log is the core's
    assert wrong_way("engine.core.eventlog", "engine.stored.source")
    assert wrong_way("engine.mcp.hub", "engine.sessions.config")
    assert wrong_way("engine.stored.reader", "tui.plain")
    assert wrong_way("scenarios.grid", "engine.sessions.run")
    assert wrong_way("tui.app", "tui.cli.common")
    assert wrong_way("tui.screens.runs", "tui.cli.common")
    assert wrong_way("tui.widgets.mcp_progress", "engine.mcp.hub")
    assert wrong_way("tui.widgets.blocks", "tui.screens.dialogs")
    assert not wrong_way("engine.sessions.run", "engine.core.engine")
    assert not wrong_way("tui.cli.run", "tui.app")
    assert not wrong_way("tui.screens.approval", "tui.widgets.diff_view")
    assert not wrong_way("scenarios.grid", "engine")
