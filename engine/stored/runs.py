"""Files of several runs: choosing one, the warning that names the others, a listing of them.

An Inspect log holds one run per sample, fine-tune JSONL one per line, a
SWE-agent file one per attempt, and agent-tui transcripts joined with `cat`
one per header. A run is chosen by its number (1-based, in the order of the
file; `agent-tui import` numbers its files the same way) or by its id where
it has one: an Inspect sample's id, an agent-tui run's task id. A whole
number is always a position.
"""

from __future__ import annotations

from typing import Callable, Sequence

from engine.core.events import Header
from engine.core.text import clean
from engine.stored.reader import TranscriptError, parse_header, run_bytes, run_spans

__all__ = ["RunChoiceError", "choose", "chosen_run", "others_warning", "run_id", "run_line"]

_LISTED = 12
"""The most ids a refusal spells out."""


class RunChoiceError(TranscriptError):
    """A `--run` that names no run of the file (or several); the message lists what there is."""


def run_id(header: Header) -> str | None:
    """What a run may be chosen by besides its number: an Inspect sample's id, an agent-tui run's task."""
    if header.scenario == "imported":
        sample = header.options.get("sample_id")
        return None if sample is None else str(sample)
    return header.task or None


def choose(name: str, count: int, choice: str | int | None, ids: Callable[[], Sequence[str | None]]) -> int:
    """The index (0-based) of the run `choice` names among `count`; None chooses the first.

    `ids` gives every run's id (or None), asked only when `choice` is not a number or names
    nothing; RunChoiceError says what the file holds."""
    if choice is None:
        return 0
    text = str(choice).strip()
    if text.isdigit():
        number = int(text)
        if 1 <= number <= count:
            return number - 1
        raise RunChoiceError(_refusal(name, count, ids(), f"no run {number}"))
    known = list(ids())
    matches = [i for i, run in enumerate(known) if run == text]
    if len(matches) == 1:
        return matches[0]
    if matches:
        numbers = ", ".join(str(i + 1) for i in matches[:_LISTED])
        raise RunChoiceError(f"{name}: runs {numbers} all have the id {text!r}; choose one by its number (--run {matches[0] + 1})")
    raise RunChoiceError(_refusal(name, count, known, f"no run with the id {text!r}"))


def _refusal(name: str, count: int, ids: Sequence[str | None], what: str) -> str:
    """`FILE: no run 7; it holds 5 runs: --run takes 1..5 or an id (a, b, ...)`."""
    takes = "1" if count == 1 else f"1..{count}"
    message = f"{name}: {what}; it holds {count} run{'s' if count != 1 else ''}: --run takes {takes}"
    named = [run for run in dict.fromkeys(ids) if run is not None]
    if named:
        shown = ", ".join(repr(run) for run in named[:_LISTED]) + (", ..." if len(named) > _LISTED else "")
        message += f" or an id ({shown})"
    if count > 1:
        message += f"; `agent-tui show {name} --runs` lists them"
    return message


def chosen_run(name: str, data: bytes, choice: str | int | None) -> tuple[bytes, int | None, list[str], int]:
    """The run `choice` names in a file of agent-tui transcripts: its bytes, the file's lines
    before it (None: it is the whole file), the warning naming the others when none was
    chosen, and how many runs the file holds. Only the header
    lines of the others are read, and only to match an id."""
    spans = run_spans(data)
    if len(spans) == 1 and choice is None:
        return data, None, [], 1

    def ids() -> list[str | None]:
        found: list[str | None] = []
        for start, end in spans:
            try:
                found.append(run_id(parse_header(_first_line(data, start, end), name)))
            except TranscriptError:
                found.append(None)
        return found

    index = choose(name, len(spans), choice, ids)
    run, lines_before = run_bytes(data, spans[index])
    return run, lines_before, [others_warning(name, len(spans))] if len(spans) > 1 and choice is None else [], len(spans)


def _first_line(data: bytes, start: int, end: int) -> bytes:
    """The first line of `data[start:end]` that is not blank (a run's header)."""
    while start < end:
        newline = data.find(b"\n", start, end)
        line_end = end if newline < 0 else newline
        if data[start:line_end].strip():
            return data[start:line_end]
        start = line_end + 1
    return b""


def others_warning(name: str, count: int) -> str:
    """The warning of a file of `count` runs opened without a choice: this is the first, how to pick another."""
    other = "--run 2" if count == 2 else f"--run 2 .. --run {count}"
    return f"{name} holds {count} runs; this is run 1 of {count} (open another with {other}; `agent-tui show {name} --runs` lists them)"


def run_line(number: int, header: Header, steps: int) -> str:
    """One run in `show --runs`: its number, id, steps and the first line of its task."""
    ident = run_id(header)
    task = next((line.strip() for line in header.task_text.splitlines() if line.strip()), "(no task)")
    if len(task) > 80:
        task = task[:79] + "…"
    parts = [f"{number:>4}", f"id {ident}" if ident is not None else "", f"{steps} step{'s' if steps != 1 else ''}", task]
    return clean("  ".join(part for part in parts if part))
