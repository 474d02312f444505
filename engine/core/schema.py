"""Arguments checked against a tool's JSON schema (`Tool.input_schema`).

MCP tools carry their server's `inputSchema`, and the tools an agent declares
to the gateway carry the `parameters` schema of its request; both are checked
here, the same way: text typed in the edit form is read as JSON where the
schema wants another type (`from_form`), then the arguments are validated
with `jsonschema` (the schema's own draft, Draft 2020-12 when it names none).
The commonest problems are said in the words the policy reads elsewhere
(`missing argument 'path'`, `argument 'n' must be integer, not string`,
`unknown argument 'x'`); others in jsonschema's words, with the argument's
path. A schema jsonschema itself refuses (agents send sloppy ones) is checked
with `schema_problems`, a lenient subset (type, properties, required,
additionalProperties, enum, const, items, anyOf / oneOf), so a sloppy schema
never blocks every call of its tool.
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
MAX_PROBLEMS = 5
_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}
"""id(schema) -> (the schema, its validator or None when jsonschema refuses it); the schema is
held so its id is not reused while cached."""
_VALIDATORS_KEPT = 512


def check_args(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """`args` (form text read as JSON where the schema wants it) checked against `schema`;
    ValueError naming every problem (the first few)."""
    args = from_form(schema, args)
    validator = _validator(schema)
    try:
        if validator is None:
            problems = schema_problems(schema, args)
        else:
            errors = sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
            problems = [p for error in errors for p in _words(error)]
    except Exception as exc:  # a hostile schema (a $ref to nowhere, say) must not break the run
        raise ValueError(f"the tool's input schema cannot be checked: {type(exc).__name__}: {exc}") from None
    if problems:
        more = f" (and {len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else ""
        raise ValueError("; ".join(problems[:MAX_PROBLEMS]) + more)
    return args


def _validator(schema: dict[str, Any]) -> Any:
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for

    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        validator = cls(schema)
    except SchemaError:
        validator = None
    except Exception:  # a schema that cannot even be read as one: the lenient check
        validator = None
    if len(_VALIDATORS) >= _VALIDATORS_KEPT:
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def _words(error: Any) -> list[str]:
    """One jsonschema error as what the policy reads."""
    path = [str(p) for p in error.absolute_path]
    where = f"argument '{'/'.join(path)}'" if path else "arguments"
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        missing = [str(name) for name in error.validator_value if name not in instance]
        prefix = "/".join(path) + "/" if path else ""
        return [f"missing argument '{prefix}{name}'" for name in missing] or [error.message]
    if error.validator == "additionalProperties" and error.validator_value is False and isinstance(instance, dict):
        known = error.schema.get("properties") or {}
        extra = [str(name) for name in instance if name not in known]
        prefix = "/".join(path) + "/" if path else ""
        return [f"unknown argument '{prefix}{name}'" for name in extra] or [error.message]
    if error.validator == "type":
        kinds = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return [f"{where} must be {' or '.join(map(str, kinds))}, not {_json_type(instance)}"]
    return [f"{where}: {error.message}" if path else error.message]


def _is(kind: Any, value: Any) -> bool:
    if not isinstance(kind, str):
        return True
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


def schema_problems(schema: Any, value: Any, where: str = "arguments") -> list[str]:
    """What is wrong with `value` against `schema` in the lenient subset (empty when it fits)."""
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
        required = schema.get("required")
        for name in required if isinstance(required, list) else []:
            if isinstance(name, str) and name not in value:
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
