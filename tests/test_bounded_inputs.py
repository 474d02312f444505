"""Bad input of any kind is a clear message, never a traceback: a rules file or a configuration
file nested too deeply for the TOML reader's recursion is refused with the file named (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "flag, text",
    [
        ("--rules", f'[[rule]]\ntool = "x"\neffect = "allow"\nargs = {{ a = {DEEP} }}\n'),
        ("--config", f"[budget]\nmax_steps = {DEEP}\n"),
    ],
    ids=["rules", "config"],
)
def test_a_toml_file_nested_too_deeply_is_refused_with_its_name(tmp_path: Path, flag: str, text: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "support", flag, str(path), "--headless", "--approve", "none", "--out", str(tmp_path / "r.jsonl")],
        capture_output=True, text=True, cwd=ROOT, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{path}: not valid TOML: nested too deeply" in done.stderr
    assert not (tmp_path / "r.jsonl").exists()
