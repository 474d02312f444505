"""The tools an agent declares in its request, as engine tools.

The gateway learns an agent's tools from each request's `tools` (function
definitions with a JSON schema). They become engine `Tool`s of kind
"irreversible", so every call asks unless a rule allows it, and they carry the
schema: an operator's edit is checked against it (`engine.core.schema`).
"""

from __future__ import annotations

from typing import Any

from engine.core.tools import Param, Tool

_PARAM_TYPES = {"string", "integer", "number", "boolean"}


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
        try:
            problem = schema_shape_problem(schema, "parameters")
        except RecursionError:
            problem = "'parameters' is nested too deeply"
        if problem is not None:
            raise ToolsError(f"tools[{n}] ({function['name']}): {problem}")
        out.append(
            Tool(
                name=function["name"],
                description=str(function.get("description") or ""),
                params=_params(schema),
                kind="irreversible",
                input_schema=schema,
            )
        )
    return out


_SUBSCHEMA_LISTS = ("anyOf", "oneOf")
_SUBSCHEMA_MAPS = ("properties",)
_SUBSCHEMAS = ("items", "additionalProperties")


def schema_shape_problem(schema: Any, where: str) -> str | None:
    """Where a JSON schema has a keyword of the wrong shape (`required` a number, a `type`
    that is not a name...), among the keywords the tool panel and the lenient argument check
    read (`engine.core.schema.schema_problems`); None when each has its shape. Other keywords
    stay as sloppy as an agent sends them."""
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, dict):
        return f"{where} must be a JSON schema object"
    kind = schema.get("type")
    if kind is not None and not isinstance(kind, str) and not (isinstance(kind, list) and all(isinstance(k, str) for k in kind)):
        return f"{where}.type must be a type name or a list of type names"
    required = schema.get("required")
    if required is not None and not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        return f"{where}.required must be a list of property names"
    for key in _SUBSCHEMA_MAPS:
        if key in schema:
            if not isinstance(schema[key], dict):
                return f"{where}.{key} must be an object of schemas"
            for name, sub in schema[key].items():
                problem = schema_shape_problem(sub, f"{where}.{key}.{name}")
                if problem is not None:
                    return problem
    for key in _SUBSCHEMA_LISTS:
        if key in schema:
            if not isinstance(schema[key], list):
                return f"{where}.{key} must be a list of schemas"
            for k, sub in enumerate(schema[key]):
                problem = schema_shape_problem(sub, f"{where}.{key}[{k}]")
                if problem is not None:
                    return problem
    for key in _SUBSCHEMAS:
        if key in schema:
            sub = schema[key]
            if key == "items" and isinstance(sub, list):  # the tuple form of older drafts
                problem = next((p for k, i in enumerate(sub) if (p := schema_shape_problem(i, f"{where}.items[{k}]"))), None)
            else:
                problem = schema_shape_problem(sub, f"{where}.{key}")
            if problem is not None:
                return problem
    return None


def _params(schema: dict[str, Any]) -> tuple[Param, ...]:
    """The schema's top-level properties as `Param`s, for the header and the tool panel."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ()
    required = set(schema.get("required") or ())
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
