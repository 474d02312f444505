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


def test_the_public_names_are_imported_on_first_use() -> None:
    """`import engine` builds nothing (it loads only the small helper that imports names on
    first use, engine/core/lazy.py); each name of `from engine import ...` is the object of its
    module, and `__all__` and `dir()` list every one."""
    code = (
        "import sys, engine\n"
        "before = sorted(m for m in sys.modules if m.startswith('engine.'))\n"
        "from engine import Tool\n"
        "print(before, 'engine.core.tools' in sys.modules, 'engine.core.engine' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "['engine.core', 'engine.core.lazy'] True False"
    import importlib

    names = ["Action", "Answer", "Budget", "Decision", "Engine", "EngineError", "Header", "HumanPolicy", "Param", "Policy",
             "PolicyError", "RuleInfo", "RunView", "Scenario", "ScriptedPolicy", "Task", "Tool", "ToolError", "Usage"]
    assert sorted(engine.__all__) == names and set(names) <= set(dir(engine))
    for name in names:
        value = getattr(engine, name)
        assert value is getattr(importlib.import_module(value.__module__), name), name
        assert value.__module__.startswith("engine.core."), name
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        engine.Nothing  # noqa: B018
    with pytest.raises(ImportError):
        from engine import Nothing  # type: ignore[attr-defined] # noqa: F401


@pytest.mark.parametrize("package", ["engine.acp", "engine.mcp"])
def test_a_package_s_names_are_imported_on_first_use(package: str) -> None:
    """`engine.acp` and `engine.mcp` name their parts as `engine` does: importing the package
    loads none of them, and each name of `__all__` (also in `dir()`) is its module's object."""
    code = f"import sys, {package}\nprint(sorted(m for m in sys.modules if m.startswith('{package}.')))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
    import importlib

    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__) and len(module.__all__) >= 4
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(value.__module__), name), name
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        module.Nothing  # noqa: B018


def test_the_modules_live_only_at_their_own_paths() -> None:
    """No aliases of the paths from before the engine was grouped into rooms (`engine.events`...)."""
    import importlib

    for old in ("engine.events", "engine.engine", "engine.policy", "engine.transcript", "engine.run", "engine.safe"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
