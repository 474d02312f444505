"""How agent-tui ends and says why: the exit-code table, the usage error, the error printer.

Shared by the commands (tui/cli/), the apps and the runs screen, so it sits below them all.
"""

from __future__ import annotations

import sys

# The one exit-code table of `agent-tui`.
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_STOPPED = 3
EXIT_HANDED_OFF = 4
EXIT_ABORTED = 5
EXIT_DIFFERS = 3  # `verify`: the re-run differs from the file
EXIT_CHECK_FAILED = 1  # `bench`: a check failed
EXIT_UNFINISHED = 6  # the cockpit quit on a run that can go on (`run --resume` continues it)
EXIT_INTERRUPTED = 130  # Ctrl+C outside a run (a run ends aborted: EXIT_ABORTED)
EXIT_TERMINATED = 143  # SIGTERM closed the viewer or the runs screen (a run ends aborted: EXIT_ABORTED)
EXIT_CODES = {"answer": EXIT_OK, "stopped": EXIT_STOPPED, "handed_off": EXIT_HANDED_OFF, "aborted": EXIT_ABORTED}
"""A run's outcome -> the process's exit code."""


class Terminated(Exception):
    """SIGTERM closed an app that holds no run (the viewer, the runs screen): exit code 143."""


class UsageError(Exception):
    """Bad flags or input (including a file that cannot be read): one line on stderr, exit code 2."""


def report(message: str) -> None:
    """Print a diagnostic on stderr as `agent-tui: message`, without control characters:
    a message may quote a transcript or a server, and neither may drive the terminal."""
    from engine.core.text import clean

    print(f"agent-tui: {clean(message)}", file=sys.stderr)


def os_error_text(exc: OSError) -> str:
    """An OSError as words: `PATH: permission denied`, not `[Errno 13] ...`."""
    if exc.strerror and exc.filename:
        return f"{exc.filename}: {exc.strerror[0].lower()}{exc.strerror[1:]}"
    if exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return str(exc)
