"""JSON as other tools wrote it, read with nothing lost (`loads`): quickly by pydantic's parser
where it reads the text as Python's `json` would (`plain`), else by `json` with hooks.

Every importer reads its files through here: a whole document, each line of a file of JSON lines
(`plain_loads` once the whole file is known plain), a call's arguments written as a string; and so
does the text format's reader (`engine.core.parse`), for an action's JSON object a model wrote.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import threading
from functools import partial
from typing import Any, Callable

from pydantic_core import from_json

MAX_DIGITS = 4300
"""Python's own limit for turning digits into an int (json.loads raises ValueError past it)."""


def _int(digits: str) -> int | str:
    return int(digits) if len(digits) <= MAX_DIGITS + 1 else digits


def _float(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text


_fast = partial(from_json, allow_inf_nan=False, cache_strings="keys")  # a cache of values costs more than it saves
"""pydantic's JSON parser, as every reading here calls it."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _exponent(letter: str) -> str:
    """An exponent's letter (`letter`: e, E or both) after a digit or a point, unless the digits
    before it stand in a word (one to three after a letter, one or two after a letter or digit and
    a hyphen: a uuid's `a8e3`, `40c0-8e39`): after 210 digits, or with three digits of its own
    (maybe past a float's range; `_ends_a_number` checks what stands before it)."""
    word = "".join(f"(?<![A-Za-z_][0-9]{{{n}}}{letter})" for n in (1, 2, 3))
    word += "".join(f"(?<![A-Za-z0-9_]-[0-9]{{{n}}}{letter})" for n in (1, 2))
    return f"{letter}(?<=[0-9.]{letter}){word}(?:(?<=[0-9]{{210}}{letter})|(?P<exponent>[+-]?[0-9]{{3}}))"


_EXACT_ONLY = (
    r"\\u[dD][89a-fA-F]",  # a surrogate escape: maybe a lone one
    r"\.(?<=[0-9]{210}\.)",  # a point after 210 digits: a number maybe past a float's range
    _exponent("e"),
    _exponent("E"),
)
"""What only the exact reading of `loads` gets right: a number that may be too large for a float
and a surrogate escape. Searched for one at a time in a long text: each starts with a fixed
character, which the regular expression engine finds quickly, and an exponent's letter is tried
further only after a digit that is not a word's (31 MB of Gemini CLI lines in 0.07 s, 87 MB of a
Claude Code session, whose ids hold an `e` after a digit in most lines, in 0.32 s). An exponent
of three digits counts where it ends a number (`_ends_a_number`), not in a string's word."""
_SHORT_PATTERN = "|".join((*_EXACT_ONLY[:2], _exponent("[eE]")))
_EXACT_ONLY_SHORT = (re.compile(_SHORT_PATTERN), re.compile(_SHORT_PATTERN.encode()))
"""All of them in one expression: quicker for a short text (a call's arguments), where each search's
own cost counts more than the characters it reads."""
_EXACT_ONLY_LONG = (tuple(map(re.compile, _EXACT_ONLY)), tuple(re.compile(p.encode()) for p in _EXACT_ONLY))
SHORT = 4096
_MANTISSA = frozenset("0123456789.")
_BEFORE_A_NUMBER = frozenset(map(chr, range(33))) | frozenset(":,[\ufeff\xbf")
"""What may stand before a number's digits (or its sign) in JSON: whitespace, `:`, `,`, `[`, or the
text's start; to be safe, any control character and a byte-order mark too (0xBF, its last byte)."""


def _ends_a_number(text: str | bytes, at: int) -> bool:
    """Whether the exponent's letter at `at` (after a digit or a point) ends the digits of a number
    as JSON writes one (digits and a point, maybe a sign, after what may stand before a number),
    rather than a word's in a string (a uuid's `8e391`, `40c0-8e402`)."""
    char: Callable[[int], str] = (lambda i: chr(text[i])) if isinstance(text, bytes) else text.__getitem__  # type: ignore[index]
    i = at
    while i > 0 and char(i - 1) in _MANTISSA:
        i -= 1
    if i > 0 and char(i - 1) == "-":
        i -= 1
    return i == 0 or char(i - 1) in _BEFORE_A_NUMBER


def _exact_only(pattern: re.Pattern[Any], text: str | bytes) -> bool:
    """Whether `pattern` finds in `text` what only the exact reading gets right; a match of its
    `exponent` group counts only where it ends a number. Past a budget of exponents in words (one
    in 64 characters, 16 more in a short text) the text counts as holding one: the search then
    costs no more than the characters read."""
    budget = 16 + len(text) // 64
    found = pattern.search(text)
    while found is not None:
        if found.lastgroup != "exponent" or _ends_a_number(text, found.start()):
            return True
        budget -= 1
        if budget <= 0:
            return True
        found = pattern.search(text, found.start() + 1)
    return False


def plain(text: str | bytes) -> bool:
    """Whether `text` holds none of what only the exact reading of `loads` gets right (see
    `_EXACT_ONLY`), so the fast one reads it the same: checked once for a whole file of lines."""
    binary = isinstance(text, bytes)
    if len(text) < SHORT:
        return not _exact_only(_EXACT_ONLY_SHORT[binary], text)
    return not any(_exact_only(pattern, text) for pattern in _EXACT_ONLY_LONG[binary])


ASIDE = 8 * 1024 * 1024
"""A text this long is checked in a child process (`PlainCheck`): the check of 87 MB of Claude Code
lines takes 0.33 s, the fork of the process holding them 4 to 7 ms."""


class PlainCheck:
    """Whether a long text is `plain`, worked out aside while this process reads the text on.

    The check runs in a forked child process, on another core, and answers by its exit status;
    meanwhile the reader reads fast as if the text were plain (`hoped`), and asks `holds()` when it
    is done: False means what it read may differ from the exact reading (a number past a float's
    range, a lone surrogate), and it reads again with `loads`. Where a child cannot help or is not
    safe the check runs here, at once: a text shorter than `ASIDE`, one core to run on, no
    `os.fork` (Windows), or another thread in this process (a fork copies none, and one may hold a
    lock the child needs). Used as a context manager: the child is stopped and reaped on leaving."""

    def __init__(self, text: str | bytes) -> None:
        self._text = text
        self._child: int | None = None
        self._answer: bool | None = None
        if len(text) >= ASIDE and fork_helps():
            try:
                self._child = os.fork()
            except OSError:  # no memory or process left for it: checked here
                self._child = None
            else:
                if self._child == 0:  # the child: nothing of the parent's runs here (no handler, no flush, no exit hook)
                    status = 2
                    try:
                        signal.signal(signal.SIGINT, signal.SIG_DFL)
                        signal.signal(signal.SIGTERM, signal.SIG_DFL)
                        status = 0 if plain(text) else 1
                    finally:
                        os._exit(status)
        self.aside = self._child is not None
        """Whether the check was made in a child process."""
        if not self.aside:
            self._answer = plain(text)

    @property
    def hoped(self) -> bool:
        """Whether to read fast (`plain_loads`): unless the check, done here, found the text not plain."""
        return self._answer is not False

    def holds(self) -> bool:
        """Whether the text is plain: the child's answer, waited for (it ends first, as a rule), or
        the check made here if it gave none (stopped by a signal)."""
        if self._answer is None:
            status = self._reap()
            code = os.waitstatus_to_exitcode(status) if status is not None else None
            self._answer = code == 0 if code in (0, 1) else plain(self._text)
        return self._answer

    def _reap(self) -> int | None:
        """The child's wait status, once it has ended (None: reaped elsewhere, by a SIGCHLD handler
        that ignores children)."""
        child = self._child
        if child is None:
            return None
        try:
            status: int | None = os.waitpid(child, 0)[1]
        except ChildProcessError:
            status = None
        self._child = None  # (not before: interrupted while waiting, `close` still stops it)
        return status

    def close(self) -> None:
        """Stop the child if it still runs, and reap it."""
        if self._child is not None:
            try:
                os.kill(self._child, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def __enter__(self) -> PlainCheck:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def fork_helps() -> bool:
    """Whether a child process may work while this one goes on (check a text, read half a file): a
    fork is possible and safe (this thread alone), and there is another core for it."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return len(cores) > 1


def loads(text: str | bytes) -> Any:
    """JSON as another tool wrote it, with nothing lost and nothing that breaks what reads it next:
    a number too long for an int (over 4,300 digits) or too large for a float (1e400), and the
    NaN / Infinity that Python's JSON accepts, are kept as their text; a lone surrogate (half an
    emoji, which a JavaScript tool that cut a string writes as an escape, and which no UTF-8
    output can hold) becomes U+FFFD. Raises JSONDecodeError and RecursionError as json.loads does.

    Read first by pydantic's JSON parser (twice as fast as `json`; it refuses the long ints, NaN
    and Infinity, nests at most 200 levels and reads every other document as `json` does). What it
    refuses is read by `json` with the hooks above, which gives the answer or the error: a file of
    JSON lines, refused at its second line, is never searched whole here (`plain`, 0.3 s for 87 MB).
    What it reads is kept when the text is `plain`, else read again by `json` (a number past a
    float's range, which pydantic's parser takes for infinity)."""
    try:
        value = _fast(text)
    except (ValueError, TypeError):
        return _exact_loads(text)
    return value if plain(text) else _exact_loads(text)


def plain_loads(text: str | bytes) -> Any:
    """`loads` of a text `plain` holds no exception of (each line of a file checked whole, once):
    pydantic's parser, or `json` with the hooks where it refuses the text."""
    try:
        return _fast(text)
    except (ValueError, TypeError):
        return _exact_loads(text)


def _exact_loads(text: str | bytes) -> Any:
    value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=str)
    escaped = (_SURROGATE_ESCAPE_BYTES if isinstance(text, bytes) else _SURROGATE_ESCAPE).search(text)
    return _without_lone_surrogates(value) if escaped else value


def _without_lone_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate in its strings and keys replaced (iteratively: no recursion limit)."""
    def fixed(s: str) -> str:
        return _LONE_SURROGATE.sub("\ufffd", s) if _LONE_SURROGATE.search(s) else s

    if isinstance(value, str):
        return fixed(value)
    stack = [value] if isinstance(value, (dict, list)) else []
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for i, child in enumerate(item):
                if isinstance(child, str):
                    item[i] = fixed(child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
        else:
            for key in list(item):
                child = item[key]
                if isinstance(key, str) and _LONE_SURROGATE.search(key):
                    del item[key]
                    key = fixed(key)
                    item[key] = child
                if isinstance(child, str):
                    item[key] = fixed(child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
    return value
