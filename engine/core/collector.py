"""Keeping the garbage collector out of bulk reads.

Reading a long transcript makes hundreds of thousands of objects that live on
(the events), none of them in a reference cycle; every 700 new objects the
collector would walk the young ones and, as they pile up, the whole heap,
which costs a reader about a sixth of its time and grows with the file.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection inside the block (left as it was when it ends).

    What the block made goes to the oldest generation when it ends (`_promoted`): left
    young, the first collection after it would walk all of it at once, and again as
    it aged (a third of the time of reading 100,000 events)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _promoted()
            gc.enable()


def _promoted() -> None:
    """Every object the collector tracks moved to the oldest generation without a walk
    (`gc.freeze` then `gc.unfreeze`), unless something else holds the heap frozen.
    Garbage cycles among them wait for the next full collection."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


FREEZE_EVERY = 8192
"""Events between two `gc.freeze` calls while a long run grows (`HeapFreezer`)."""


class HeapFreezer:
    """Keeps a long-lived, growing heap (a run's history, the events of a file
    read) out of the collector's full passes: `grown(n)` moves what the heap
    holds to the permanent generation (`gc.freeze`) once `n` has grown by
    `FREEZE_EVERY` since the last time, and `close` hands the heap back
    (`gc.unfreeze`). Objects that die are still freed by reference counting;
    only cycles wait for `close`. Nothing is frozen when something else froze
    the heap or the collector is off."""

    def __init__(self, at: int = 0, *, now: bool = False) -> None:
        """`at`: the count `grown` starts from; `now`: freeze what the heap holds already."""
        self.on = gc.isenabled() and gc.get_freeze_count() == 0
        self.at = at
        if self.on and now:
            gc.freeze()

    def grown(self, count: int) -> None:
        if self.on and count - self.at >= FREEZE_EVERY:
            gc.freeze()
            self.at = count

    def close(self) -> None:
        if self.on and gc.get_freeze_count():
            gc.unfreeze()
        self.on = False
