"""One writer per transcript, and where a run goes when its transcript is taken away.

The writer holds an exclusive `flock` on its file for the whole run (a live
run, a resume, a fork into a file): a second writer is refused with
`TranscriptBusy`, whose message names the process that holds the lock (read
from /proc/locks). When the path stops naming the open file (deleted or
replaced during the run), `move_to_recovery` copies what was written into a
new file beside it, locked, and the run goes on there.

Every file agent-tui writes anew (a run's transcript, a fork, an import, a
report) is opened by `open_new`, the one check: never through a symbolic link
(dangling, or to an empty file, too), never into a file that holds something,
never into a transcript another process holds.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import Callable


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


def not_empty(path: Path | str) -> str:
    """Why a new file will not be written at `path`: it holds something (a run, or anything else)."""
    return f"{path} is not empty (a run or another file); agent-tui never writes into it: choose another file"


def a_folder(path: Path | str) -> str:
    return f"{path} is a folder; give a file name (for example {Path(path) / 'run.jsonl'})"


def not_a_file(path: Path | str) -> str:
    return f"{path} is not a regular file (a device, a pipe or a socket); agent-tui writes only files"


def a_link(path: Path | str) -> str:
    return f"{path} is a symbolic link; agent-tui never writes through one: choose another file"


def check_new(path: Path | str) -> None:
    """FileExistsError when `path` may not be written anew: a symbolic link (even a dangling one,
    or one to an empty file), a file that is not empty, or no regular file (a device, a pipe, a
    socket); IsADirectoryError for a folder. `open_new` checks again as it opens."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(a_folder(path))
    if stat.S_ISLNK(st.st_mode):
        raise FileExistsError(a_link(path))
    if not stat.S_ISREG(st.st_mode):
        raise FileExistsError(not_a_file(path))
    if st.st_size > 0:
        raise FileExistsError(not_empty(path))


def open_new(path: Path, *, append: bool = False) -> int:
    """`path` opened to be written anew, created if missing (its folder too), and locked (the fd;
    read and write).

    Refused as `check_new` says, with no gap for a race: the open does not follow a link put
    there meanwhile (O_NOFOLLOW), and the size is checked again under the lock, so a run that
    has just opened the file (locked: TranscriptBusy) or written into it is never overwritten."""
    check_new(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def still_empty(fd: int) -> None:
        if os.fstat(fd).st_size > 0:
            raise FileExistsError(not_empty(path))

    return _open_locked(path, os.O_APPEND if append else 0, still_empty)


def _open_locked(path: Path, extra_flags: int, then: Callable[[int], None]) -> int:
    """`path` opened read-write (created if missing) without following a link, a regular file,
    locked; then `then(fd)` under the lock. The fd, or the error with the fd closed."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | extra_flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileExistsError(a_link(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(not_a_file(path))
        lock(fd, path)
        then(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


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


def open_replace(path: Path) -> int:
    """`path` opened to be replaced (the operator said yes to that), locked and emptied: the fd.

    Never through a symbolic link (O_NOFOLLOW), never a device or a pipe, and never a
    transcript another run holds (TranscriptBusy): the lock is taken before anything is cut."""
    return _open_locked(path, 0, lambda fd: os.ftruncate(fd, 0))
