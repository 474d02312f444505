"""Arguments checked against a JSON schema (the subset function-calling agents send).

A `Tool` may carry the JSON schema of its arguments (the tools an agent
declares to the gateway); `validate_args` then checks them here instead of
against `params`: type, properties, required, additionalProperties, enum,
const, items, anyOf / oneOf. Other keywords are not checked.
"""

from __future__ import annotations

import json
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is(kind: str, value: Any) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


def schema_problems(schema: Any, value: Any, where: str = "arguments") -> list[str]:
    """What is wrong with `value` against `schema` (empty when it fits)."""
    if not isinstance(schema, dict):
        return []
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            if not any(not schema_problems(o, value, where) for o in options):
                return [f"{where} matches none of the allowed forms"]
    kinds = schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    if isinstance(kinds, list) and kinds and not any(_is(k, value) for k in kinds):
        return [f"{where} must be {' or '.join(map(str, kinds))}, not {_json_type(value)}"]
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return [f"{where} must be one of {', '.join(map(str, schema['enum']))}"]
    if "const" in schema and value != schema["const"]:
        return [f"{where} must be {schema['const']!r}"]
    problems: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for name in schema.get("required") or []:
            if name not in value:
                problems.append(f"missing argument '{name}'")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                problems.extend(schema_problems(props[name], item, f"argument '{name}'"))
            elif extra is False:
                problems.append(f"unknown argument '{name}'")
            elif isinstance(extra, dict):
                problems.extend(schema_problems(extra, item, f"argument '{name}'"))
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for n, item in enumerate(value):
            problems.extend(schema_problems(schema["items"], item, f"{where}[{n}]"))
    return problems


def from_form(schema: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Arguments typed in the edit form as text, read as JSON where the schema wants another type."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return dict(args)
    out = dict(args)
    for name, value in args.items():
        kind = props.get(name, {}).get("type") if isinstance(props.get(name), dict) else None
        if isinstance(value, str) and kind not in (None, "string") and not (isinstance(kind, list) and "string" in kind):
            try:
                out[name] = json.loads(value)
            except ValueError:
                pass
    return out


def _json_type(value: Any) -> str:
    for name, types in _TYPES.items():
        if _is(name, value):
            return name
    return type(value).__name__
