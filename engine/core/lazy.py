"""Names of a package imported from their modules on first use (PEP 562).

A package's `__init__` that re-exports names (`from engine import Tool`) would import every
module it names, so that reading a transcript would build the engine, and reading an MCP
server's configuration would load the hub. `lazy_names` gives the package the module-level
`__getattr__` and `__dir__` that import a name when it is first asked for, and keep it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_names(package: str, homes: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose public names live in `homes` (name: module)."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
