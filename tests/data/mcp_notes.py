"""Scripted policies for runs whose tools come from MCP servers (tests/support/mcp_server.py, server-filesystem).

No tools of its own: `agent-tui run tests/data/mcp_notes.py --mcp '...'` gives the
run the servers' tools, and these policies call them by name. `--option dir=PATH`
tells the filesystem policies which folder to work in.
"""

from __future__ import annotations

from typing import Any

from engine import Decision, Scenario, ScriptedPolicy, Task


class Folder:
    tools: list = []

    def __init__(self, options: dict[str, Any]) -> None:
        self.dir = str(options.get("dir", "."))

    def restore(self, executed: Any) -> None:
        """The servers keep their own state."""


def _script(name: str, steps):
    def make(world: Folder, task: Task) -> ScriptedPolicy:
        decisions = steps(world)

        def decide(view):
            index = view.step - 1
            return decisions[index] if index < len(decisions) else Decision.final("nothing left", "done")

        return ScriptedPolicy(name, decide)

    return make


def _notes(world: Folder) -> list[Decision]:
    return [
        Decision.act("See which notes exist.", "list_notes"),
        Decision.act("Read the todo note.", "read_note", name="todo"),
        Decision.act("The todo is done: delete it.", "delete_note", name="todo"),
        Decision.final("Deleted.", "the todo note said: buy milk"),
    ]


def _fs(world: Folder) -> list[Decision]:
    d = world.dir
    return [
        Decision.act("Look at the folder.", "list_directory", path=d),
        Decision.act("Write the greeting.", "write_file", path=f"{d}/hello.txt", content="hello from agent-tui\n"),
        Decision.act("Check it.", "read_text_file", path=f"{d}/hello.txt"),
        Decision.final("Written.", "hello.txt is written"),
    ]


def _slow(world: Folder) -> list[Decision]:
    return [
        Decision.act("Count slowly.", "slow", steps=40, delay=0.1),
        Decision.act("See the notes.", "list_notes"),
        Decision.final("Counted.", "counted"),
    ]


SCENARIO = Scenario(
    name="mcp-notes",
    description="scripted policies over MCP tools (tests)",
    tasks={
        "notes": Task("notes", "Read the todo note, then delete it."),
        "files": Task("files", "Write hello.txt in the folder."),
        "slow": Task("slow", "Count slowly."),
    },
    policies={"notes": _script("notes", _notes), "files": _script("files", _fs), "slow": _script("slow", _slow)},
    make_world=lambda task, options: Folder(options),
    options={"dir": "."},
)
