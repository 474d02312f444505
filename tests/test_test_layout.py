"""The tests share helpers through tests/support/ and conftest.py only: no test file imports another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_test_file_imports_another_test_file() -> None:
    files = [*TESTS.glob("*.py"), *TESTS.glob("support/*.py"), *TESTS.glob("data/*.py")]
    offenders = {
        f"{path.relative_to(TESTS)} imports {module}"
        for path in files
        for module in _imported_modules(path)
        if module.startswith("tests.test_") or module.startswith("test_")
    }
    assert sorted(offenders) == []


def test_every_module_beside_the_tests_is_a_test_or_the_conftest() -> None:
    """Helpers live in tests/support/, so a module at the top of tests/ is a test file."""
    strays = sorted(p.name for p in TESTS.glob("*.py") if not p.name.startswith("test_") and p.name not in {"__init__.py", "conftest.py"})
    assert strays == []
