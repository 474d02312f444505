"""The tools an agent declares in its request, and their arguments checked as JSON.

The gateway learns an agent's tools from each request's `tools` (function
definitions with a JSON schema). They become engine `Tool`s of kind
"irreversible", so every call asks unless a rule allows it, and they carry the
schema: an operator's edit is checked against it (`schema_problems`), a
subset of JSON Schema that covers what function-calling agents send (type,
properties, required, additionalProperties, enum, const, items, anyOf/oneOf).
"""

from __future__ import annotations

import json
from typing import Any

from engine.core.tools import Param, Tool

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_PARAM_TYPES = {"string", "integer", "number", "boolean"}


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


class ToolsError(ValueError):
    """A request's `tools` that are not function definitions."""


def tools_from_request(tools: Any) -> list[Tool]:
    """The request's function tools as engine tools (irreversible: every call asks unless a rule allows it)."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise ToolsError("'tools' must be a list of function definitions")
    out: list[Tool] = []
    for n, spec in enumerate(tools):
        function = spec.get("function") if isinstance(spec, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise ToolsError(f"tools[{n}] is not a function definition with a name")
        schema = function.get("parameters")
        if schema is None:
            schema = {"type": "object", "properties": {}}
        if not isinstance(schema, dict):
            raise ToolsError(f"tools[{n}] ({function['name']}): 'parameters' must be a JSON schema object")
        out.append(
            Tool(
                name=function["name"],
                description=str(function.get("description") or ""),
                params=_params(schema),
                kind="irreversible",
                schema=schema,
            )
        )
    return out


def _params(schema: dict[str, Any]) -> tuple[Param, ...]:
    """The schema's top-level properties as `Param`s, for the header and the tool panel."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ()
    required = set(schema.get("required") or [])
    params = []
    for name, prop in props.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        params.append(
            Param(
                name=str(name),
                type=kind if kind in _PARAM_TYPES else "string",
                description=str(prop.get("description") or "") if isinstance(prop, dict) else "",
                required=name in required,
            )
        )
    return tuple(params)
