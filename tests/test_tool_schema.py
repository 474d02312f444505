"""One JSON-schema attribute for a tool's arguments (`Tool.input_schema`), checked one way for MCP
tools and the tools an agent declares to the gateway."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from engine import Tool
from engine.core.tools import validate_args
from engine.gateway.schema import tools_from_request

CATASTROPHIC = ["^(a+)+$", "^(a|a)+$"]
"""Patterns whose backtracking on 40 `a`s and a `!` outlives any run (the first is the one
that hung; the second defeats the optimisations of matchers that see through the first)."""
NOT_MATCHING = "a" * 40 + "!"
SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 1}, "count": {"type": "integer"}, "tags": {"type": "array"}},
    "required": ["path"],
    "additionalProperties": False,
}


def test_a_tool_names_its_schema_one_way():
    tool = Tool("t", "d", input_schema=SCHEMA)
    assert tool.json_schema() is SCHEMA and tool == Tool("t", "d", input_schema=dict(SCHEMA))
    assert dataclasses.replace(tool, name="u").input_schema is SCHEMA
    assert [p["name"] for p in tool.info().parameters] == ["path", "count", "tags"]
    assert Tool("t", "d").input_schema is None
    assert not hasattr(tool, "schema")  # the older name is gone
    with pytest.raises(TypeError, match="schema"):
        Tool("t", "d", schema=SCHEMA)  # type: ignore[call-arg]


def test_the_gateway_and_mcp_tools_are_checked_the_same_way():
    declared = tools_from_request([{"type": "function", "function": {"name": "t", "parameters": SCHEMA}}])[0]
    assert declared.input_schema is SCHEMA
    for tool in (declared, Tool("t", "d", input_schema=SCHEMA)):
        with pytest.raises(ValueError) as caught:
            validate_args(tool, {"count": "many", "file": "x"})
        assert str(caught.value) == "missing argument 'path'; unknown argument 'file'; argument 'count' must be integer, not string"
        with pytest.raises(ValueError, match="argument 'path': '' should be non-empty"):
            validate_args(tool, {"path": ""})  # the whole of JSON Schema, not a subset
        # text from the edit form is read as JSON where the schema wants another type
        assert validate_args(tool, {"path": "a", "count": "3", "tags": '["x"]'}) == {"path": "a", "count": 3, "tags": ["x"]}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": {"type": "any"}}, "required": True},
        {"type": "object", "properties": {"x": {"type": [{"not": "a type"}]}}},
        {"type": "object", "properties": {"x": "not a schema"}, "required": ["x", 3]},
    ],
)
def test_a_sloppy_schema_never_blocks_its_tool_nor_crashes(schema):
    assert validate_args(Tool("t", "d", input_schema=schema), {"x": 1}) == {"x": 1}


def test_a_schema_that_cannot_be_checked_is_a_clear_error():
    tool = Tool("t", "d", input_schema={"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}})
    with pytest.raises(ValueError, match="the tool's input schema cannot be checked"):
        validate_args(tool, {"x": 1})


# -- regular expressions bounded in time; validators cached by content -------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("pattern", CATASTROPHIC)
@pytest.mark.parametrize("where", ["pattern", "patternProperties", "propertyNames"])
def test_a_catastrophic_pattern_is_an_invalid_argument_in_bounded_time(pattern, where):
    from engine.core.schema import check_args

    if where == "pattern":
        schema, args, field = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}, {"s": NOT_MATCHING}, "argument 's'"
    elif where == "patternProperties":
        schema, args, field = {"type": "object", "patternProperties": {pattern: {"type": "integer"}}}, {NOT_MATCHING: "x"}, f"argument '{NOT_MATCHING}'"
    else:
        schema, args, field = {"type": "object", "propertyNames": {"pattern": pattern}}, {NOT_MATCHING: 1}, repr(NOT_MATCHING)
    if where == "patternProperties" and pattern == "^(a+)+$":  # the matcher sees it cannot match: nothing to check
        assert check_args(schema, args) == args
        return
    with pytest.raises(ValueError) as caught:
        check_args(schema, args)
    assert str(caught.value).startswith(field)
    assert "does not match" in str(caught.value) or "took too long to check" in str(caught.value)


def test_many_catastrophic_patterns_share_one_time_bound():
    from engine.core.schema import PATTERN_SECONDS, check_args

    props = {f"s{n}": {"type": "string", "pattern": "^(a|a)+$"} for n in range(40)}
    with pytest.raises(ValueError) as caught:
        check_args({"type": "object", "properties": props}, {name: NOT_MATCHING for name in props})
    assert f"took too long to check (over {PATTERN_SECONDS:g} s)" in str(caught.value)
    assert "(and 35 more)" in str(caught.value)


def test_a_pattern_still_matches_and_refuses_as_before():
    from engine.core.schema import check_args

    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^[a-z]+$"}},
              "patternProperties": {"^x_": {"type": "integer"}}}
    assert check_args(schema, {"s": "abc", "x_1": 2}) == {"s": "abc", "x_1": 2}
    with pytest.raises(ValueError, match=r"argument 's': 'ABC' does not match '\^\[a-z\]\+\$'"):
        check_args(schema, {"s": "ABC"})
    with pytest.raises(ValueError, match="argument 'x_1' must be integer, not string"):
        check_args(schema, {"x_1": "two"})


@pytest.mark.timeout(60)
def test_a_catastrophic_pattern_of_a_gateway_tool_is_re_asked_upstream(tmp_path):
    import openai

    from tests.support.fake_openai import FakeOpenAI, call, say
    from tests.support.gateway_harness import gateway

    check = {"type": "function", "function": {"name": "check", "parameters": {
        "type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|a)+$"}}, "required": ["s"]}}}
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (_gw, server):
        fake.add(call("check", s=NOT_MATCHING), say("I will not check it."))
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "check"}], tools=[check])
        assert reply.choices[0].message.content == "I will not check it."
        assert not reply.choices[0].message.tool_calls
        asked_again = json.dumps(fake.requests[1].messages)
        assert "argument 's'" in asked_again


# -- issue 30: validators cached by the schema's content ------------------------------------


def test_equal_schemas_share_one_validator():
    from engine.core.schema import _validator

    def fresh() -> dict[str, Any]:
        return json.loads('{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}')

    first = _validator(fresh())
    assert first is not None and _validator(fresh()) is first
    other = fresh()
    other["required"] = []
    assert _validator(other) is not first


def test_a_remote_ref_is_never_fetched():
    """A schema's `$ref` to a URL (an MCP server's or an agent's schema is untrusted) is not
    followed over the network: the check fails in one line and the URL is never asked."""
    from tests.support.loopback import Loopback

    asked: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        asked.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"type": "string"}'})

    with Loopback(app) as server:
        schema = {"type": "object", "properties": {"path": {"$ref": f"{server.url}/secret.json"}}}
        with pytest.raises(ValueError) as caught:
            validate_args(Tool("t", "d", input_schema=schema), {"path": "x"})
    assert asked == []
    assert "cannot be checked" in str(caught.value) and "\n" not in str(caught.value)


def test_a_tools_own_schema_finds_its_validator_without_being_serialised_again(monkeypatch):
    import engine.core.schema as schema_module

    tool = Tool("t", "d", input_schema={"type": "object", "properties": {"path": {"type": "string", "title": "own"}}})
    assert validate_args(tool, {"path": "a"}) == {"path": "a"}
    dumped: list[object] = []
    real = schema_module.json.dumps
    monkeypatch.setattr(schema_module.json, "dumps", lambda value, **kw: (dumped.append(value), real(value, **kw))[1])
    assert validate_args(tool, {"path": "b"}) == {"path": "b"}
    with pytest.raises(ValueError, match="argument 'path' must be string"):
        validate_args(tool, {"path": 3})
    assert dumped == []
    copy = json.loads(real(tool.input_schema))  # an equal schema in a new dict (the gateway's) still finds it by content
    assert schema_module._validator(copy) is schema_module._validator(tool.input_schema) and dumped == [copy]


def test_an_equal_schema_in_a_new_dict_is_serialised_once_then_found_as_its_own(monkeypatch):
    """A second gateway in the process (or an agent's other tool set) reads the same schema into
    new dicts: the first look-up finds its validator by content, the later ones by the dict."""
    import engine.core.schema as schema_module

    text = '{"type": "object", "properties": {"path": {"type": "string", "title": "twice"}}}'
    schema_module._validator(json.loads(text))
    again = Tool("t", "d", input_schema=json.loads(text))
    dumped: list[object] = []
    real = schema_module.json.dumps
    monkeypatch.setattr(schema_module.json, "dumps", lambda value, **kw: (dumped.append(value), real(value, **kw))[1])
    for path in ("a", "b", "c"):
        assert validate_args(again, {"path": path}) == {"path": path}
    assert dumped == [again.input_schema]


_FLAT = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "where"},
        "count": {"type": "integer"},
        "ratio": {"type": ["number", "null"]},
        "deep": {"type": "boolean", "default": False},
        "items": {"type": "array"},
        "any": {"title": "anything"},
    },
    "required": ["path"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "args",
    [
        {"path": "a"},
        {"path": "a", "count": 3, "ratio": None, "deep": True, "items": [1], "any": {"x": 1}},
        {"path": "a", "count": 3.0},  # an integer written as a float
        {"path": "a", "count": True},  # a boolean is not an integer
        {"path": "a", "ratio": "x"},
        {"count": 1},
        {"path": "a", "extra": 1},
        {"path": 1, "deep": "yes"},
    ],
)
def test_a_flat_schema_answers_as_jsonschema_does(args: dict[str, Any]) -> None:
    """A schema of typed properties, required names and additionalProperties alone (most tools'):
    arguments that fit are passed without jsonschema's walk; the rest in jsonschema's words."""
    import engine.core.schema as schema_module

    validator = schema_module._validator(_FLAT)
    expected = [p for e in sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path]) for p in schema_module._words(e)]
    assert schema_module.value_problems(_FLAT, args, "input") == expected


def test_arguments_that_fit_a_flat_schema_are_not_walked_by_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.core.schema as schema_module

    validator = schema_module._validator(_FLAT)
    walked: list[object] = []
    real = type(validator).iter_errors
    monkeypatch.setattr(type(validator), "iter_errors", lambda self, value, *a: (walked.append(value), real(self, value, *a))[1])
    assert schema_module.value_problems(_FLAT, {"path": "a", "count": 2}, "input") == []
    assert walked == []
    assert schema_module.value_problems(_FLAT, {"path": "a", "count": "2"}, "input") == ["argument 'count' must be integer, not string"]
    assert walked == [{"path": "a", "count": "2"}]
    nested = {"type": "object", "properties": {"path": {"type": "string", "minLength": 2}}}
    assert schema_module.value_problems(nested, {"path": "a"}, "input") != []  # a keyword beyond the flat ones: jsonschema's walk
