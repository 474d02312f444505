"""Which modules a fresh interpreter loads for a command (the heavy ones named)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


PROBE = """
import contextlib, io, json, sys
from tui.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(ARGV)
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded_by(*argv: str) -> tuple[int, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.replace("ARGV", repr(list(argv)))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    data = json.loads(out.strip().splitlines()[-1])
    return data["code"], set(data["modules"])


def heavy(modules: set[str], *roots: str) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in roots or any(m == r or m.startswith(r + ".") for r in roots))
