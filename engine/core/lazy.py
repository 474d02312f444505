"""Names of a package imported from their modules on first use (PEP 562).

A package's `__init__` that re-exports names (`from engine import Tool`) would import every
module it names, so that reading a transcript would build the engine, and reading an MCP
server's configuration would load the hub. `lazy_names` gives the package its `__all__` and the
module-level `__getattr__` and `__dir__` that import a name when it is first asked for, and keep
it. The package lists its names by module, as the imports it stands for would.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_names(
    package: str, modules: dict[str, tuple[str, ...]]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` for `package`, whose public names live in `modules`
    (module: its names)."""
    namespace = sys.modules[package].__dict__
    homes = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return sorted(homes), __getattr__, __dir__
