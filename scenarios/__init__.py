"""Built-in scenarios and the registry that finds them.

A scenario is one module defining `SCENARIO`. Built-ins are listed here;
third-party ones come from the `agent_tui.scenarios` entry-point group or
from a file path (`agent-tui run path/to/my_world.py`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scenarios.plugins import plugin_names

if TYPE_CHECKING:
    from engine.core.scenario import Scenario

BUILTIN = {
    "support": "scenarios.support",
    "library": "scenarios.library",
    "calculator": "scenarios.calculator",
    "grid": "scenarios.grid",
    "research": "scenarios.research",
    "mcp": "scenarios.mcp",
}
DEFAULT = "support"
MCP = "mcp"


class ScenarioError(Exception):
    """A scenario that cannot be found or loaded."""


def _from_module(module: object, where: str) -> Scenario:
    from engine.core.scenario import Scenario

    scenario = getattr(module, "SCENARIO", None)
    if not isinstance(scenario, Scenario):
        raise ScenarioError(f"{where} does not define SCENARIO = Scenario(...)")
    older_score = getattr(module, "bench_score", None)
    if scenario.score is None and callable(older_score):
        # the older form: a module-level bench_score() next to SCENARIO
        scenario.score = older_score
    return scenario


def load_file(path: str | Path) -> Scenario:
    p = Path(path)
    if p.is_dir():
        raise ScenarioError(f"{p}: is a folder, not a scenario file")
    if not p.is_file():
        raise ScenarioError(f"{p}: no such scenario file")
    name = f"agent_tui_scenario_{abs(hash(str(p.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise ScenarioError(f"{p}: not a scenario file (a .py file defining SCENARIO = Scenario(...))")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ScenarioError(f"{p}: failed to load: {type(exc).__name__}: {exc}") from None
    return _from_module(module, str(p))


def _plugins() -> dict[str, object]:
    from importlib.metadata import entry_points

    try:
        return {ep.name: ep for ep in entry_points(group="agent_tui.scenarios")}
    except Exception:
        return {}


def names() -> list[str]:
    """The built-in scenarios, then the installed plugins (found without importing them)."""
    return [*BUILTIN, *(n for n in plugin_names() if n not in BUILTIN)]


def _is_path(name: str) -> bool:
    return name.endswith(".py") or "/" in name or "\\" in name or name.startswith((".", "~"))


def get(name: str) -> Scenario:
    """A scenario by name, or by the path of a Python file that defines one.

    Only for names the operator gave: a name read from a transcript goes
    through `get_named`, which never loads a file.
    """
    if name not in BUILTIN and _is_path(name):
        return load_file(name)
    try:
        return get_named(name)
    except ScenarioError:
        if Path(name).exists():  # `run adir`, `run notes.txt`: say what that path is not
            return load_file(name)
        raise


def get_named(name: str) -> Scenario:
    """A built-in or installed (entry point) scenario by name; never a file.

    A saved run is data: the scenario it names is looked up here, so a
    transcript cannot make agent-tui import code from a path it chose.
    """
    if name in BUILTIN:
        return _from_module(importlib.import_module(BUILTIN[name]), name)
    if _is_path(name):
        raise ScenarioError(
            f"the run names a scenario file ({name!r}); a saved run never chooses code to load: "
            "give the scenario file yourself (agent-tui run PATH --resume FILE, agent-tui verify FILE --scenario PATH)"
        )
    plugin = _plugins().get(name)
    if plugin is not None:
        try:
            loaded = plugin.load()  # type: ignore[attr-defined]
        except Exception as exc:
            raise ScenarioError(f"scenario plugin '{name}' failed to load: {exc}") from None
        from engine.core.scenario import Scenario

        return loaded if isinstance(loaded, Scenario) else _from_module(loaded, f"plugin '{name}'")
    raise ScenarioError(f"no scenario '{name}' (scenarios: {', '.join(names())})")
