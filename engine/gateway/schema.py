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
