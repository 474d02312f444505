"""Every pytest marker pyproject.toml declares marks some test (a marker nothing uses is a switch that does nothing)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_declared_marker_is_used() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]["markers"]
    names = [line.split(":")[0].strip() for line in declared]
    code = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "tests").rglob("*.py") if path.name != Path(__file__).name)
    unused = [name for name in names if not re.search(rf"\bmark\.{re.escape(name)}\b", code)]
    assert unused == []
