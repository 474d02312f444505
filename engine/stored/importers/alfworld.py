"""ALFWorld text-game trajectories, as the ReAct paper's prompts write them.

A household game played one line at a time::

    Interact with a household to solve a task. Here are two examples.   (an instruction: the system prompt)
    You are in the middle of a room. Looking quickly around you, ...    (the room: part of the task)
    Your task is to: put some spraybottle on toilet.                     (the task; a new run)
    > think: First I need to find a spraybottle.                        (a thought)
    OK.                                                                  (the game's answer to a thought)
    > go to cabinet 1                                                    (an action: act(command=...))
    On the cabinet 1, you see a cloth 1, a soapbar 1.                    (its observation: the next line)

The game has one tool, a command typed at its prompt, so every action is
`act(command="go to cabinet 1")`. A thought joins the step of the action
after it. Lines between a run's last observation and the next `Your task
is to:` describe the next run's room; lines left at the end of the file
(the prompt's closing "Here is the task.") are kept as notes.
"""

from __future__ import annotations

import re

from engine.stored.importers.build import Draft, Step, new_action
from engine.stored.transcript import TranscriptError

TOOL = "act"
TASK = re.compile(r"^\s*Your task is to:\s*(.*)$")
COMMAND = re.compile(r"^\s*>\s?(.*)$")
THINK = re.compile(r"^think:\s*(.*)$", re.I | re.S)
ACKNOWLEDGED = frozenset({"ok", "ok."})
ROOM = "You are "
"""How ALFWorld begins the description of a room (a line that starts the next run's task)."""
EXPECTED = "expected an ALFWorld game (a room, 'Your task is to: ...', then '> command' lines each followed by the game's reply)"


def is_alfworld(lines: list[str]) -> bool:
    """A task line and a command line among the first 2,000 lines."""
    head = lines[:2000]
    return any(TASK.match(line) for line in head) and any(line.startswith("> ") for line in head)


def read_alfworld(name: str, text: str) -> list[Draft]:
    """Every run of an ALFWorld prompt or log (one per `Your task is to:` line)."""
    runs: list[Draft] = []
    pending: list[tuple[int, str]] = []
    """Lines no move explains yet: the next room, an instruction, or text left after a run."""
    step: Step | None = None
    awaiting: str | None = None
    """'reply' after a command (the next line is its observation), 'ok' after a thought."""

    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        task = TASK.match(line)
        command = COMMAND.match(line) if task is None and runs else None
        if task is not None:
            room_at = max((i for i, (_, kept) in enumerate(pending) if kept.startswith(ROOM)), default=0)
            before, room = pending[:room_at], pending[room_at:]
            run = Draft(name, "alfworld", final_text_is_answer=False)
            run.task_text = "\n".join([*(kept for _, kept in room), line.strip()])
            if runs:
                for at, kept in before:
                    runs[-1].unrecognised("a line between two games", kept, f"line {at}")
                run.system = list(runs[0].system)
            else:
                run.system = ["\n".join(kept for _, kept in before)] if before else []
            runs.append(run)
            pending, step, awaiting = [], None, None
        elif command is not None:
            said = command.group(1).strip()
            think = THINK.match(said)
            if step is None or step.actions:
                step = runs[-1].new_step()
            if think is not None:
                step.add_thought(think.group(1))
                awaiting = "ok"
            else:
                step.actions.append(new_action(tool=TOOL, args={"command": said}))
                step.add_raw(f"> {said}")
                awaiting = "reply"
        elif awaiting == "reply" and step is not None:
            step.observe(len(step.actions) - 1, line.strip())
            awaiting = None
        elif awaiting == "ok" and line.strip().lower() in ACKNOWLEDGED:
            awaiting = None
        else:
            pending.append((number, line.strip()))
            awaiting = None
    if not runs:
        raise TranscriptError(f"{name}:1: {EXPECTED}")
    for at, kept in pending:  # after the last game's last move
        runs[-1].unrecognised("a line after the last move", kept, f"line {at}")
    return runs
