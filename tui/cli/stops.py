"""How a run from the command line stops when something outside it happens: SIGTERM,
Ctrl+C during a tool, or a transcript that can no longer be written."""

from __future__ import annotations

import argparse
import shlex
from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While a headless run goes, SIGTERM raises `Interrupted` in the main thread, so the
    run records its end (and a tool call it cut off) as it does for Ctrl+C."""
    from engine.core.guards import Interrupted
    from tui.run_guard import sigterm_calls

    def handler(signum: int, frame: object) -> None:
        raise Interrupted("terminated (SIGTERM)")

    with sigterm_calls(handler):
        yield


def stop(engine: Any, reason: str, *, running: bool = False) -> None:
    """End the run with `reason` (with `running`, a call still running on another thread is
    recorded with an unknown outcome first); nothing to do once the transcript cannot be written."""
    from engine.core.guards import RecordError

    try:
        engine.stop(reason) if running else engine.abort(reason)
    except RecordError:
        pass


def resume_command(run: Any, args: argparse.Namespace | None = None, *, header: Any = None, path: Any = None) -> str:
    """The command line that continues `run` from its file, quoted for a shell. With the `run`
    flags it was started with, it gives again what a resume needs: a scenario file (a saved run
    never names code to load), --config, and the MCP servers (a URL without its credentials).
    `run` None: a run the cockpit was still opening, its file's `header` and `path`."""
    header = header if run is None else run.engine.header
    path = path if run is None else run.path
    words = ["agent-tui", "run"]
    if args is not None:
        from engine.core.urls import safe_url

        if args.scenario is not None and args.scenario != header.scenario:
            words.append(args.scenario)
        if args.config is not None:
            words += ["--config", args.config]
        for command in args.mcp:
            words += ["--mcp", command]
        for url in args.mcp_url:
            words += ["--mcp-url", safe_url(url)]
    return shlex.join([*words, "--resume", str(path)])


def halted_message(run: Any) -> str:
    """What to tell the operator when the transcript stopped taking events."""
    return f"{run.engine.halted}; once that is fixed, `{resume_command(run)}` continues it"
