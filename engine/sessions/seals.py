"""Seals: what a transcript grants is believed only when this machine's operator made it.

A transcript is a plain JSON-lines file that anyone who can write to it can
edit. The lines that grant lasting permission, the header (its approval rules)
and each "approve always", carry a seal: an HMAC-SHA256 by a per-user secret
key of the line's canonical content (the line without its seal). An "approve
always" is sealed together with the digest of its run's header, so a seal
copied to another event, or to another run, does not match there.

The key is 32 random bytes in `seal.key` in the per-user data folder
($AGENT_TUI_HOME, else $XDG_DATA_HOME/agent-tui), made on first use with mode
0600. It is never printed and never written to a transcript. A key that cannot
be made or read (a read-only folder, a file others can read) is `KeyUnavailable`:
runs still start, and rules from files are simply not believed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import threading
from pathlib import Path
from typing import Any, TypeVar

from pydantic_core import from_json

from engine.core.events import ApprovalDecided, Header, ToolInfo
from engine.core.guards import serialised
from engine.sessions.folders import user_data_dir

KEY_BYTES = 32
KEY_NAME = "seal.key"
_HEADER_DOMAIN = b"agent-tui header seal 1\n"
_APPROVAL_DOMAIN = b"agent-tui approve-always seal 1\n"
KEPT_TOOL_BYTES = 2_000_000
"""The tools' canonical forms kept, in bytes with their lines (an agent's 20-30 tools are a few
tens of KB; an agent that declares new tools at every request pushes out the oldest)."""
_tool_forms: dict[bytes, bytes] = {}
"""A tool's line (`serialised`) to its canonical form (`_tool_canonical`), the oldest first."""
_tool_forms_size = 0
_tool_forms_lock = threading.Lock()
KEPT_TOOL_RECORDS = 1024
_record_forms: dict[int, tuple[ToolInfo, bytes]] = {}
"""The canonical forms of the tool records sealed last, by the record (kept with it, so its id
stays its own): a record is frozen, and the gateway gives an agent's same tools as the same
records to each new run, whose seal then needs no line of them."""
_record_forms_size = 0
_Sealed = TypeVar("_Sealed", Header, ApprovalDecided)


class KeyUnavailable(Exception):
    """The approval key cannot be made or read; the message names the file and why."""


def key_path() -> Path:
    return user_data_dir() / KEY_NAME


def load_key(path: Path | None = None) -> bytes:
    """The operator's key, made on first use; KeyUnavailable says why there is none."""
    path = key_path() if path is None else path
    try:
        return _read_key(path)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        raise KeyUnavailable(f"cannot read the approval key {path}: {exc.strerror or exc}") from None
    try:
        _make_key(path)
        return _read_key(path)
    except OSError as exc:
        raise KeyUnavailable(f"cannot make the approval key {path}: {exc.strerror or exc}") from None


def key_or_problem() -> tuple[bytes | None, str | None]:
    """(key, None), or (None, why there is none)."""
    try:
        return load_key(), None
    except KeyUnavailable as exc:
        return None, str(exc)


def _read_key(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyUnavailable(f"the approval key {path} is not a regular file")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise KeyUnavailable(f"the approval key {path} belongs to another user")
        if info.st_mode & 0o077:
            raise KeyUnavailable(
                f"the approval key {path} can be read or changed by others (mode {stat.S_IMODE(info.st_mode):o}); "
                f"make it private: chmod 600 {path}"
            )
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise KeyUnavailable(f"the approval key {path} is damaged ({len(data)} bytes, not {KEY_BYTES}); remove it to make a new one")
    return data


def _make_key(path: Path) -> None:
    """Write a new key beside `path` and link it into place: a key another process made
    at the same moment wins, and nobody ever reads half a key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    spare = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(spare, path)
        except FileExistsError:
            pass  # another process made it first: that key is the one
    finally:
        spare.unlink(missing_ok=True)


def _canonical(item: Header | ApprovalDecided) -> bytes:
    """The content a seal covers: the line as a reader gets it back, without its seal, as
    sorted compact JSON without fields at their defaults (a field added to the format
    later leaves old seals good); a header keeps its format version. A header's tools are
    written from each tool's own canonical form (`_tool_canonical`), the same bytes."""
    if not isinstance(item, Header) or not item.tools:
        return _dumps(_read_back(item))
    rest = _read_back(item.model_copy(update={"tools": [], "seal": None}))
    before = _dumps({k: v for k, v in rest.items() if k < "tools"})  # never empty: a header's task, its scenario...
    after = {k: v for k, v in rest.items() if k > "tools"}
    tools = b',"tools":[' + b",".join(_tool_canonical(tool) for tool in item.tools) + b"]"
    return before[:-1] + tools + (b"," + _dumps(after)[1:] if after else b"}")


def _read_back(item: Header | ApprovalDecided) -> dict[str, Any]:
    _, line = serialised(item if item.seal is None else item.model_copy(update={"seal": None}))
    read_back = type(item).model_validate_json(line)
    data = read_back.model_dump(mode="json", exclude_defaults=True, exclude={"seal"})
    if isinstance(read_back, Header):
        data["format_version"] = read_back.format_version
    return data


def _dumps(data: object) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _tool_canonical(tool: ToolInfo) -> bytes:
    """A tool as its header's canonical form holds it, found by its line: an agent declares
    the same tools in every request, and each new run's header is sealed with them. The
    forms of the tools seen last are kept, up to `KEPT_TOOL_BYTES` with their lines."""
    global _tool_forms_size
    known = _record_forms.get(id(tool))
    if known is not None and known[0] is tool:
        return known[1]
    line = serialised(tool)[1]
    form = _tool_forms.get(line)
    if form is not None:
        _remember(tool, form)
        return form
    read_back = ToolInfo.model_validate(from_json(line, cache_strings="keys"))  # as a header's line is read: no string cache
    form = _dumps(read_back.model_dump(mode="json", exclude_defaults=True))
    size = len(line) + len(form)
    if size <= KEPT_TOOL_BYTES:
        with _tool_forms_lock:
            if line not in _tool_forms:
                while _tool_forms and _tool_forms_size + size > KEPT_TOOL_BYTES:
                    oldest = next(iter(_tool_forms))
                    _tool_forms_size -= len(oldest) + len(_tool_forms.pop(oldest))
                _tool_forms[line] = form
                _tool_forms_size += size
        _remember(tool, form)
    return form


def _remember(tool: ToolInfo, form: bytes) -> None:
    """`form` kept by the record `tool`; all are forgotten past `KEPT_TOOL_RECORDS` records or
    `KEPT_TOOL_BYTES` of forms."""
    global _record_forms_size
    with _tool_forms_lock:
        if len(_record_forms) >= KEPT_TOOL_RECORDS or _record_forms_size + len(form) > KEPT_TOOL_BYTES:
            _record_forms.clear()
            _record_forms_size = 0
        _record_forms[id(tool)] = (tool, form)
        _record_forms_size += len(form)


def header_digest(header: Header) -> bytes:
    """What identifies a run: the hash of its header's content (the seal aside)."""
    return _digest_of(_canonical(header))


def _header_mac(key: bytes, header: Header) -> str:
    return _mac_of(key, _canonical(header))


def _mac_of(key: bytes, canonical: bytes) -> str:
    return hmac.new(key, _HEADER_DOMAIN + canonical, hashlib.sha256).hexdigest()


def _digest_of(canonical: bytes) -> bytes:
    return hashlib.sha256(canonical).hexdigest().encode()


def _approval_mac(key: bytes, digest: bytes, event: ApprovalDecided) -> str:
    return hmac.new(key, _APPROVAL_DOMAIN + digest + b"\n" + _canonical(event), hashlib.sha256).hexdigest()


def seal_header(key: bytes, header: Header) -> Header:
    return header.model_copy(update={"seal": _header_mac(key, header)})


def header_sealed(key: bytes, header: Header) -> bool:
    return _same(header.seal, _header_mac(key, header))


def _same(seal: object, mac: str) -> bool:
    """A seal read from a file (any text at all) against the right one, in constant time."""
    return isinstance(seal, str) and hmac.compare_digest(seal.encode("utf-8", "replace"), mac.encode())


class Sealer:
    """Seals the "approve always" of one run (the engine's `seal_approval`)."""

    def __init__(self, key: bytes, header: Header, digest: bytes | None = None) -> None:
        self._key = key
        self._digest = header_digest(header) if digest is None else digest
        """`header_digest(header)`; given when the caller has it already."""

    def __call__(self, event: ApprovalDecided) -> ApprovalDecided:
        return event.model_copy(update={"seal": _approval_mac(self._key, self._digest, event)})

    def sealed(self, event: ApprovalDecided) -> bool:
        """Whether `event` carries this run's good seal."""
        return _same(event.seal, _approval_mac(self._key, self._digest, event))


def sealed_run(key: bytes | None, header: Header) -> tuple[Header, Sealer | None]:
    """A new run's header sealed by `key` (without a seal when there is no key), and what seals
    its "approve always"."""
    plain = header if header.seal is None else header.model_copy(update={"seal": None})
    if key is None:
        return plain, None
    canonical = _canonical(plain)  # once, for the seal and the digest (a new gateway run waits for both)
    sealed = plain.model_copy(update={"seal": _mac_of(key, canonical)})
    return sealed, Sealer(key, sealed, _digest_of(canonical))
