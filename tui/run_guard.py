"""What the apps do about the ways they can be cut short from outside.

SIGTERM closes an app as its `terminate()` says (the cockpit: stop what can be
stopped and end with the aborted code; the viewer and the runs screen: close),
restoring the terminal, and sets its `terminated`, so the caller records the
run's end (a tool call still running as having an unknown outcome). The handler
is installed before the app starts (`sigterm_closes`, around `App.run`) and kept
until the caller's own closing is done: a SIGTERM while the app starts takes
effect as it mounts, and one after it closed is noted, never cutting that
closing short. A transcript that moved to a recovery file, and the run's
warnings, are said as notifications.
"""

from __future__ import annotations

import asyncio
import signal
from contextlib import contextmanager
from functools import partial
from typing import Any, Callable, Iterator

from engine.core.text import clean


class ClosesOnSigterm:
    """What an app run in `sigterm_closes` has (a mixin, first among the app's bases, so that
    its `on_mount` runs after the app's own)."""

    terminated = False
    """SIGTERM came."""
    sigterm_ready = False
    """Mounted: SIGTERM calls `terminate` at once (before, it waits for the mount)."""

    def terminate(self) -> None:
        """SIGTERM: close as the operator's `q` does."""
        self.exit()  # type: ignore[attr-defined]

    def on_mount(self) -> None:
        self.sigterm_ready = True
        if self.terminated:  # it came while the app started
            self.terminate()


@contextmanager
def sigterm_closes(app: ClosesOnSigterm) -> Iterator[None]:
    """While the block runs `app` (and closes after it), SIGTERM sets `app.terminated` and
    calls `app.terminate()` on its event loop once the app is mounted (before, as it mounts:
    an exit while it mounts would pull its widgets from under its own `on_mount`)."""

    def on_sigterm(_number: int, _frame: Any) -> None:
        app.terminated = True
        if not app.sigterm_ready:
            return  # it looks as it mounts
        try:
            loop = asyncio.get_running_loop()  # the handler runs in the main thread, the app's
        except RuntimeError:
            return  # closed: the caller looks
        loop.call_soon_threadsafe(app.terminate)

    with sigterm_calls(on_sigterm):
        yield


@contextmanager
def sigterm_calls(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """While the block runs, SIGTERM calls `handler` (in the main thread; in another, SIGTERM keeps
    what it had); the handler before is back after the block."""
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def watch_run(app: Any) -> None:
    """Say the run's warnings, and a transcript that moves to a recovery file (the cockpit's
    on_mount, and again once a run being opened is built)."""
    if app.run_ is None:
        return  # a run being opened: its warnings come with it
    if app.run_.writer is not None:
        app.run_.writer.notify = partial(_writer_notice, app)
    for warning in app.run_.warnings:
        app.notify(clean(warning), title="Warning", severity="warning", timeout=20, markup=False)


def _writer_notice(app: Any, message: str) -> None:
    """The transcript moved to a recovery file (said from the engine's worker thread)."""
    notice = partial(app.notify, clean(message), title="transcript", severity="warning", timeout=30, markup=False)
    try:
        app.call_from_thread(notice)
    except RuntimeError:  # already on the app's thread
        notice()
