"""The Anthropic Messages wire module: requests to the neutral form and back, replies read and rebuilt."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from engine.wires import ORIGINAL, WireError, anthropic, chat, wire_for_path, wire_named

BODY: dict[str, Any] = {
    "model": "claude-sonnet", "max_tokens": 64000, "stream": True,
    "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "Bash", "description": "Run", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
    "thinking": {"type": "enabled", "budget_tokens": 1024}, "context_management": {"edits": []},
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "clean up"}]},
        {"role": "system", "content": "a reminder"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "text", "text": "Removing."},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "rm x"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}, {"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}}]},
    ],
}


def test_a_request_comes_back_from_the_neutral_form_as_the_agent_sent_it() -> None:
    neutral = anthropic.to_neutral(BODY, {"anthropic-beta": "b1,b2", "x-api-key": "agent"})
    roles = [m["role"] for m in neutral["messages"]]
    assert roles == ["system", "user", "system", "assistant", "tool", "user"]
    assert neutral["messages"][3]["tool_calls"] == [{"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "rm x"}'}}]
    assert neutral["tools"][0]["function"]["parameters"] == BODY["tools"][0]["input_schema"]
    again, notes = anthropic.from_neutral(neutral)
    assert again == BODY and notes == []
    assert anthropic.headers("K", neutral) == {"Content-Type": "application/json", "anthropic-version": "2023-06-01", "anthropic-beta": "b1,b2", "x-api-key": "K"}


def test_what_another_wire_cannot_carry_is_listed_and_nothing_of_the_original_is_sent() -> None:
    sent, notes = chat.from_neutral(anthropic.to_neutral(BODY, {}))
    assert ORIGINAL not in json.dumps(sent)
    assert "'thinking'" in notes and "'context_management'" in notes and "cache_control" in notes and "thinking blocks" in notes
    assert sent["messages"][0] == {"role": "system", "content": "You are Claude Code."}


def test_a_chat_request_is_built_as_a_messages_request() -> None:
    neutral = {
        "model": "m", "stream": True, "stop": "END", "logprobs": True,
        "messages": [
            {"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "REJECTED: no"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}], "tool_choice": "required",
    }
    body, notes = anthropic.from_neutral(neutral)
    assert body["system"] == "sys" and body["max_tokens"] == anthropic.DEFAULT_MAX_TOKENS and body["stop_sequences"] == ["END"]
    assert body["messages"][1] == {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}}]}
    assert body["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": "c1", "content": "REJECTED: no", "is_error": True}
    assert body["tools"] == [{"name": "f", "description": "", "input_schema": {"type": "object"}}] and body["tool_choice"] == {"type": "any"}
    assert notes == ["'logprobs'"]


MESSAGE = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_sequence": None, "stop_reason": "tool_use",
    "content": [
        {"type": "thinking", "thinking": "let me see", "signature": "sig=="},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Running two."},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "rm -rf /"}},
    ],
    "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 7},
}


def test_a_stream_folds_into_the_whole_message_and_its_reply() -> None:
    texts: list[str] = []
    reader = anthropic.stream_reader(texts.append)
    for name, data in anthropic.events(MESSAGE):
        reader.feed(f"event: {name}")
        reader.feed(f"data: {json.dumps(data)}")
    assert reader.complete and reader.reply.message == MESSAGE
    whole = anthropic.read_whole(MESSAGE)
    for reply in (reader.reply, whole):
        assert reply.content == "Running two." and reply.finish_reason == "tool_calls" and reply.wire == "anthropic"
        assert [(c.id, json.loads(c.arguments)) for c in reply.tool_calls] == [("t1", {"command": "ls"}), ("t2", {"command": "rm -rf /"})]
        assert (reply.input_tokens, reply.output_tokens) == (15, 7)
    assert texts == ["Running two."]


def test_a_cut_stream_is_incomplete_and_an_error_event_raises() -> None:
    reader = anthropic.stream_reader(lambda _: None)
    for _, data in anthropic.events(MESSAGE)[:-1]:
        reader.feed(f"data: {json.dumps(data)}")
    assert not reader.complete
    with pytest.raises(WireError, match="overloaded"):
        reader.feed('data: {"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}}')
    with pytest.raises(WireError):
        anthropic.read_whole({"type": "error", "error": {"message": "no"}})


def test_a_partly_released_reply_keeps_everything_but_the_held_back_call() -> None:
    reply = anthropic.read_whole(MESSAGE)
    kept = [chat.tool_call("t1", "Bash", {"command": "ls -la"})]
    response = anthropic.built_reply("Running two.", kept, model="m", stream=False, original=reply)
    rebuilt = json.loads(response.body)
    assert rebuilt["content"][:3] == MESSAGE["content"][:3] and rebuilt["id"] == "msg_1"
    assert rebuilt["content"][3:] == [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls -la"}}]
    none = json.loads(anthropic.built_reply("Running two.", [], model="m", stream=False, original=reply).body)
    assert none["stop_reason"] == "end_turn" and all(b["type"] != "tool_use" for b in none["content"])


def test_errors_have_the_messages_shape_and_routes_find_their_wire() -> None:
    body = json.loads(anthropic.error_response(429, "slow down").body)
    assert body == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    assert json.loads(anthropic.error_response(409, "x", "superseded").body)["error"]["type"] == "invalid_request_error"
    assert anthropic.error_detail(anthropic.error_response(500, "boom").body) == "boom"
    assert wire_for_path("/v1/messages") is anthropic and wire_for_path("/v1/messages/count_tokens") is anthropic
    assert wire_for_path("/v1/chat/completions") is chat and wire_for_path("/v2") is None
    assert anthropic.endpoint("http://h:1") == "http://h:1/v1/messages" and anthropic.endpoint("http://h:1/v1/") == "http://h:1/v1/messages"
    with pytest.raises(ValueError, match="wires: chat, anthropic"):
        wire_named("grpc")


@pytest.mark.parametrize("bad, why", [
    ({"messages": []}, "non-empty"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "role"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}, "tool_use_id"),
    ({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": 1, "name": "x", "input": {}}]}]}, "tool_use"),
    ({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [{"description": "no name"}]}, "tools\\[0\\]"),
])
def test_a_malformed_request_is_refused_naming_the_field(bad: dict[str, Any], why: str) -> None:
    problem = anthropic.check_request(bad)
    assert problem is not None and re.search(why, problem)


def test_calls_that_shared_an_id_are_rebuilt_each_with_its_own_id_and_input() -> None:
    twice = {**MESSAGE, "content": [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pwd"}},
    ]}
    calls = [chat.tool_call("t1", "Bash", {"command": "ls"}), chat.tool_call("t1_2", "Bash", {"command": "pwd"})]
    rebuilt = json.loads(anthropic.built_reply("", calls, model="m", stream=False, original=anthropic.read_whole(twice)).body)
    assert [(b["id"], b["input"]["command"]) for b in rebuilt["content"]] == [("t1", "ls"), ("t1_2", "pwd")]
