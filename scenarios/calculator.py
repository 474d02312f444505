"""Calculator and file reader (seed 004): "What is 17 * 23, minus 100?" -> 291.

`read_file` is confined to a folder of notes shipped with the scenario (or the
folder given as the `root` option).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from engine import Budget, Decision, Param, RunView, Scenario, ScriptedPolicy, Task, Tool
from engine.core.events import Observed
from scenarios.safe import ConfinedReader, calculate

NOTES = Path(__file__).parent / "data" / "notes"


@dataclass
class CalculatorWorld:
    root: Path
    tools: list[Tool] = field(init=False)

    def __post_init__(self) -> None:
        reader = ConfinedReader(self.root)
        self.tools = [
            Tool(
                "calculator",
                "Evaluate an arithmetic expression like '17 * 23 - 100'.",
                (Param("expression", description="Numbers with + - * / and parentheses."),),
                calculate,
            ),
            Tool(
                "read_file",
                "Read a text file from the notes folder.",
                (Param("path", description="A path inside the notes folder, e.g. rates.txt."),),
                reader.read,
            ),
        ]

    def restore(self, executed: Sequence[Observed]) -> None:
        """Nothing to rebuild on resume or fork: the tools only read."""


def arithmetic(view: RunView) -> Decision:
    ok = view.valid_observations()
    if not ok:
        return Decision.act("This needs arithmetic: 17 times 23, then minus 100.", "calculator", expression="17 * 23 - 100")
    return Decision.final("The calculator gave the result.", ok[-1])


def reader(view: RunView) -> Decision:
    """Reads the note that holds the numbers, then computes."""
    ok = view.valid_observations()
    if not ok:
        return Decision.act("The numbers are in the notes; I read them first.", "read_file", path="task.txt")
    if len(ok) == 1:
        return Decision.act("The note confirms 17, 23 and 100.", "calculator", expression="17 * 23 - 100")
    return Decision.final("Done.", ok[-1])


def _make_world(task: Task, options: dict[str, Any]) -> CalculatorWorld:
    return CalculatorWorld(Path(options.get("root") or NOTES))


SCENARIO = Scenario(
    name="calculator",
    description="A calculator and a file reader confined to one folder (seed 004).",
    tasks={"17x23": Task("17x23", "What is 17 * 23, minus 100?", expected="291")},
    policies={
        "arithmetic": lambda w, t: ScriptedPolicy("arithmetic", arithmetic),
        "reader": lambda w, t: ScriptedPolicy("reader", reader),
    },
    make_world=_make_world,
    budget=Budget(max_steps=6, max_tokens=2000),
    options={"root": None},
)
