"""The list of runs as text: its columns, a run's cells, the aligned table, the folder read,
and what the runs screen asks for (`RunChoice`). `agent-tui runs` prints with these and
the runs screen (tui.screens.runs) fills its table with the same cells. No Textual here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from engine.core.text import clean
from tui.exits import UsageError, os_error_text

COLUMNS = ("when", "source", "task", "policy", "steps", "outcome", "tokens", "cost", "resume", "file")
_NARROWEST = {"task": 12, "outcome": 8}


def runs_folder(given: str | None) -> Path:
    """The folder `--dir` names, else the data folder's `runs`."""
    if given is not None:
        return Path(given)
    from engine.sessions.run import default_transcript_dir

    return default_transcript_dir()


def read_folder(folder: Path, *, given: bool) -> list[Any]:
    """The summaries of `folder`'s runs; UsageError for a folder that cannot be listed
    (a data folder with no runs yet is an empty list)."""
    from engine.stored.catalog import list_runs

    try:
        return list_runs(folder)
    except FileNotFoundError:
        if not given:
            return []
        raise UsageError(f"{folder}: no such folder") from None
    except NotADirectoryError:
        raise UsageError(f"{folder}: is a file, not a folder of runs (show it with agent-tui show {folder})") from None
    except OSError as exc:
        raise UsageError(f"{folder}: cannot list: {os_error_text(exc)}") from None


def cells(summary: Any, folder: Path, *, short: bool = False) -> dict[str, str]:
    """A summary's text in each column (control characters already removed by the catalog);
    `short`: the time without its year (the screen's narrow column)."""
    from engine.core.amounts import dollars

    at = "?" if not summary.started_at else time.strftime("%m-%d %H:%M" if short else "%Y-%m-%d %H:%M", time.localtime(summary.started_at))
    name = _file_name(summary.path, folder) + (f" #{summary.run}" if summary.run is not None else "")
    at_least = "≥" if summary.usage_partial else ""
    if summary.outcome:
        outcome = summary.outcome if not summary.detail or summary.detail == "final answer" else f"{summary.outcome}: {summary.detail}"
    else:
        outcome = "unreadable"
    if summary.problem is not None:
        outcome = f"! {outcome}"
    return {
        "when": at,
        "source": summary.source or "?",
        "task": summary.task or problem_words(summary),
        "policy": summary.policy or "?",
        "steps": "?" if summary.steps is None else str(summary.steps),
        "outcome": outcome,
        "tokens": "?" if summary.tokens is None else f"{at_least}{summary.tokens}",
        "cost": "?" if summary.cost is None else ("-" if summary.cost == 0 else f"{at_least}{dollars(summary.cost)}"),
        "resume": "yes" if summary.resumable else "no",
        "file": clean(name),
    }


def problem_words(summary: Any) -> str:
    """Why a run could not be read, without the file's path in front (its own column says it)."""
    problem = summary.problem or ""
    if problem.startswith(summary.path + ":"):
        rest = problem[len(summary.path) + 1 :]
        number, colon, words = rest.partition(":")
        return f"line {number}:{words}" if colon and number.isdigit() else rest.strip()
    return problem


def _file_name(path: str, folder: Path) -> str:
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return path


DROPPED_FIRST = ("policy", "cost", "source", "tokens")
"""The columns a terminal too narrow for the whole line goes without, in this order, once the
task and the outcome are cut to their narrowest; the file's name is never cut."""


def table(rows: Sequence[dict[str, str]], width: int | None) -> list[str]:
    """The rows as aligned lines under a heading line. `width` (a terminal's): cut the task
    and the outcome (with "…"), then leave out columns (`DROPPED_FIRST`), so that each line
    fits where it can; None: every column, nothing cut."""
    columns = list(COLUMNS)
    widths = {column: max([len(column), *(len(row[column]) for row in rows)]) for column in columns}
    if width is not None:
        full = {column: widths[column] for column in _NARROWEST}
        widths.update({column: min(full[column], narrowest) for column, narrowest in _NARROWEST.items()})
        for column in DROPPED_FIRST:
            if sum(widths[c] for c in columns) + 2 * (len(columns) - 1) <= width:
                break
            columns.remove(column)
        room = width - (sum(widths[c] for c in columns) + 2 * (len(columns) - 1))
        for column in ("task", "outcome"):  # what is left goes back to them
            grow = max(0, min(room, full[column] - widths[column]))
            widths[column] += grow
            room -= grow
    numeric = {"steps", "tokens", "cost"}

    def line(row: dict[str, str]) -> str:
        parts = []
        for column in columns:
            text = row[column]
            if len(text) > widths[column]:
                text = text[: widths[column] - 1] + "…"
            parts.append(text.rjust(widths[column]) if column in numeric else text.ljust(widths[column]))
        return "  ".join(parts).rstrip()

    return [line({column: column for column in columns}), *(line(row) for row in rows)]


@dataclass(frozen=True)
class RunChoice:
    """What the runs screen asks for: `action` ("replay", "resume", "fork") on the run at `path`."""

    action: str
    path: str
    run: int | None = None

    def argv(self) -> list[str]:
        """The `agent-tui` command that does it: the same code `replay FILE`, `run --resume FILE`
        and `run --fork FILE` run."""
        chosen = ["--run", str(self.run)] if self.run is not None else []
        if self.action == "replay":
            return ["replay", self.path, *chosen]
        if self.action == "resume":
            return ["run", "--resume", self.path]
        return ["run", "--fork", self.path, *chosen]
