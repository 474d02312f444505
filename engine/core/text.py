"""Untrusted text made safe to show: terminal control characters removed (`clean`), or shown
as escapes where nothing may be hidden (`visible`, for what the operator approves)."""

from __future__ import annotations

import re

# ESC-introduced sequences, then any remaining C0/C1 control character except tab
# and newline; DEL too. A sequence that carries a string (OSC, DCS, PM, APC, SOS:
# a title, a link's target, a clipboard's text, or everything to the end when it has
# no terminator) is shown with its escapes (`_shown`), so that no text the policy
# reads is hidden from the operator; one of parameters only (CSI: colours, cursor
# moves; two-byte escapes) is removed. Bidirectional overrides are shown as visible
# escapes so they cannot reorder what the operator reads.
_ESCAPE_SEQ = re.compile(
    r"(?P<string>\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL or ST
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)?"  # DCS, PM, APC, SOS ... ST
    r"|\x9d[^\x07\x9c]*(?:\x07|\x9c)?)"  # 8-bit OSC
    r"|\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI
    r"|\x1b[@-Z\\-_]?"  # other two-byte escapes
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")  # and a lone surrogate, which no output can encode
BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
"""The bidirectional controls (as a character class's inside): they reorder what the reader sees."""
_BIDI = re.compile(f"[{BIDI}]")


_ANY_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\ud800-\udfff]")
"""Every character the three patterns below act on (ESC, 8-bit CSI/OSC, CR, a lone surrogate
included): text without one is returned as it is after a single search."""
_ANY_UNSAFE_OR_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029\ud800-\udfff]")
"""`_ANY_UNSAFE` and what breaks a line or moves the cursor (tab, line feed, the Unicode separators)."""
_LINE_ESCAPES = {"\n": "\\n", "\t": "\\t"}


def clean(text: str) -> str:
    """Remove escape sequences of parameters only (colours, cursor moves), show those that carry
    a string with their escapes (`\\x1b]0;title\\x07`), and replace other control characters
    (tab and newline stay)."""
    if not text or _ANY_UNSAFE.search(text) is None:
        return text
    text = _ESCAPE_SEQ.sub(_sequence, text.replace("\r\n", "\n"))
    text = _CONTROL.sub("\ufffd", text)
    return _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def visible(text: str, *, one_line: bool = False) -> str:
    """Every control character shown as an escape (`\\x1b`, `\\x9d`, `<U+202E>`), nothing removed.

    For what the operator approves: `clean` drops a whole escape sequence, payload and all
    (an OSC or DCS runs to its terminator or the end of the text), which is right for reading
    a log but would hide part of a call from the one who decides whether it runs.
    `one_line`: line feeds and tabs too (`\\n`, `\\t`), so that the text cannot draw a line
    of its own (a forged prompt under the real one)."""
    pattern = _ANY_UNSAFE_OR_LINE if one_line else _ANY_UNSAFE
    if not text or pattern.search(text) is None:
        return text
    return pattern.sub(_shown, text)


def _sequence(match: re.Match[str]) -> str:
    """An escape sequence as `clean` leaves it: one that carries a string shown, any other removed."""
    string = match.group("string")
    return _ANY_UNSAFE.sub(_shown, string) if string else ""


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char in _LINE_ESCAPES:
        return _LINE_ESCAPES[char]
    code = ord(char)
    return f"<U+{code:04X}>" if code > 0xFF else f"\\x{code:02x}"



def one_line(text: str, limit: int = 60) -> str:
    """`text` on one line (each run of white space one space), at most `limit` characters, cut with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def with_article(words: str) -> str:
    """`a Codex CLI rollout JSONL`, `an observation`; a plural (`OpenAI chat messages`) as it is."""
    if words.split(" (")[0].endswith("s"):
        return words
    return ("an " if words[:1].lower() in ("a", "e", "i", "o", "u") else "a ") + words
