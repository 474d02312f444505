"""Start an MCP server so that it dies with agent-tui, and cap its messages:
`python guard.py PARENT_PID PIDFILE MAX_LINE COMMAND ARGS...`.

Run by the stdio client in place of the server's command. It writes its own
PID to PIDFILE (the group's leader: the server runs in its process group),
asks Linux to send it SIGKILL when the parent dies (PR_SET_PDEATHSIG: even a
SIGKILL of agent-tui leaves no orphan), and starts the server as its child,
armed the same way against the guard's own death. The server's stdin and
stderr are its own; its stdout passes through the guard, which relays it as
it comes and counts the bytes since the last line break: the MCP SDK holds a
whole line in memory before parsing it, so a server that sends a line longer
than MAX_LINE bytes (an endless one, say) is killed, a line starting with
`TOO_LONG` says so on stderr (the server's log), and the guard exits with
EXIT_TOO_LONG. Standalone on purpose: it imports nothing of agent-tui, so it
starts in milliseconds.
"""

import os
import signal
import sys

TOO_LONG = "agent-tui: the server sent a message over"
"""How the log line of a server stopped for a message over the cap starts (engine.mcp.hub reads it)."""
EXIT_TOO_LONG = 75
_CHUNK = 1 << 16


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 and limit % (1024 * 1024) == 0 else f"{limit:,} bytes"


def _relay(source: int, limit: int) -> bool:
    """Copy `source` to stdout until its end; False as soon as a line runs past `limit` bytes."""
    run, size = 0, max(1, min(_CHUNK, limit))  # bytes of the line so far; a line inside one chunk is then within the cap
    while True:
        chunk = os.read(source, size)
        if not chunk:
            return True
        first = chunk.find(b"\n")
        if first < 0:
            run += len(chunk)
        else:
            if run + first > limit:
                return False
            run = len(chunk) - chunk.rfind(b"\n") - 1
        if run > limit:
            return False
        view = memoryview(chunk)
        while view:
            written = os.write(1, view)
            view = view[written:]


def main(argv: list) -> int:
    if len(argv) < 4 or not argv[2].isdigit():
        print("usage: guard.py PARENT_PID PIDFILE MAX_LINE COMMAND [ARGS...]", file=sys.stderr)
        return 2
    parent, pidfile, limit, command = int(argv[0]), argv[1], int(argv[2]), argv[3:]
    with open(pidfile, "w") as f:
        f.write(str(os.getpid()))
    _die_with_parent()
    if os.getppid() != parent:  # agent-tui died before the signal was armed
        return 1
    guard = os.getpid()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(read_end)
            os.dup2(write_end, 1)
            os.close(write_end)
            _die_with_parent()
            if os.getppid() != guard:
                os._exit(1)
            os.execvp(command[0], command)
        except OSError as exc:
            print(f"agent-tui: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
            sys.stderr.flush()
        os._exit(127)
    os.close(write_end)
    os.close(0)  # the server's stdin is its own: its end comes when agent-tui closes it
    try:
        whole = _relay(read_end, limit)
    except BrokenPipeError:  # agent-tui stopped reading
        whole = True
    if not whole:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        print(f"{TOO_LONG} {_size(limit)} (a line that long without its end); it was stopped", file=sys.stderr)
        return EXIT_TOO_LONG
    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    return code if code >= 0 else 128 - code  # killed by signal N: 128 + N, as a shell says it


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
