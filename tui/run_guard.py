"""What the cockpit does about the ways a run can be cut short from outside.

SIGTERM closes the app (restoring the terminal) and sets its `terminated`, so
the caller records the run's end, and a tool call still running as having an
unknown outcome. A transcript that moved to a recovery file, and the run's
warnings, are said as notifications. (The loop drops its signal handler when
the app's loop closes.)
"""

from __future__ import annotations

import asyncio
import signal
from functools import partial
from typing import Any

from engine.core.text import clean


def watch_run(app: Any) -> None:
    """Install the SIGTERM handler and say the run's warnings (the cockpit's on_mount, and again
    once a run being opened is built)."""
    app.terminated = False
    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, partial(_terminate, app))
    except (NotImplementedError, RuntimeError, ValueError):
        pass  # not the main thread: SIGTERM keeps its default
    if app.run_ is None:
        return  # a run being opened: its warnings come with it
    if app.run_.writer is not None:
        app.run_.writer.notify = partial(_writer_notice, app)
    for warning in app.run_.warnings:
        app.notify(clean(warning), title="Warning", severity="warning", timeout=20, markup=False)


def _terminate(app: Any) -> None:
    """SIGTERM: stop what can be stopped and leave, restoring the terminal."""
    from tui.exits import EXIT_CODES

    app.terminated = True
    if app.run_ is not None:  # a run being opened has no steps to stop yet
        app.bridge.interrupt.set()
        app._cancel_policy_call()
    app.exit(return_code=EXIT_CODES["aborted"])


def _writer_notice(app: Any, message: str) -> None:
    """The transcript moved to a recovery file (said from the engine's worker thread)."""
    notice = partial(app.notify, clean(message), title="transcript", severity="warning", timeout=30, markup=False)
    try:
        app.call_from_thread(notice)
    except RuntimeError:  # already on the app's thread
        notice()
