"""The neighbourhood library (seed 000): how many copies of a book are free?

Three tools (catalog, loans, calc) and the seed's three hand-written policies:
good answers 2 after 4 steps, hallucinating invents `web_search`, recovers and
answers 2 after 5 steps, stuck repeats itself and is stopped at step 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from engine import Budget, Param, RunView, Scenario, ScriptedPolicy, Task, Tool, ToolError
from engine.core.events import Observed
from scenarios.safe import calculate

CATALOG = {"Il Gattopardo": 5, "Se questo e' un uomo": 2}
LOANS = {"Il Gattopardo": 3, "Se questo e' un uomo": 2}
QUESTION = "How many copies of Il Gattopardo are available?"


def _lookup(table: dict[str, int], title: str) -> int:
    key = title.strip().strip("\"'")
    if key not in table:
        raise ToolError(f"KeyError: no title '{key}' (titles: {', '.join(sorted(table))})")
    return table[key]


@dataclass
class LibraryWorld:
    tools: list[Tool] = field(init=False)

    def __post_init__(self) -> None:
        title = (Param("title", description="The exact title of the book."),)
        self.tools = [
            Tool("catalog", "Total copies the library owns of a title.", title, lambda title: _lookup(CATALOG, title)),
            Tool("loans", "Copies of a title that are out on loan.", title, lambda title: _lookup(LOANS, title)),
            Tool(
                "calc",
                "Arithmetic on numbers with + - * / and parentheses.",
                (Param("expression", description="For example 5 - 3."),),
                calculate,
            ),
        ]

    def restore(self, executed: Sequence[Observed]) -> None:
        """Nothing to rebuild on resume or fork: the tools only read."""


def good(view: RunView) -> str:
    ok = view.valid_observations()
    if len(ok) == 0:
        return "Thought: I need the total copies.\nAction: catalog[Il Gattopardo]"
    if len(ok) == 1:
        return "Thought: now the copies on loan.\nAction: loans[Il Gattopardo]"
    if len(ok) == 2:
        return f"Thought: I subtract.\nAction: calc[{ok[0]} - {ok[1]}]"
    return f"Thought: I have the number.\nFinal Answer: {ok[2]}"


def hallucinating(view: RunView) -> str:
    if not view.observations():
        return "Thought: I search online.\nAction: web_search[Il Gattopardo copies]"
    return good(view)


def stuck(view: RunView) -> str:
    return "Thought: I need the total copies.\nAction: catalog[Il Gattopardo]"


def _maker(name: str, fn: Any):
    return lambda world, task: ScriptedPolicy(name, fn)


SCENARIO = Scenario(
    name="library",
    description="A ReAct loop over a small library: catalog, loans and a safe calculator (seed 000).",
    tasks={"copies": Task("copies", QUESTION, expected="2")},
    policies={
        "good": _maker("good", good),
        "hallucinating": _maker("hallucinating", hallucinating),
        "stuck": _maker("stuck", stuck),
    },
    make_world=lambda task, options: LibraryWorld(),
    budget=Budget(max_steps=6, max_tokens=2000),
)
