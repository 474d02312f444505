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

Regular expressions (`pattern`, `patternProperties`, a `pattern` under
`propertyNames`) are matched by the `regex` module with a time limit shared by
one check (`PATTERN_SECONDS`): a pattern that backtracks without end, such as
`^(a|a)+$` on forty `a`s and a `!`, makes its argument invalid ("took too long
to check") instead of hanging the run or the gateway. (`format` is not asserted,
so `format: regex` compiles nothing.) Validators are cached by the schema's
content, so the gateway, which reads each request's schemas anew, builds each
one once. Arguments that fit a flat schema (typed properties, required names, a boolean
`additionalProperties`: most tools') are passed by jsonschema's own type checks without its
walk; the rest, and every problem, go through jsonschema. A `$ref` resolves within the schema (and the drafts' own meta-schemas):
one to a URL is never fetched, and the check fails saying it cannot be made.
An MCP tool's output schema checks its structured content the same way
(`value_problems`).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from typing import Any, Iterator

from engine.core.text import one_line

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
PATTERN_SECONDS = 1.0
"""The time every regular expression of one check may take together."""
_VALIDATORS: OrderedDict[str, Any] = OrderedDict()
"""The schema's canonical JSON -> its validator, or None when jsonschema refuses it (least
recently used first)."""
_VALIDATORS_KEPT = 512
_BUILT_FROM: OrderedDict[int, tuple[dict[str, Any], Any]] = OrderedDict()
"""id of a schema dict whose validator was found -> that dict (held, so the id stays its own) and
its validator: the same dict again, a tool's at each call, is not put in JSON again; the first
`_BUILT_KEPT`, the oldest going first."""
_BUILT_KEPT = 1024
_VALIDATORS_LOCK = threading.Lock()
_BOUNDED: dict[type, type] = {}
_CHECK = threading.local()
"""`deadline`: when the regular expressions of the check under way must be done."""


def check_args(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """`args` (form text read as JSON where the schema wants it) checked against `schema`;
    ValueError naming every problem (the first few)."""
    args = from_form(schema, args)
    problems = value_problems(schema, args, "input")
    if problems:
        more = f" (and {len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else ""
        raise ValueError("; ".join(problems[:MAX_PROBLEMS]) + more)
    return args


def value_problems(schema: dict[str, Any], value: Any, which: str) -> list[str]:
    """What is wrong with `value` against `schema` (a tool's `which` schema: "input", "output"),
    by its cached validator; ValueError when the schema cannot be checked (a `$ref` to nowhere)."""
    validator = _validator(schema)
    _CHECK.deadline = time.monotonic() + PATTERN_SECONDS
    try:
        if validator is None:
            return schema_problems(schema, value)
        if _fits_flat(validator, value):
            return []
        errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
        return [p for error in errors for p in _words(error)]
    except Exception as exc:  # a hostile schema (a $ref to nowhere, say) must not break the run
        detail = one_line(f"{type(exc).__name__}: {exc}", 300)
        raise ValueError(f"the tool's {which} schema cannot be checked: {detail}") from None
    finally:
        _CHECK.deadline = None


_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "format", "deprecated", "readOnly", "writeOnly"})
"""Keywords that assert nothing (`format` is not asserted: no format checker is given)."""
_FLAT_KEYS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}
_FLAT_TYPES = frozenset(_TYPES)
_FLAT_FORMS: dict[int, tuple[Any, Any]] = {}
"""id of a validator -> it and its schema's flat form (`_flat_form`), or None when it has none."""


def _flat_form(schema: Any) -> tuple[tuple[str, ...], dict[str, tuple[str, ...] | None], bool] | None:
    """A schema made only of an object's typed properties, its required names and a boolean
    `additionalProperties` (most tools'), as (required, property -> its types or None for any,
    closed); None for any other (a keyword beyond these, a draft-03 schema)."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or not schema.keys() <= _FLAT_KEYS:
        return None
    if "draft-03" in str(schema.get("$schema", "")):
        return None
    required, properties, extra = schema.get("required", []), schema.get("properties", {}), schema.get("additionalProperties", True)
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return None
    if not isinstance(properties, dict) or not isinstance(extra, bool):
        return None
    kinds: dict[str, tuple[str, ...] | None] = {}
    for name, spec in properties.items():
        if not isinstance(spec, dict) or not spec.keys() <= _ANNOTATIONS | {"type"}:
            return None
        kind = spec.get("type")
        listed = (kind,) if isinstance(kind, str) else tuple(kind) if isinstance(kind, list) else None
        if kind is not None and (not listed or not all(isinstance(k, str) and k in _FLAT_TYPES for k in listed)):
            return None
        kinds[name] = listed
    return tuple(required), kinds, not extra


def _fits_flat(validator: Any, value: Any) -> bool:
    """Whether `value` fits the validator's schema by its flat form (jsonschema's own type checks):
    True only where jsonschema finds nothing, so its walk, which costs several times as much, is
    left to the values that do not fit (for its words) and the schemas with other keywords."""
    kept = _FLAT_FORMS.get(id(validator))
    if kept is None or kept[0] is not validator:
        kept = (validator, _flat_form(validator.schema))
        with _VALIDATORS_LOCK:
            if len(_FLAT_FORMS) >= 2 * _VALIDATORS_KEPT:
                _FLAT_FORMS.clear()
            _FLAT_FORMS[id(validator)] = kept
    form = kept[1]
    if form is None or type(value) is not dict:
        return False
    required, kinds, closed = form
    for name in required:
        if name not in value:
            return False
    is_type = validator.is_type
    for name, item in value.items():
        if name not in kinds:
            if closed:
                return False
            continue
        listed = kinds[name]
        if listed is not None and not any(is_type(item, kind) for kind in listed):
            return False
    return True


def schema_refusal(schema: dict[str, Any]) -> str | None:
    """Why jsonschema refuses `schema` (its arguments are then checked by `schema_problems`), or None."""
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        return exc.message
    except Exception as exc:  # a schema that cannot even be read as one
        return f"{type(exc).__name__}: {exc}"
    return None


def _validator(schema: dict[str, Any]) -> Any:
    built = _BUILT_FROM.get(id(schema))
    if built is not None and built[0] is schema:  # a dict whose validator was found before (a tool's, every call)
        return built[1]
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):  # not JSON (a schema built in Python): not cached
        return _build(schema)
    with _VALIDATORS_LOCK:
        found = key in _VALIDATORS
        if found:
            _VALIDATORS.move_to_end(key)
            validator = _VALIDATORS[key]
    if not found:
        validator = _build(schema)
    with _VALIDATORS_LOCK:
        if not found:
            _VALIDATORS[key] = validator
        if validator is not None:
            _BUILT_FROM[id(schema)] = (schema, validator)
            while len(_BUILT_FROM) > _BUILT_KEPT:
                _BUILT_FROM.popitem(last=False)
        while len(_VALIDATORS) > _VALIDATORS_KEPT:
            dropped = _VALIDATORS.popitem(last=False)[1]
            if dropped is not None:
                for at, (_, kept) in list(_BUILT_FROM.items()):
                    if kept is dropped:
                        del _BUILT_FROM[at]
    return validator


def _build(schema: dict[str, Any]) -> Any:
    """The schema's validator, its regular expressions bounded in time, its `$ref`s resolved
    within the schema (and the drafts' own); None when jsonschema refuses it."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    if schema_refusal(schema) is not None:
        return None
    from referencing import Registry

    try:  # an empty registry, as the SDK's own check: a `$ref` to a URL is never fetched
        return _bounded(validator_for(schema, default=Draft202012Validator))(schema, registry=Registry())
    except Exception:
        return None


def _bounded(cls: type) -> type:
    """`cls` with `pattern` and `patternProperties` matched within the check's time limit."""
    bounded = _BOUNDED.get(cls)
    if bounded is None:
        from jsonschema.validators import extend

        bounded = _BOUNDED[cls] = extend(cls, {"pattern": _pattern, "patternProperties": _pattern_properties})
    return bounded


def _search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text`; None when the check's time ran out first."""
    import regex

    deadline = getattr(_CHECK, "deadline", None)
    left = PATTERN_SECONDS if deadline is None else deadline - time.monotonic()
    if left <= 0:
        return None
    try:
        return regex.search(pattern, text, timeout=left, concurrent=True) is not None
    except TimeoutError:
        return None


def _too_long(text: str, pattern: str) -> str:
    return f"{text!r} took too long to check (over {PATTERN_SECONDS:g} s) against the pattern {pattern!r}"


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    found = _search(pattern, instance)
    if found is None:
        yield ValidationError(_too_long(instance, pattern))
    elif not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            found = _search(pattern, name)
            if found is None:
                yield ValidationError(f"its name {_too_long(name, pattern)}", path=[name])
            elif found:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


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
