"""Start an MCP server so that it dies with agent-tui: `python guard.py PARENT_PID PIDFILE COMMAND ARGS...`.

Run by the stdio client in place of the server's command. It writes its own
PID (the server's, after exec) to PIDFILE, asks Linux to send it SIGKILL when
the parent dies (PR_SET_PDEATHSIG: even a SIGKILL of agent-tui leaves no
orphan), then becomes the server with exec. Standalone on purpose: it imports
nothing of agent-tui, so it starts in milliseconds.
"""

import os
import signal
import sys


def main(argv: list) -> int:
    if len(argv) < 3:
        print("usage: guard.py PARENT_PID PIDFILE COMMAND [ARGS...]", file=sys.stderr)
        return 2
    parent, pidfile, command = int(argv[0]), argv[1], argv[2:]
    with open(pidfile, "w") as f:
        f.write(str(os.getpid()))
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # agent-tui died before the signal was armed
        return 1
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"agent-tui: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
