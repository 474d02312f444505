"""Mutated foreign traces: every importer, the fold, the plain printer and the chat export take
2,000 mutants of each format without an uncaught exception, and every refusal names the file.

The mutants come from the transcript fuzzer's line mutator (flipped bytes, cuts, duplicated,
reordered and dropped lines, wrong types, invalid UTF-8) and, for JSON documents, from
replacing one value anywhere in the tree. AGENT_TUI_LONG=1 runs 20,000 of each.
"""

from __future__ import annotations

import os
import random

import pytest

from engine.core.state import fold
from engine.stored.chat_export import chat_messages
from engine.stored.importers import runs_from_bytes
from engine.stored.transcript import TranscriptError
from tui.plain import event_lines, header_lines
from tests.support.mutation import SOURCES, TRACES, mutant, small

MUTANTS = 20_000 if os.environ.get("AGENT_TUI_LONG") else 2_000


def _check(name: str, data: bytes, outcomes: dict[str, int]) -> None:
    try:
        runs = runs_from_bytes(name, data)
    except TranscriptError as exc:
        assert str(exc).startswith(name), str(exc)
        outcomes["refused"] += 1
        return
    outcomes["read"] += 1
    for run in runs:
        fold(run.header, run.events)
        lines = header_lines(run.header)
        for event in run.events:
            lines += event_lines(event)
        chat_messages(run.header, run.events)
        assert lines


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_mutated_foreign_traces_are_read_or_refused_cleanly(fmt):
    rng = random.Random(f"import-fuzz-{fmt}")
    name = f"mutant.{fmt}"
    sources = [small((TRACES / f).read_bytes()) for f in SOURCES[fmt]]
    assert all(runs_from_bytes(name, data) for data in sources)  # the seeds themselves import
    outcomes = {"read": 0, "refused": 0}
    for _ in range(MUTANTS):
        _check(name, mutant(fmt, rng.choice(sources), rng), outcomes)
    assert outcomes["read"] > 0 and outcomes["refused"] > 0, outcomes
