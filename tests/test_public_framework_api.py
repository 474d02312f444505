"""The code uses only the public API of Textual, Rich and argparse: no private module,
class or attribute (a name starting with `_`), which a minor release may change."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ("textual", "rich", "argparse")


def private_uses(source: str) -> list[str]:
    """Each `import`, `from ... import` or attribute access that reaches a private name of a framework."""
    found: list[str] = []
    aliases: set[str] = set()  # local names bound to a framework module
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FRAMEWORKS:
                    aliases.add((alias.asname or alias.name).split(".")[0])
                    if any(part.startswith("_") for part in alias.name.split(".")):
                        found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            parts = node.module.split(".")
            if parts[0] not in FRAMEWORKS:
                continue
            names = [alias.name for alias in node.names]
            if any(part.startswith("_") for part in parts) or any(name.startswith("_") for name in names):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(names)}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_checker_finds_private_names() -> None:
    source = (
        "import argparse\n"
        "from textual.widgets._footer import FooterKey\n"
        "from rich import _wrap\n"
        "class A(argparse._SubParsersAction): pass\n"
        "from textual.widgets import Footer\n"
    )
    assert private_uses(source) == [
        "2: from textual.widgets._footer import FooterKey",
        "3: from rich import _wrap",
        "4: argparse._SubParsersAction",
    ]


def test_no_module_uses_a_private_name_of_textual_rich_or_argparse() -> None:
    found = {
        str(path.relative_to(ROOT)): uses
        for package in ("engine", "scenarios", "tui", "tests", "bench")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}
