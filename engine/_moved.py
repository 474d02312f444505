"""Old module paths from before the engine was grouped into rooms.

`from engine import ...` is the public API; scenario files written earlier may
also import `engine.events`, `engine.safe` and the like. Those names resolve
to the module at its new place (the same module object, not a copy).
Project code uses the new paths.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

MOVED = {
    "engine.approvals": "engine.core.approvals",
    "engine.engine": "engine.core.engine",
    "engine.events": "engine.core.events",
    "engine.parse": "engine.core.parse",
    "engine.policy": "engine.core.policy",
    "engine.scenario": "engine.core.scenario",
    "engine.state": "engine.core.state",
    "engine.text": "engine.core.text",
    "engine.tools": "engine.core.tools",
    "engine.eventlog": "engine.stored.eventlog",
    "engine.importers": "engine.stored.importers",
    "engine.replay": "engine.stored.replay",
    "engine.transcript": "engine.stored.transcript",
    "engine.resume": "engine.sessions.resume",
    "engine.run": "engine.sessions.run",
    "engine.verify": "engine.sessions.verify",
    "engine.model_wire": "engine.model.wire",
    "engine.safe": "scenarios.safe",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: object = None, target: object = None):  # type: ignore[override]
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec) -> ModuleType:  # type: ignore[override]
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        pass


def install() -> None:
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
