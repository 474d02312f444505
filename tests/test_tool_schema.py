"""One JSON-schema attribute for a tool's arguments (`Tool.input_schema`), checked one way for MCP
tools and the tools an agent declares to the gateway; `schema=` (its older name) still works."""

from __future__ import annotations

import dataclasses

import pytest

from engine import Tool
from engine.core.tools import validate_args
from engine.gateway.schema import tools_from_request

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 1}, "count": {"type": "integer"}, "tags": {"type": "array"}},
    "required": ["path"],
    "additionalProperties": False,
}


def test_the_older_keyword_and_attribute_name_the_same_schema():
    old = Tool("t", "d", schema=SCHEMA)
    new = Tool("t", "d", input_schema=SCHEMA)
    assert old.input_schema is SCHEMA and old.schema is SCHEMA and new.schema is SCHEMA
    assert old == new and old.json_schema() is SCHEMA
    assert dataclasses.replace(old, name="u").input_schema is SCHEMA
    assert [p["name"] for p in old.info().parameters] == ["path", "count", "tags"]
    assert Tool("t", "d").input_schema is None and Tool("t", "d").schema is None


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
