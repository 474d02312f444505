"""Start an MCP server so that it dies with agent-tui, and cap its messages and its log:
`python guard.py PARENT_PID PIDFILE MAX_LINE COMMAND ARGS...`.

Run by the stdio client in place of the server's command (an MCP server's or
an ACP agent's). It leads a session of its own (out of agent-tui's process
group and terminal), writes its PID to PIDFILE, asks Linux to send it SIGTERM
when the parent dies (PR_SET_PDEATHSIG) and starts the server as its child,
armed with SIGKILL against the guard's own death, in a process group of the
server's own: the server and all it starts. Stopping the server stops that
group (`_stop_server`): on SIGTERM (so also when agent-tui dies, even by
SIGKILL) SIGTERM to each, then SIGKILL once the server has exited or GRACE has
passed. No orphan is left, not even a launcher's program that outlives it
(codex-acp's node launcher runs a binary that does not exit when its stdin
ends). The server's stdin is its own; its stdout and stderr pass through the
guard.

stdout is relayed as it comes, counting the bytes since the last line break:
the MCP SDK holds a whole line in memory before parsing it, so a server that
sends a line longer than MAX_LINE bytes (an endless one, say) is killed, a
line starting with `TOO_LONG` says so on stderr (the server's log), and the
guard exits with EXIT_TOO_LONG. A line that cannot be JSON-RPC (its first
character other than `{` or `[`: a banner, a stray `print`) goes to the log
instead, where the SDK would have answered it with a traceback on the
operator's screen; the first one makes the file PIDFILE + NOISE, which the hub
turns into one warning.

stderr (the log, a file the hub opened) keeps its first LOG_HEAD_BYTES and its
last LOG_TAIL_BYTES or so: past the head, once 2 * LOG_TAIL_BYTES more have
come, the file is cut back to the head, a line saying how many bytes were
dropped, and the last LOG_TAIL_BYTES. Standalone on purpose: it imports
nothing of agent-tui, so it starts in milliseconds.
"""

import os
import select
import signal
import sys
import time

TOO_LONG = "agent-tui: the server sent a message over"
"""How the log line of a server stopped for a message over the cap starts (engine.mcp.hub reads it)."""
EXIT_TOO_LONG = 75
NOISE = ".noise"
"""The suffix of the file that says the server printed something other than JSON-RPC on stdout."""
NOISE_LINE = "agent-tui: the server printed text that is not JSON-RPC on stdout; such lines are in this log, not passed on"
GRACE = 0.5
"""Seconds a server has to exit after SIGTERM before its group is killed (less than the second
`engine.mcp.hub.McpHub.kill` gives the guard)."""
LOG_HEAD_BYTES = 1 << 20
LOG_TAIL_BYTES = 4 << 20
_CHUNK = 1 << 16
_JSON_STARTS = b"{["
_SPACE = b" \t\r"


def _die_with_parent(sig: int = signal.SIGKILL) -> None:
    """`sig` sent to this process when its parent dies (Linux)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _own_session() -> None:
    """This process the leader of a session of its own (the MCP SDK starts it so already; the
    ACP SDK does not): out of agent-tui's process group, whose signals are agent-tui's."""
    if os.getsid(0) != os.getpid():
        try:
            os.setsid()
        except OSError:
            pass


def _stop_server(child: int, sig: int = signal.SIGTERM) -> None:
    """The server's process group (`child`'s: the server and all it starts) sent `sig`, then
    SIGKILL once the server has exited (reaped here) or GRACE seconds have passed (at once when
    `sig` is SIGKILL: the caller reaps it)."""
    try:
        os.killpg(child, sig)
    except OSError:
        pass
    deadline = time.monotonic() + GRACE
    while sig != signal.SIGKILL and time.monotonic() < deadline:
        try:
            if os.waitpid(child, os.WNOHANG)[0] != 0:
                break
        except ChildProcessError:
            break
        time.sleep(0.02)
    try:
        os.killpg(child, signal.SIGKILL)
    except OSError:
        pass


def _on_sigterm(child: int) -> "Callable[[int, object], None]":  # (typing not imported: it costs 13 ms)
    """What SIGTERM does to the guard: the server stopped (`_stop_server`), then the guard exits."""

    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _stop_server(child)
        os._exit(128 + signal.SIGTERM)

    return stop


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 and limit % (1024 * 1024) == 0 else f"{limit:,} bytes"


class Log:
    """The server's log (fd 2): its head kept, its tail kept, the middle dropped and said so."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.head = 0  # bytes of the head written
        self.past = 0  # bytes written since the head (or since the last cut)
        self.tail = bytearray()  # the last LOG_TAIL_BYTES written past the head
        self.dropped = 0
        self.cuttable = True

    def write(self, data: bytes) -> None:
        if self.head < LOG_HEAD_BYTES:
            first = data[: LOG_HEAD_BYTES - self.head]
            self._out(first)
            self.head += len(first)
            data = data[len(first):]
        if not data:
            return
        self.tail += data
        del self.tail[: max(0, len(self.tail) - LOG_TAIL_BYTES)]
        if self.past + len(data) <= 2 * LOG_TAIL_BYTES:
            self._out(data)
            self.past += len(data)
            return
        self.dropped += self.past + len(data) - len(self.tail)
        if self.cuttable:
            try:
                os.ftruncate(self.fd, self.head)
            except OSError:  # not a file (a pipe): what is past the head is dropped until the end
                self.cuttable = False
        if self.cuttable:
            self._out(f"\n{self._dropped()}\n".encode() + bytes(self.tail))
            self.past = len(self.tail)
        else:
            self.past = 2 * LOG_TAIL_BYTES + 1

    def close(self) -> None:
        if not self.cuttable and self.dropped:
            self._out(f"\n{self._dropped()}\n".encode() + bytes(self.tail))

    def _dropped(self) -> str:
        return f"agent-tui: {self.dropped:,} bytes of the server's log were dropped here (its first and last bytes are kept)"

    def _out(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view):]
            except OSError:  # a full disk: the log is lost, the server goes on
                return


class Stdout:
    """The server's stdout relayed line by line: JSON-RPC to agent-tui, anything else to the log."""

    def __init__(self, limit: int, log: Log, noise_flag: str) -> None:
        self.limit, self.log, self.noise_flag = limit, log, noise_flag
        self.run = 0  # bytes of the line so far
        self.start = b""  # the blanks a line began with, before its kind is known
        self.kind: str | None = None  # "json" or "noise", once known
        self.noisy = False
        self.closed = False  # agent-tui stopped reading

    def feed(self, chunk: bytes) -> bool:
        """Pass `chunk` on; False as soon as a line runs past the limit."""
        while chunk:
            end = chunk.find(b"\n")
            part, chunk = (chunk, b"") if end < 0 else (chunk[: end + 1], chunk[end + 1:])
            if not self._line_part(part, ends=end >= 0):
                return False
        return True

    def _line_part(self, part: bytes, ends: bool) -> bool:
        if self.kind is None:
            body = part.lstrip(_SPACE)
            self.start += part[: len(part) - len(body)]
            if body and body != b"\n":
                self.kind = "json" if body[:1] in _JSON_STARTS else "noise"
                part, self.start = self.start + body, b""
            elif ends or len(self.start) > self.limit:
                self.kind = "noise"
                part, self.start = self.start + body, b""
            else:
                return True
        if self.kind == "json":
            self.run += len(part) - (1 if ends else 0)
            if self.run > self.limit:
                return False
            self._out(part)
        else:
            self._noise(part)
        if ends:
            self.run, self.kind = 0, None
        return True

    def _noise(self, part: bytes) -> None:
        if not self.noisy:
            self.noisy = True
            self.log.write(f"{NOISE_LINE}\n".encode())
            try:
                with open(self.noise_flag, "w"):
                    pass
            except OSError:
                pass
        self.log.write(part)

    def _out(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.closed:
            try:
                view = view[os.write(1, view):]
            except BrokenPipeError:
                self.closed = True


def _relay(out: int, err: int, stdout: Stdout, log: Log, child: int) -> tuple[bool, int | None]:
    """Relay the server's stdout and stderr until both end, or stdout ends and the server has
    exited: (False, None) as soon as a stdout line runs past the limit, else (True, the server's
    wait status if it was reaped here)."""
    open_fds = {out, err}
    while open_fds:
        waiting = out not in open_fds  # stdout ended: stderr is drained while the server lives
        ready, _, _ = select.select(list(open_fds), [], [], 0.2 if waiting else None)
        if not ready:
            pid, status = os.waitpid(child, os.WNOHANG)
            if pid != 0:
                return True, status
            continue
        for fd in ready:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                open_fds.discard(fd)
            elif fd == err:
                log.write(chunk)
            elif not stdout.feed(chunk):
                return False, None
    return True, None


def main(argv: list) -> int:
    if len(argv) < 4 or not argv[2].isdigit():
        print("usage: guard.py PARENT_PID PIDFILE MAX_LINE COMMAND [ARGS...]", file=sys.stderr)
        return 2
    parent, pidfile, limit, command = int(argv[0]), argv[1], int(argv[2]), argv[3:]
    _own_session()
    with open(pidfile, "w") as f:
        f.write(str(os.getpid()))
    _die_with_parent(signal.SIGTERM)  # which stops the server, below
    if os.getppid() != parent:  # agent-tui died before the signal was armed
        return 1
    guard = os.getpid()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.setpgid(0, 0)  # the server's own group, which its children join
            os.close(out_read)
            os.close(err_read)
            os.dup2(out_write, 1)
            os.dup2(err_write, 2)
            os.close(out_write)
            os.close(err_write)
            _die_with_parent()
            if os.getppid() != guard:
                os._exit(1)
            os.execvp(command[0], command)
        except OSError as exc:
            print(f"agent-tui: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
            sys.stderr.flush()
        os._exit(127)
    try:
        os.setpgid(child, child)  # (also here: the group exists before any signal is sent to it)
    except OSError:
        pass
    signal.signal(signal.SIGTERM, _on_sigterm(child))
    os.close(out_write)
    os.close(err_write)
    os.close(0)  # the server's stdin is its own: its end comes when agent-tui closes it
    log = Log(2)
    stdout = Stdout(limit, log, pidfile + NOISE)
    whole, status = _relay(out_read, err_read, stdout, log, child)
    if not whole:
        _stop_server(child, signal.SIGKILL)
        os.waitpid(child, 0)
        log.write(f"{TOO_LONG} {_size(limit)} (a line that long without its end); it was stopped\n".encode())
        log.close()
        return EXIT_TOO_LONG
    log.close()
    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1] if status is None else status)
    return code if code >= 0 else 128 - code  # killed by signal N: 128 + N, as a shell says it


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
