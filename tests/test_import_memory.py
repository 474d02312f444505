"""What an import read is freed as soon as nothing uses it: no reference cycle keeps the parsed
lines, the draft or the events of a file alive until the collector's next pass (the import
command runs with the collector off, and a pass over a 100,000-line run's heap at the end of
the process costs a third of a second)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from bench.import_speed import FORMATS
from engine.stored.importers import runs_from_bytes
from engine.stored.importers.build import Draft


@pytest.fixture
def collector_off() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _drafts_alive() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is Draft)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_nothing_an_import_read_outlives_its_runs(fmt: str, collector_off: None) -> None:
    _, writer, _ = FORMATS[fmt]
    data = ("\n".join(writer(5)) + "\n").encode()
    before = _drafts_alive()
    runs = runs_from_bytes(f"five.{fmt}", data)
    assert runs and runs[0].events
    del runs
    assert _drafts_alive() == before
