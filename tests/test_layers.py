"""The core stays free of the UI: importing engine or scenarios loads neither textual nor rich."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import engine
import scenarios

ROOT = Path(__file__).resolve().parent.parent


def _modules(package) -> list[str]:
    names = [package.__name__]
    names += [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return names


@pytest.mark.parametrize("module", _modules(engine) + _modules(scenarios) + ["tui.cli", "tui.plain"])
def test_core_module_imports_no_ui(module: str) -> None:
    code = (
        "import sys, importlib\n"
        f"importlib.import_module({module!r})\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"{module} imported {out.stdout.strip()}"


def test_every_scenario_loads_without_ui() -> None:
    code = (
        "import sys, scenarios\n"
        "for n in scenarios.names(): scenarios.get(n)\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""


def test_old_engine_module_paths_are_the_moved_modules() -> None:
    """Scenario files written before the rooms keep importing `engine.events`, `engine.safe`..."""
    import importlib

    from engine._moved import MOVED

    for old, new in MOVED.items():
        assert importlib.import_module(old) is importlib.import_module(new), old
    from engine.events import Observed  # type: ignore[import-not-found]
    from engine.core.events import Observed as moved

    assert Observed is moved
