"""JSON facts about argument values without a JSON round trip.

Every step the engine checks that an action's arguments can be written as
JSON, renders the action for people and compares it with the previous one
(the repetition brake). Arguments are almost always flat objects of strings
and numbers: those take a fast path here, anything else goes through `json`
as before, so the answers are the same.
"""

from __future__ import annotations

import json
from typing import Any, Hashable

_SCALARS = (str, int, float, bool, type(None))
_SORTED_ENCODER = json.JSONEncoder(sort_keys=True, default=str)
_VALUE_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""`json.dumps(v, ensure_ascii=False, default=str)` without a new encoder per value."""


def _flat(args: dict[str, Any]) -> bool:
    """Every key a string and every value a scalar (a loop: cheaper than `all` over a generator)."""
    for key, value in args.items():
        if type(key) is not str or type(value) not in _SCALARS:
            return False
    return True


def _two_levels(args: dict[str, Any]) -> bool:
    """Every value a scalar, or a list or object of scalars (a command's words): two levels at most."""
    for value in args.values():
        kind = type(value)
        if kind is list:
            for item in value:
                if type(item) not in _SCALARS:
                    return False
        elif kind is dict:
            for item in value.values():
                if type(item) not in _SCALARS:
                    return False
        elif kind not in _SCALARS:
            return False
    return True


MAX_DEPTH = 100
"""How deep arguments may nest (objects and lists, the arguments themselves the first
level). Deeper, the transcript's JSON writer (it stops near 255 levels) or Python's
recursion on the way raised out of the engine's step instead of a policy error."""


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests objects or lists more than `limit` deep; walked without
    recursion, and depth first, so a structure that holds itself is found quickly."""
    if type(value) is dict and limit >= 2 and _two_levels(value):
        return False
    if not isinstance(value, (dict, list, tuple)):
        return False
    stack = [(value, 1)]  # containers only
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, depth + 1))
    return False


def jsonable(args: dict[str, Any]) -> str | None:
    """None when `json.dumps(args)` works and nests at most `MAX_DEPTH` levels, else why not."""
    if type(args) is dict and _flat(args):
        return None
    if too_deep(args):
        return f"nested deeper than {MAX_DEPTH} levels"
    try:
        json.dumps(args)
    except (TypeError, ValueError, RecursionError) as exc:
        return str(exc)
    return None


def args_key(tool: str, args: dict[str, Any]) -> Hashable:
    """A key equal for two calls exactly when `tool + json.dumps(args, sort_keys=True, default=str)` is."""
    if _flat(args):
        if len(args) == 1:
            ((k, v),) = args.items()
            return (tool, ((k, type(v), repr(v)),))
        return (tool, tuple(sorted((k, type(v), repr(v)) for k, v in args.items())))
    return tool + _SORTED_ENCODER.encode(args)


def call_text(tool: str | None, args: dict[str, Any]) -> str:
    """`tool(key=value, ...)` with JSON values: the one way a tool call is written, for
    people (every view of a run, through `engine.core.describe`) and for text-format
    policies (`Action.render`). Not cleaned: each renderer cleans or escapes it."""
    encode = _VALUE_ENCODER.encode
    parts = [f"{k}={encode(v)}" for k, v in args.items()]
    return f"{tool or '?'}({', '.join(parts)})"
