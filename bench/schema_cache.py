"""What checking a gateway request's arguments costs, with the validator cache and without it.

    python bench/schema_cache.py [--calls 2000] [--repeat 5]

Each gateway request is read with `json.loads`, so each brings its tools' schemas as new
dicts. `engine.core.schema.check_args` caches validators by the schema's content: this
times, in one run, a check of one call's arguments against a schema fresh from `json.loads`
(what the gateway does per request), the same with the cache emptied before each call (a
validator built every time: what a cache keyed by the dict's identity gave), and the floor:
jsonschema's own `iter_errors` on a validator built once. Best of `--repeat` timings of
`--calls` checks, in microseconds a check.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.core import schema as schema_module  # noqa: E402

SCHEMA = json.dumps({
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "the file to read", "pattern": "^[^\\x00]+$"},
        "offset": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10000},
        "encoding": {"enum": ["utf-8", "latin-1"]},
    },
    "required": ["path"],
    "additionalProperties": False,
})
ARGS = {"path": "notes/todo.txt", "offset": 0, "limit": 200}


def best(fn, calls: int, repeat: int) -> float:
    """Microseconds a call, the best of `repeat` timings of `calls` calls."""
    return min(timeit.repeat(fn, number=calls, repeat=repeat)) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    def cached() -> None:
        schema_module.check_args(json.loads(SCHEMA), ARGS)

    def rebuilt() -> None:
        schema_module._VALIDATORS.clear()
        schema_module.check_args(json.loads(SCHEMA), ARGS)

    from jsonschema import Draft202012Validator

    floor_validator = Draft202012Validator(json.loads(SCHEMA))

    def floor() -> None:
        json.loads(SCHEMA)
        list(floor_validator.iter_errors(ARGS))

    figures = [
        ("jsonschema, validator built once (floor)", best(floor, args.calls, args.repeat)),
        ("check_args, cached by content", best(cached, args.calls, args.repeat)),
        ("check_args, validator built every call", best(rebuilt, max(1, args.calls // 10), args.repeat)),
    ]
    width = max(len(name) for name, _ in figures)
    for name, micros in figures:
        print(f"{name:<{width}}  {micros:9.1f} us")


if __name__ == "__main__":
    main()
