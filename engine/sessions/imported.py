"""A world for forking an imported run: the tools its log declared or called, none of which runs on its own.

An imported trace has no world behind it, but another policy (a model, or the
operator) can take over from any step. The tools are the ones the header
lists (declared by a request body, or inferred from the calls seen), every
argument optional and of any JSON type (others accepted too); each is irreversible, so every call
of the fork stops for the operator. Approving runs nothing (there is no code
behind an imported tool) and says so; rejecting with a reason hands the
policy the operator's words instead, the way to answer a call by hand.
"""

from __future__ import annotations

from typing import Any, Callable

from engine.core.events import Budget, Header
from engine.core.scenario import Scenario, Task
from engine.core.tools import Param, Tool

IMPORTED = "imported"
FORK_POLICIES = ("human", "model")
"""The policies an imported run can be forked with (it has no scripted ones)."""
_PLAIN = ("string", "integer", "number", "boolean")


def _nothing_runs(name: str) -> Callable[..., str]:
    def call(**_args: Any) -> str:
        return (f"(approved, but nothing ran: '{name}' comes from an imported log and has no code here; "
                "reject a call with a reason to answer it by hand)")

    return call


class _World:
    def __init__(self, tools: list[Tool]) -> None:
        self.tools = tools

    def restore(self, executed: object) -> None:
        """Nothing to rebuild: no imported tool changes anything here."""


def imported_scenario(header: Header) -> Scenario:
    """The scenario a fork of the imported run `header` acts in."""
    tools = []
    for info in header.tools:
        params = tuple(
            Param(name=str(p.get("name")), type=p.get("type") if p.get("type") in _PLAIN else "json", required=False)
            for p in info.parameters if p.get("name")
        )
        tools.append(Tool(name=info.name, description=info.description or f"{info.name} (from the imported log)",
                          params=params, fn=_nothing_runs(info.name), kind="irreversible", timeout=None,
                          extra_args=True))
    task = Task(header.task, header.task_text)
    return Scenario(
        name=IMPORTED,
        description=f"an imported {header.options.get('format', 'foreign')} log",
        tasks={task.id: task},
        policies={},
        make_world=lambda _task, _options: _World(tools),
        budget=Budget(),
        repetition_threshold=None,
    )
