"""What an import read is freed as soon as nothing uses it: no reference cycle keeps the parsed
lines, the draft or the events of a file alive until the collector's next pass (the import
command runs with the collector off, and a pass over a 100,000-line run's heap at the end of
the process costs a third of a second)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from bench.import_speed import FORMATS
from engine.core.collector import collector_paused
from engine.core.events import DecisionMade, Event, Header
from engine.stored import transcript
from engine.stored.importers import claude_code, codex, runs_from_bytes
from engine.stored.importers.build import Draft
from tui.cli import main


@pytest.fixture
def collector_off() -> Iterator[None]:
    """As the import command runs: nothing but reference counting frees what the test leaves."""
    gc.collect()
    with collector_paused():
        yield


def _drafts_alive() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is Draft)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_nothing_an_import_read_outlives_its_runs(fmt: str, collector_off: None) -> None:
    _, writer, _, _ = FORMATS[fmt]
    data = ("\n".join(writer(5)) + "\n").encode()
    before = _drafts_alive()
    runs = runs_from_bytes(f"five.{fmt}", data)
    assert runs and runs[0].events
    del runs
    assert _drafts_alive() == before


def _decisions_alive() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is DecisionMade)


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "gemini-cli", "react"])
def test_the_import_command_writes_each_event_as_it_is_made(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             collector_off: None) -> None:
    """Half way through writing a 400-step run, the steps written are gone: the command holds
    the draft, not every event of the run at once."""
    suffix, writer, _, _ = FORMATS[fmt]
    source = tmp_path / f"long{suffix}"
    source.write_text("\n".join(writer(400)) + "\n")
    alive: list[int] = []
    write = transcript.write_transcript

    def watched(path: Path, header: Header, events: Iterable[Event], tail: Callable[[], bytes] | None = None) -> None:
        def counted() -> Iterator[Event]:
            for number, event in enumerate(events):
                if number == 600:
                    alive.append(_decisions_alive())
                yield event
        write(path, header, counted(), tail)

    monkeypatch.setattr(transcript, "write_transcript", watched)
    before = _decisions_alive()  # what earlier tests of this process left, with the collector off
    assert main(["import", str(source), "-o", str(tmp_path / "out.jsonl")]) == 0
    assert (tmp_path / "out.jsonl").exists()
    assert len(alive) == 1 and alive[0] - before <= 2


@pytest.mark.parametrize("fmt, reader", [("claude-code", claude_code._Reader), ("codex", codex._Reader)])
def test_a_session_s_lines_are_parsed_as_they_are_mapped(fmt: str, reader: type, monkeypatch: pytest.MonkeyPatch,
                                                         collector_off: None) -> None:
    """While a 400-step session's line 600 is mapped, the lines mapped before it are no longer held
    parsed (only what the draft keeps of them: a call's arguments)."""
    _, writer, _, _ = FORMATS[fmt]
    data = ("\n".join(writer(400)) + "\n").encode()
    alive: list[int] = []
    line = reader.line

    def parsed() -> int:
        return sum(1 for o in gc.get_objects() if type(o) is dict and ("uuid" in o or "payload" in o))

    def watched(self: object, number: int, obj: object) -> None:
        if number == 600:
            alive.append(parsed())
        line(self, number, obj)

    monkeypatch.setattr(reader, "line", watched)
    before = parsed()  # what earlier tests of this process left, with the collector off
    runs_from_bytes(f"long.{fmt}", data)
    assert len(alive) == 1 and alive[0] - before < 20  # the first line and the one mapped, a few more: not the 599 before it
