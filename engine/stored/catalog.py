"""The runs of a folder, each summed up from the ends of its file (`agent-tui runs`).

A summary says when the run started, where it came from (its scenario, the
gateway, MCP tools, an imported log, a fork), its task, policy, steps, outcome,
tokens and cost, and whether `run --resume` can continue it. It is read from the
header line and the last lines of the file only (`engine.stored.reader.read_ends`),
so a folder of 10,000 runs lists in well under a second and a run of 100,000
events costs what a short one does. The events read are folded by the one fold
(`engine.core.state.RunState`), so steps, usage and status mean what they mean
in the cockpit.

When the last lines do not reach back to step 1, tokens and cost are those of
the steps read (`usage_partial`: at least that much). A file of several runs
read whole lists each run; one too long to read whole lists its first and last
runs, marked. A file that cannot be read lists with the reason (`problem`) and
the rest of the folder still lists.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path

from engine.core.events import Header
from engine.core.text import clean
from engine.stored.reader import ENDS_CAP, Ends, LineIndex, TranscriptError, read_ends
from engine.stored.tail import fold_ends

__all__ = ["RunSummary", "list_runs", "matches", "summarise"]

NOT_RESUMABLE = frozenset({"imported", "gateway"})
LATEST = 253_402_300_799.0
"""The last second a date of four digits names (9999-12-31 23:59:59 UTC)."""
"""Runs whose world is elsewhere: they can be replayed and forked, not resumed."""


@dataclass(frozen=True)
class RunSummary:
    """One run of a folder as `agent-tui runs` lists it."""

    path: str
    started_at: float
    """The header's start time; the file's modification time when it has none."""
    scenario: str = ""
    source: str = ""
    """The scenario, or "gateway", "MCP", "imported (FORMAT)"; "+ fork" for a fork."""
    task: str = ""
    """The first line of the task's text (or its id), control characters removed."""
    policy: str = ""
    """The policy of the last step (the header's before step 1)."""
    steps: int | None = None
    outcome: str = ""
    """"answer", "stopped", "handed_off", "aborted"; "unfinished" for a run that did not end."""
    detail: str = ""
    """The end's reason, or what an unfinished run waits for ("awaiting approval")."""
    tokens: int | None = None
    cost: float | None = None
    usage_partial: bool = False
    """Tokens and cost are those of the last steps only (the file was not read back to step 1)."""
    resumable: bool = False
    run: int | None = None
    """Its number in a file of several runs (None: the file holds one)."""
    problem: str | None = None
    """Why the file (or part of it) could not be read; the other fields say what could."""

    def as_json(self) -> dict[str, object]:
        return asdict(self)

    @cached_property
    def words(self) -> str:
        """What a filter looks through: task, scenario and source, policy, outcome and its detail, the file's name."""
        return " ".join(
            (self.task, self.scenario, self.source, self.policy, self.outcome, self.detail, Path(self.path).name, self.problem or "")
        ).casefold()


def matches(summary: RunSummary, text: str) -> bool:
    """Whether `text` (any case) is part of the summary's task, source, outcome or file name."""
    return text.casefold() in summary.words


def list_runs(folder: Path) -> list[RunSummary]:
    """Every run in `folder` (names starting with "." left out), newest first.

    OSError when `folder` itself cannot be listed; a file that cannot be read is a
    summary with its `problem`."""
    summaries: list[RunSummary] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                mtime = 0.0
            summaries.extend(summarise(Path(entry.path), mtime))
    summaries.sort(key=lambda s: (s.started_at, s.path, -(s.run or 0)), reverse=True)
    return summaries


def summarise(path: Path, mtime: float = 0.0) -> list[RunSummary]:
    """The runs of one file: one summary, or one per run of a file of several."""
    try:
        ends = read_ends(path)
    except TranscriptError as exc:
        return [RunSummary(str(path), mtime, problem=clean(str(exc)))]
    try:
        runs = ends.runs()
    except TranscriptError as exc:
        try:
            header = ends.header()  # a good first header, a bad one in the tail
        except TranscriptError:
            return [RunSummary(str(path), mtime, problem=clean(str(exc)))]
        return [_summary(ends, header, None, mtime, problem=clean(str(exc)))]
    header = runs[0].header
    if len(runs) == 1:
        return [_summary(ends, header, runs[0], mtime, cut=not ends.whole)]
    if ends.whole:
        return [_summary(ends, index.header, index, mtime, number=n) for n, index in enumerate(runs, 1)]
    several = "one of several runs in the file, not read whole: `agent-tui show FILE --runs` lists them all"
    first, last = runs[0], runs[-1]
    return [
        _summary(ends, last.header, last, mtime, problem=several),
        _summary(ends, header, first, mtime, number=1, problem=several, cut=True),
    ]


def _summary(
    ends: Ends,
    header: Header,
    index: LineIndex | None,
    mtime: float,
    *,
    number: int | None = None,
    problem: str | None = None,
    cut: bool = False,
) -> RunSummary:
    """A run's summary from its header and the events `index` holds of it (`cut`: the
    last lines of the run, not read back to its header)."""
    state, partial, why = fold_ends(header, index, cut)
    problem = problem or why
    if cut and index is not None and len(index) == 0 and problem is None:
        problem = f"its last line is longer than {ENDS_CAP >> 20} MiB, the most read from the end; steps and outcome not known"
    ended = state.ended
    known = problem is None or state.events > 0
    resumable = number is None and problem is None and ended is None and header.scenario not in NOT_RESUMABLE
    if index is not None and index.warnings and problem is None:
        problem = clean(index.warnings[0])  # a torn last line: resume repairs it
    if ended is not None:
        outcome, detail = ended.outcome, ended.reason
    elif known:
        outcome, detail = "unfinished", "" if state.status == "ready" else state.status.replace("_", " ")
    else:
        outcome, detail = "", ""
    return RunSummary(
        path=ends.name,
        started_at=_started(header.started_at, mtime),
        scenario=header.scenario,
        source=_source(header),
        task=_task(header),
        policy=clean(state.history[-1].policy if state.history else header.policy),
        steps=state.step if known else None,
        outcome=outcome,
        detail=clean(detail),
        tokens=state.tokens if known else None,
        cost=state.cost if known else None,
        usage_partial=partial,
        resumable=resumable,
        run=number,
        problem=problem,
    )


def _source(header: Header) -> str:
    if header.scenario == "imported":
        source = f"imported ({header.options.get('format', 'log')})"
    elif header.scenario == "gateway":
        source = "gateway"
    elif header.mcp and header.scenario == "mcp":
        source = "MCP"
    else:
        source = header.scenario
    return clean(f"{source} + fork" if header.parent else source)


def _task(header: Header) -> str:
    line = next((line.strip() for line in header.task_text.splitlines() if line.strip()), "")
    return clean(line or header.task)


def _started(value: float, mtime: float) -> float:
    """When the run started: its header's time, else (none, or one no date names: NaN, infinite,
    negative or past the year 9999, as only an edited file holds) the file's last change."""
    return value if 0 < value <= LATEST else mtime
