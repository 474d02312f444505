"""Reading a small text file the operator names (a rules file, the configuration):
a device (`/dev/zero`), a folder or a file over `MAX_BYTES` is refused with a sentence
instead of being read into memory without end; a pipe is read up to the same cap."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_BYTES = 1 << 20
"""1 MiB: far more than any rules or configuration file needs."""


class SmallFileError(Exception):
    """The file cannot be read as a small text file; the message names it and why."""


def why_unreadable(path: Path, exc: OSError, kind: str, missing: str | None = None) -> str:
    """A sentence for a file that could not be opened or read: missing, a folder, or the system's words."""
    if isinstance(exc, FileNotFoundError):
        return f"{path}: no such {missing or kind}"
    if isinstance(exc, IsADirectoryError):
        return f"{path}: is a folder, not a {kind}"
    return f"{path}: cannot read: {exc.strerror or exc}"


def read_small_text(path: Path, kind: str, limit: int = MAX_BYTES, *, regular_only: bool = False) -> str:
    """The UTF-8 text of `path`, a `kind` ("rules file", "configuration file").

    `regular_only`: a pipe or socket is refused too, before it is opened (opening a FIFO
    waits for a writer), and the open itself never waits."""
    try:
        if regular_only and not stat.S_ISREG(os.stat(path).st_mode):
            raise SmallFileError(f"{path}: not a regular file (a folder, a device, a pipe or a socket)")
        opened = open(os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK), "rb") if regular_only else open(path, "rb")
        with opened as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                raise SmallFileError(f"{path}: is a device, not a {kind}")
            if regular_only and not stat.S_ISREG(mode):
                raise SmallFileError(f"{path}: not a regular file (a folder, a device, a pipe or a socket)")
            data = f.read(limit + 1)
    except OSError as exc:
        raise SmallFileError(why_unreadable(path, exc, kind)) from None
    if len(data) > limit:
        raise SmallFileError(f"{path}: larger than {limit >> 20} MiB; not a {kind}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SmallFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
