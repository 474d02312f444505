"""When the garbage collector runs while the replay viewer is open: after a frame.

A seek and its frame make about 5,000 short-lived objects (Textual's strips
and their caches), and the state shown holds lists of every step (50,000
items each at 50,000 steps) that every young collection walks. At Python's
default pace (a young collection every 700 new objects) the collector ran
about seven times a seek (8 ms of each seek on average, pauses up to 50 ms);
at a slower pace it ran less but for 40-55 ms at once, inside whichever seek
crossed the mark. So while the viewer runs, the automatic pace is slow (a
safety net) and the young generations are collected right after a frame is
drawn, once `YOUNG_OBJECTS` new objects have piled up: the work is done
while the operator looks at the frame, not between the key and the frame.
"""

from __future__ import annotations

import gc

YOUNG_OBJECTS = 20_000
"""New objects since the last collection that make the next frame collect them."""
ANYWAY = 200_000
"""The automatic young threshold while the viewer runs (Python's default is 700)."""


class AfterFrameCollector:
    """`start` when the viewer mounts, `after_frame` after each frame it asks for, `stop` on exit."""

    def __init__(self) -> None:
        self.saved: tuple[int, ...] | None = None
        self.collections = 0
        """Young collections made by `after_frame`."""

    def start(self) -> None:
        if self.saved is None:
            self.saved = gc.get_threshold()
            gc.set_threshold(ANYWAY, *self.saved[1:])

    def stop(self) -> None:
        if self.saved is not None:
            gc.set_threshold(*self.saved)
            self.saved = None

    def after_frame(self) -> None:
        """Collect the young generations if enough new objects piled up; the middle
        one too every `threshold[1]` times, as Python's own pace does."""
        if self.saved is None or not gc.isenabled():
            return
        young, middle, _ = gc.get_count()
        if young < YOUNG_OBJECTS:
            return
        gc.collect(1 if middle + 1 >= self.saved[1] else 0)
        self.collections += 1
