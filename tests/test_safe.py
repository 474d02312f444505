"""The calculator never evaluates code; the file reader never leaves its folder."""

from __future__ import annotations

import os

import pytest

from engine.safe import ConfinedReader, calculate
from engine.tools import ToolError


@pytest.mark.parametrize(
    "expression, result",
    [("17 * 23 - 100", "291"), ("5 - 3", "2"), ("-(2 + 3) * 4", "-20"), ("7 / 2", "3.5"), ("1e3 + 1", "1001")],
)
def test_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize(
    "expression",
    [
        '__import__("os").getcwd()',
        "os.system('true')",
        "x",
        "(1).__class__",
        "2 ** 10",
        "9 ** 9 ** 9",
        "[1, 2]",
        "lambda: 1",
        "1 if 1 else 2",
        "1/0",
        "",
        "1" * 600,
        "-" * 300 + "1",
        "99999999999999999999 * 99999999999999999999 * 99999999999999999999 * 99999999999999999999 * 99999999999999999999 * 99999999999999999999",
        "1e308 * 10",
    ],
)
def test_refused_expressions_raise_tool_errors(expression):
    with pytest.raises(ToolError):
        calculate(expression)


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("inside")
    (root / "sub" / "b.txt").write_text("deeper")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    os.symlink(tmp_path, root / "up")
    return root


def test_reads_inside(folder):
    reader = ConfinedReader(folder)
    assert reader.read("a.txt") == "inside"
    assert reader.read("sub/b.txt") == "deeper"


@pytest.mark.parametrize(
    "path", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", "link.txt", "up/secret.txt", "~/x", "a\x00.txt", ""]
)
def test_refuses_paths_that_leave(folder, path):
    with pytest.raises(ToolError, match="PermissionError"):
        ConfinedReader(folder).read(path)


def test_missing_file_lists_what_is_there(folder):
    with pytest.raises(ToolError, match="a.txt"):
        ConfinedReader(folder).read("nope.txt")
