"""One writer per transcript, and where a run goes when its transcript is taken away.

The writer holds an exclusive `flock` on its file for the whole run (a live
run, a resume, a fork into a file): a second writer is refused with
`TranscriptBusy`, whose message names the process that holds the lock (read
from /proc/locks). When the path stops naming the open file (deleted or
replaced during the run), `move_to_recovery` copies what was written into a
new file beside it, locked, and the run goes on there.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class TranscriptBusy(Exception):
    """Another process is writing this transcript; the message names it."""


def holder(fd: int) -> str:
    """Who holds the flock on the file behind `fd`: "process 123 (agent-tui run ...)"."""
    inode = str(os.fstat(fd).st_ino)
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            rows = locks.read().splitlines()
    except OSError:
        rows = []
    for row in rows:
        parts = row.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5].rsplit(":", 1)[-1] == inode:
            pid = parts[4]
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                command = ""
            return f"process {pid}" + (f" ({command[:120]})" if command else "")
    return "another process"


def lock(fd: int, path: Path) -> None:
    """Take the exclusive lock on `fd` for as long as it is open; TranscriptBusy if another has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise TranscriptBusy(
            f"{path}: another run is writing this transcript ({holder(fd)}); "
            "wait for it to end, or fork the run into a new file"
        ) from None


def identity(fd_or_path: int | Path) -> tuple[int, int]:
    """(device, inode) of an open file or a path."""
    st = os.fstat(fd_or_path) if isinstance(fd_or_path, int) else os.stat(fd_or_path)
    return st.st_dev, st.st_ino


def still_named(path: Path, ident: tuple[int, int]) -> bool:
    """Whether `path` still names the file whose identity is `ident`."""
    try:
        return identity(path) == ident
    except OSError:
        return False


def move_to_recovery(path: Path, old_fd: int) -> tuple[int, Path]:
    """A new locked file beside `path` holding everything `old_fd` holds; (its fd, its path).
    `old_fd` is closed."""
    n = 0
    while True:
        suffix = f".recovered-{os.getpid()}" + (f"-{n}" if n else "")
        target = path.with_name(path.stem + suffix + (path.suffix or ".jsonl"))
        try:
            fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            break
        except FileExistsError:
            n += 1
    lock(fd, target)
    size, offset = os.fstat(old_fd).st_size, 0
    while offset < size:
        chunk = os.pread(old_fd, min(1 << 20, size - offset), offset)
        if not chunk:
            break
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]
        offset += len(chunk)
    os.fsync(fd)
    os.close(old_fd)
    return fd, target
