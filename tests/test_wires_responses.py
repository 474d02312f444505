"""The OpenAI Responses wire (engine/wires/responses.py): requests to the neutral form and back,
whole and streamed replies read, replies rebuilt in the shapes the openai client parses."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.responses import Response as OpenAIResponse

from engine.core.events import Usage
from engine.wires import responses
from engine.wires.neutral import ORIGINAL, WireError
from tests.support.fake_responses import Turn, events, output_items, response_object

REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque-bytes"}
CODEX_INPUT = [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be careful"}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Write hello to note.txt"}]},
    REASONING,
    {"type": "message", "role": "assistant", "id": "msg_1", "content": [{"type": "output_text", "text": "I'll write it.", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "exec_command", "arguments": '{"cmd": "echo hello > note.txt"}'},
    {"type": "function_call_output", "call_id": "call_a", "output": "Process exited with code 0"},
]
TOOLS = [
    {"type": "function", "name": "exec_command", "description": "Runs a command", "strict": False, "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
    {"type": "web_search"},
]


def codex_body(**extra):
    return {"model": "m", "instructions": "You are Codex", "input": CODEX_INPUT, "tools": TOOLS, "stream": True, "store": False, "include": ["reasoning.encrypted_content"], **extra}


def test_a_codex_request_in_neutral_form():
    neutral = responses.to_neutral(codex_body(), {})
    shown = [(m["role"], m["content"], [c["function"]["name"] for c in m.get("tool_calls", [])], m.get("tool_call_id")) for m in neutral["messages"]]
    assert shown == [
        ("system", "You are Codex", [], None),
        ("developer", "be careful", [], None),
        ("user", "Write hello to note.txt", [], None),
        ("assistant", "I'll write it.", ["exec_command"], None),
        ("tool", "Process exited with code 0", [], "call_a"),
    ]
    assert neutral["messages"][3]["tool_calls"][0]["id"] == "call_a"
    assert neutral["tools"] == [{"type": "function", "function": {"name": "exec_command", "description": "Runs a command", "parameters": TOOLS[0]["parameters"]}}]
    assert neutral["stream"] is True
    assert "tools of type web_search" in neutral[ORIGINAL]["untranslated"]


def test_a_request_back_upstream_has_its_items_as_they_came_and_store_false():
    body = codex_body()
    out, notes = responses.from_neutral(responses.to_neutral(body, {}))
    assert out["input"] == CODEX_INPUT
    assert out["tools"] == TOOLS and out["instructions"] == "You are Codex" and out["include"] == body["include"]
    assert out["store"] is False and notes == []


def test_rejected_calls_go_upstream_as_function_call_and_output_items():
    neutral = responses.to_neutral(codex_body(), {})
    call = {"id": "call_b", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd": "rm -rf /"}'}}
    neutral["messages"] += [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "tool_call_id": "call_b", "content": "REJECTED: never"}]
    out, _ = responses.from_neutral(neutral)
    assert out["input"][-2:] == [
        {"type": "function_call", "call_id": "call_b", "name": "exec_command", "arguments": '{"cmd": "rm -rf /"}'},
        {"type": "function_call_output", "call_id": "call_b", "output": "REJECTED: never"},
    ]


def test_a_chat_request_translated_to_responses():
    chat = {
        "model": "m",
        "max_tokens": 50,
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}}],
    }
    out, _ = responses.from_neutral(chat)
    assert out["input"] == [{"type": "message", "role": "system", "content": "sys"}, {"type": "message", "role": "user", "content": "hi"}]
    assert out["tools"] == [{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}]
    assert out["max_output_tokens"] == 50 and out["store"] is False


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ([], "JSON object"),
        ({"input": []}, "'input'"),
        ({"input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
        ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "call_id"),
        ({"input": [{"type": "message", "role": "robot", "content": "x"}]}, "role"),
        ({"input": "hi", "stream": "yes"}, "'stream'"),
    ],
)
def test_bad_requests_are_named(body, said):
    assert said in responses.check_request(body)


def test_a_whole_reply_is_read():
    turn = Turn(text="I'll run it.", calls=[("exec_command", {"cmd": "ls"})])
    reply = responses.read_whole(response_object({"model": "m"}, 1, output_items(turn, 1)))
    assert reply.content == "I'll run it."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [("call_1_0", "exec_command", {"cmd": "ls"})]
    assert (reply.input_tokens, reply.output_tokens, reply.finish_reason) == (120, 24, "tool_calls")


def test_a_streamed_reply_is_read_with_text_as_it_comes():
    turn = Turn(text="Reading the folder now.", calls=[("exec_command", {"cmd": "ls -la"})], chunk_size=5)
    deltas: list[str] = []
    reader = responses.stream_reader(deltas.append)
    for event in events(turn, {"model": "m"}, 3):
        reader.feed(f"data: {json.dumps(event)}")
        assert not reader.complete or event["type"] == "response.completed"
    assert reader.complete
    assert "".join(deltas) == "Reading the folder now." and len(deltas) > 1
    assert [(c.id, c.name, c.arguments) for c in reader.reply.tool_calls] == [("call_3_0", "exec_command", '{"cmd": "ls -la"}')]
    assert reader.reply.message["id"] == "resp_3"


def test_a_stream_error_event_is_a_wire_error():
    reader = responses.stream_reader(lambda _: None)
    with pytest.raises(WireError, match="overloaded"):
        reader.feed('data: {"type": "error", "code": "server_error", "message": "overloaded", "sequence_number": 1}')


def test_an_edited_reply_keeps_the_reasoning_and_parses_in_the_openai_client():
    turn = Turn(text="I'll run it.", calls=[("exec_command", {"cmd": "rm x"})])
    upstream = response_object({"model": "m"}, 1, [REASONING, *output_items(turn, 1)])
    original = responses.read_whole(upstream)
    call = {"id": "call_1_0", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd": "ls"}'}}
    built = responses.built_reply("I'll run it.", [call], model="m", stream=False, usage=Usage(input_tokens=3, output_tokens=4), original=original)
    parsed = OpenAIResponse.model_validate_json(built.body)
    assert parsed.id == "resp_1" and parsed.output[0].type == "reasoning" and parsed.output[0].encrypted_content == "opaque-bytes"
    assert parsed.output_text == "I'll run it."
    assert [(o.call_id, o.arguments) for o in parsed.output if o.type == "function_call"] == [("call_1_0", '{"cmd": "ls"}')]
    assert parsed.usage.total_tokens == 7


def test_a_built_stream_reads_back_and_the_openai_client_accepts_every_event():
    call = {"id": "c1", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd": "ls"}'}}
    built = responses.built_reply("hello", [call], model="m", stream=True)
    assert built.content_type == "text/event-stream"
    reader = responses.stream_reader(lambda _: None)
    adapter = openai.types.responses.ResponseStreamEvent
    from pydantic import TypeAdapter

    check = TypeAdapter(adapter)
    for line in built.body.decode().splitlines():
        reader.feed(line)
        if line.startswith("data:"):
            check.validate_json(line[5:])
    assert reader.complete and reader.reply.content == "hello"
    assert [(c.id, c.arguments) for c in reader.reply.tool_calls] == [("c1", '{"cmd": "ls"}')]


def test_errors_are_openai_error_bodies():
    body = json.loads(responses.error_response(404, "no route").body)
    assert body == {"error": {"message": "no route", "type": "invalid_request_error", "param": None, "code": None}}
    assert responses.error_detail(b'{"error": {"message": "slow down"}}') == "slow down"


def test_a_reply_of_another_wire_is_written_anew():
    from engine.wires.neutral import Reply

    chat_reply = Reply(content="hi", wire="chat", message={"id": "chatcmpl-1", "object": "chat.completion", "output": [REASONING]})
    parsed = OpenAIResponse.model_validate_json(responses.built_reply("hi", [], model="m", stream=False, original=chat_reply).body)
    assert parsed.object == "response" and parsed.id != "chatcmpl-1"
    assert [o.type for o in parsed.output] == ["message"]
