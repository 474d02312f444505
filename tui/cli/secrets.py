"""Secrets for the command line that stay out of the process list.

Every user of the machine can read a process's arguments (`ps`, /proc/PID/cmdline),
so a secret given as an argument is given to all of them. `add_secret_arguments`
adds the flag (`--token T`, kept for scripts, with a warning on stderr when used),
its file form (`--token-file PATH`, `-` for stdin) and names the environment variable
that already works; `secret_value` reads them. A URL flag (`--base-url`, `--upstream`,
`--mcp-url`) holding credentials (`https://user:key@host`, `...?key=K`) is warned about
as it is parsed (`url_argument`), pointing to the environment or the configuration file.
No message ever holds the secret.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import sys
from dataclasses import dataclass
from typing import Any, Callable

from tui.exits import UsageError, os_error_text, report

MAX_SECRET_BYTES = 64 * 1024
"""The most read from a secret file: a key is short, and `--token-file /dev/zero` must end."""
_UNSAFE = re.compile(r"[^\x21-\x7e]")
"""What a secret cannot hold: anything but printable ASCII. A token goes in an HTTP header,
whose value loses its outer spaces on the way and is read as Latin-1, so a space or a
non-ASCII character would make a token that never matches."""
_URL_CREDENTIALS = re.compile(r"://[^/?#@\s]+@")
"""A URL with user info (`https://user:key@host`, `https://TOKEN@host`)."""


def url_argument(flag: str, instead: str) -> Callable[[str], str]:
    """An argparse `type` for a URL flag: the URL as given, with a warning on stderr when it holds
    credentials (other users read them in the process list); `instead` says where they belong."""

    def url(text: str) -> str:
        from engine.core.urls import query_credentials

        where = "user info in the URL" if _URL_CREDENTIALS.search(text) else "a key in the URL's query" if query_credentials(text) else None
        if where:
            report(f"warning: {flag} holds credentials ({where}), which other users can read in the process list; {instead}")
        return text

    return url


@dataclass(frozen=True)
class SecretFlag:
    """A secret the command takes: `--NAME` (in argv, warned about), `--NAME-file` and an environment variable."""

    name: str
    env: str
    what: str

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    @property
    def file_flag(self) -> str:
        return f"--{self.name}-file"

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


def add_secret_arguments(parser: Any, secret: SecretFlag, *, purpose: str = "") -> None:
    """`--NAME VALUE` and `--NAME-file PATH` for `secret`; `purpose` follows what it is in the help."""
    suffix = f" ({purpose})" if purpose else ""
    parser.add_argument(
        secret.flag, metavar=secret.name.upper(),
        help=f"{secret.what}{suffix}; other users can read it in the process list: prefer {secret.file_flag} or ${secret.env}",
    )
    parser.add_argument(
        secret.file_flag, metavar="PATH",
        help=f"read {secret.what} from the file PATH (- for stdin), kept out of the process list",
    )


def secret_value(args: argparse.Namespace, secret: SecretFlag) -> str | None:
    """The secret from the file flag, the flag (with a warning) or the environment; None when none is set.

    UsageError for both flags at once, or a file that cannot be read or holds no usable secret."""
    given = getattr(args, secret.dest, None)
    path = getattr(args, f"{secret.dest}_file", None)
    if given is not None and path is not None:
        raise UsageError(f"give {secret.flag} or {secret.file_flag}, not both")
    if path is not None:
        return _read_secret(path, secret)
    if given is not None:
        report(f"warning: {secret.flag} on the command line can be read by other users in the process list; "
               f"give it with {secret.file_flag} PATH (- for stdin) or ${secret.env} instead")
        _check(given, secret.flag, secret)
        return given
    value = os.environ.get(secret.env)
    if value:
        _check(value, f"${secret.env}", secret)  # checked as a file's token is: one that could never match is refused
    return value or None


def _read_secret(path: str, secret: SecretFlag) -> str:
    where = "stdin" if path == "-" else path
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_SECRET_BYTES + 1)
        else:
            with open(path, "rb") as f:
                mode = os.fstat(f.fileno()).st_mode
                if stat.S_ISREG(mode) and mode & 0o077:
                    report(f"warning: {secret.file_flag} {path}: other users may read the file; "
                           f"make it yours alone with chmod 600 {path}")
                raw = f.read(MAX_SECRET_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{secret.file_flag}: {os_error_text(exc)}") from None
    if len(raw) > MAX_SECRET_BYTES:
        raise UsageError(f"{secret.file_flag} {where}: longer than {MAX_SECRET_BYTES // 1024} KiB; it should hold {secret.what} alone")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{secret.file_flag} {where}: not UTF-8 text") from None
    value = text.removeprefix("\ufeff").strip()  # an editor's trailing newline or space is not part of it
    if not value:
        raise UsageError(f"{secret.file_flag} {where}: empty; it should hold {secret.what}")
    _check(value, f"{secret.file_flag} {where}", secret)
    return value


def _check(value: str, where: str, secret: SecretFlag) -> None:
    """UsageError, without the value, for a secret holding anything but printable ASCII (a space,
    a line break, a control character, a letter outside ASCII)."""
    if not value:
        raise UsageError(f"{where}: empty; it should be {secret.what}")
    found = _UNSAFE.search(value)
    if found is not None:
        char = found.group()
        if char in "\r\n":
            kind = "a line break"
        elif not char.isprintable():
            kind = "a control character"
        elif char.isspace():
            kind = "a space"
        else:
            kind = "a character outside ASCII"
        raise UsageError(f"{where}: {secret.what} holds {kind} (character {found.start() + 1}); it must be one word of printable ASCII")
