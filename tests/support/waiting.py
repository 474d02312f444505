"""Waiting for a state, never for a fixed time: a condition polled until it holds or a deadline passes."""

from __future__ import annotations

import time
from typing import Callable


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0, every: float = 0.01) -> None:
    """Wait until `predicate()` holds (AssertionError naming `what` after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)
