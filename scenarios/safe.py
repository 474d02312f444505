"""Safe building blocks for scenario tools.

`calculate` evaluates arithmetic without eval: numbers, + - * /, parentheses
and unary minus, nothing else, with bounds on size. `ConfinedReader` reads
text files inside one folder and refuses anything that would leave it.
"""

from __future__ import annotations

import ast
import errno
import math
import operator
import os
import stat
from pathlib import Path

from engine.core.tools import ToolError

MAX_EXPRESSION = 500
MAX_DEPTH = 50
MAX_MAGNITUDE = 10**100

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def _check(value: int | float) -> int | float:
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("ValueError: result is not a finite number")
    if abs(value) > MAX_MAGNITUDE:
        raise ToolError("ValueError: number too large")
    return value


def _eval(node: ast.AST, depth: int) -> int | float:
    if depth > MAX_DEPTH:
        raise ToolError("ValueError: expression nested too deeply")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _check(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, depth + 1), _eval(node.right, depth + 1)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ToolError("ZeroDivisionError: division by zero")
        return _check(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check(_UNARY[type(node.op)](_eval(node.operand, depth + 1)))
    raise ToolError("ValueError: expression not allowed (only numbers, + - * / and parentheses)")


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression; raises ToolError on anything else."""
    text = str(expression).strip()
    if not text:
        raise ToolError("ValueError: empty expression")
    if len(text) > MAX_EXPRESSION:
        raise ToolError(f"ValueError: expression longer than {MAX_EXPRESSION} characters")
    if any(c.isalpha() and c not in "eE" for c in text) or "_" in text:
        raise ToolError("ValueError: expression not allowed (only numbers, + - * / and parentheses)")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ToolError("SyntaxError: not an arithmetic expression") from None
    value = _eval(tree.body, 0)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    return str(value)


class ConfinedReader:
    """Reads text files below `root`; refuses absolute paths, `..`, links and hard-linked files.

    The file is opened by walking from the folder's own descriptor one name at
    a time without following links (`O_NOFOLLOW`), so a link swapped in during
    the read cannot lead outside; a file with more than one name (a hard link
    to something elsewhere) is refused. Messages name the path as given, never
    the folder's absolute path.
    """

    def __init__(self, root: str | Path, max_bytes: int = 1_000_000) -> None:
        self.root = Path(root).resolve()
        self.max_bytes = max_bytes

    def _parts(self, path: str) -> list[str]:
        raw = str(path).strip()
        if not raw:
            raise ToolError("PermissionError: empty path")
        if "\x00" in raw:
            raise ToolError("PermissionError: the path contains a NUL byte")
        if Path(raw).is_absolute() or raw.startswith(("/", "\\", "~")) or (len(raw) > 1 and raw[1] == ":"):
            raise ToolError("PermissionError: absolute paths are not allowed; give a path inside the folder")
        parts = [p for p in raw.replace("\\", "/").split("/") if p not in ("", ".")]
        if any(part == ".." for part in parts):
            raise ToolError("PermissionError: '..' is not allowed in paths")
        if not parts:
            raise ToolError(f"IsADirectoryError: '{path}' is not a file")
        return parts

    def _open(self, path: str) -> int:
        """A descriptor for the regular file at `path`, opened without following any link."""
        parts = self._parts(path)
        try:
            folder = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise ToolError("FileNotFoundError: the notes folder cannot be opened") from None
        try:
            for part in parts[:-1]:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
                os.close(folder)
                folder = inner
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            raise self._refusal(path, exc) from None
        finally:
            os.close(folder)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise ToolError(f"IsADirectoryError: '{path}' is not a file")
        if info.st_nlink != 1:
            os.close(fd)
            raise ToolError(f"PermissionError: '{path}' has other names (hard links); it is not read")
        return fd

    def _refusal(self, path: str, exc: OSError) -> ToolError:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            return ToolError(f"PermissionError: '{path}' goes through a link; links are not followed")
        if exc.errno == errno.ENOENT:
            return ToolError(f"FileNotFoundError: no file '{path}' (files: {', '.join(self.listing()) or 'none'})")
        if exc.errno == errno.EISDIR:
            return ToolError(f"IsADirectoryError: '{path}' is not a file")
        return ToolError(f"OSError: '{path}' cannot be read ({exc.strerror or 'error'})")

    def read(self, path: str) -> str:
        fd = self._open(path)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(self.max_bytes + 1)
        text = data[: self.max_bytes].decode("utf-8", errors="replace")
        if len(data) > self.max_bytes:
            text += f"\n[... file longer than {self.max_bytes} bytes, rest not read]"
        return text

    def listing(self) -> list[str]:
        names = []
        for dirpath, _dirs, files in os.walk(self.root):
            for f in files:
                full = Path(dirpath) / f
                if full.is_symlink():
                    continue
                names.append(str(full.relative_to(self.root)))
        return sorted(names)[:50]
