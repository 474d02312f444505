"""How a run from the command line stops when something outside it happens: SIGTERM,
Ctrl+C during a tool, or a transcript that can no longer be written."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While a headless run goes, SIGTERM raises `Interrupted` in the main thread, so the
    run records its end (and a tool call it cut off) as it does for Ctrl+C."""
    from engine.core.guards import Interrupted

    def handler(signum: int, frame: object) -> None:
        raise Interrupted("terminated (SIGTERM)")

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop(engine: Any, reason: str, *, running: bool = False) -> None:
    """End the run with `reason` (with `running`, a call still running on another thread is
    recorded with an unknown outcome first); nothing to do once the transcript cannot be written."""
    from engine.core.guards import RecordError

    try:
        engine.stop(reason) if running else engine.abort(reason)
    except RecordError:
        pass


def resume_command(run: Any, scenario: str | None = None) -> str:
    """The command line that continues `run` from its file, quoted for a shell: with the
    scenario the operator gave when it is not the name the file records (a scenario file)."""
    import shlex

    words = ["agent-tui", "run"]
    if scenario is not None and scenario != run.engine.header.scenario:
        words.append(scenario)
    return shlex.join([*words, "--resume", str(run.path)])


def halted_message(run: Any) -> str:
    """What to tell the operator when the transcript stopped taking events."""
    return f"{run.engine.halted}; once that is fixed, `{resume_command(run)}` continues it"
