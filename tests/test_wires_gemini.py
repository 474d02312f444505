"""The Gemini wire (engine/wires/gemini.py): requests to the neutral form and back, whole and
streamed replies read, replies rebuilt, Google's error body."""

from __future__ import annotations

import json

import pytest

from engine.core.events import Usage
from engine.wires import gemini
from engine.wires.neutral import ORIGINAL, WireError

SHELL = {"command": "echo hello > note.txt", "description": "Write hello"}
CALL = {"functionCall": {"id": "run_shell_command_17_0", "name": "run_shell_command", "args": SHELL}, "thoughtSignature": "sig-1"}
CONTENTS = [
    {"role": "user", "parts": [{"text": "<session_context>"}, {"text": "Write hello to note.txt"}]},
    {"role": "model", "parts": [{"text": "thinking...", "thought": True}, {"text": "I'll write the note."}, CALL]},
    {"role": "user", "parts": [{"functionResponse": {"id": "run_shell_command_17_0", "name": "run_shell_command", "response": {"output": "Output: (empty)"}}}]},
]
DECLARATION = {"name": "run_shell_command", "description": "Runs a shell command", "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}}}}


def cli_body():
    return {
        "contents": CONTENTS,
        "systemInstruction": {"parts": [{"text": "You are Gemini CLI"}]},
        "tools": [{"functionDeclarations": [DECLARATION]}],
        "generationConfig": {"temperature": 1, "topP": 0.95, "thinkingConfig": {"includeThoughts": True}},
    }


def test_the_route_names_model_and_method():
    assert gemini.route("/v1beta/models/gemini-3.8-flash:streamGenerateContent") == ("gemini-3.8-flash", "streamGenerateContent")
    assert gemini.route("/v1beta/models/m:generateContent") == ("m", "generateContent")
    assert gemini.route("/v1/chat/completions") is None


def test_a_gemini_cli_request_in_neutral_form():
    neutral = gemini.to_neutral(cli_body(), {}, "/v1beta/models/gemini-3.8-flash:streamGenerateContent")
    shown = [(m["role"], m["content"], m.get("tool_call_id")) for m in neutral["messages"]]
    assert shown == [
        ("system", "You are Gemini CLI", None),
        ("user", "<session_context>Write hello to note.txt", None),
        ("assistant", "I'll write the note.", None),
        ("tool", "Output: (empty)", "call_0"),
    ]
    (call,) = neutral["messages"][2]["tool_calls"]
    assert call["id"] == "call_0" and call["function"]["name"] == "run_shell_command" and json.loads(call["function"]["arguments"]) == SHELL
    assert neutral["tools"][0]["function"]["parameters"] == DECLARATION["parametersJsonSchema"]
    assert (neutral["model"], neutral["stream"], neutral["temperature"], neutral["top_p"]) == ("gemini-3.8-flash", True, 1, 0.95)
    assert "generationConfig.thinkingConfig" in neutral[ORIGINAL]["untranslated"]


def test_a_response_without_the_agents_id_matches_by_name():
    body = cli_body()
    body["contents"] = [CONTENTS[0], {"role": "model", "parts": [{"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b", "args": {}}}]},
                        {"role": "user", "parts": [{"functionResponse": {"name": "b", "response": {"output": "B"}}}, {"functionResponse": {"name": "a", "response": {"output": "A"}}}]}]
    neutral = gemini.to_neutral(body, {})
    assert [(m["tool_call_id"], m["content"]) for m in neutral["messages"] if m["role"] == "tool"] == [("call_1", "B"), ("call_0", "A")]


def test_old_style_parameters_become_json_schema():
    body = cli_body()
    body["tools"] = [{"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}}}]}]
    assert gemini.to_neutral(body, {})["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {"n": {"type": "integer"}}}


def test_a_request_back_upstream_has_its_contents_as_they_came():
    body = cli_body()
    out, notes = gemini.from_neutral(gemini.to_neutral(body, {}, "/v1beta/models/m:streamGenerateContent"))
    assert out == body and notes == []


def test_rejected_calls_go_upstream_as_function_call_and_function_response():
    neutral = gemini.to_neutral(cli_body(), {}, "/v1beta/models/m:streamGenerateContent")
    call = {"id": "call_0", "type": "function", "function": {"name": "run_shell_command", "arguments": '{"command": "rm -rf /"}'}}
    neutral["messages"] += [{"role": "assistant", "content": "Cleaning up.", "tool_calls": [call]}, {"role": "tool", "tool_call_id": "call_0", "content": "REJECTED: not that"}]
    out, _ = gemini.from_neutral(neutral)
    assert out["contents"][-2:] == [
        {"role": "model", "parts": [{"text": "Cleaning up."}, {"functionCall": {"name": "run_shell_command", "args": {"command": "rm -rf /"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"error": "REJECTED: not that"}}}]},
    ]


def test_a_chat_request_translated_to_gemini():
    chat = {"model": "m", "max_tokens": 9, "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]}
    out, _ = gemini.from_neutral(chat)
    assert out["systemInstruction"] == {"parts": [{"text": "sys"}]}
    assert out["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert out["tools"] == [{"functionDeclarations": [{"name": "f", "description": "", "parametersJsonSchema": {"type": "object", "properties": {}}}]}]
    assert out["generationConfig"] == {"maxOutputTokens": 9}


def test_endpoint_and_key_header():
    assert gemini.endpoint("http://127.0.0.1:9", None, {"model": "m", "stream": True}) == "http://127.0.0.1:9/v1beta/models/m:streamGenerateContent?alt=sse"
    assert gemini.endpoint("http://127.0.0.1:9/v1beta/", None, {"model": "m"}) == "http://127.0.0.1:9/v1beta/models/m:generateContent"
    assert gemini.headers("k", {})["x-goog-api-key"] == "k"


@pytest.mark.parametrize(
    ("body", "said"),
    [([], "JSON object"), ({"contents": []}, "'contents'"), ({"contents": [{"role": "robot", "parts": []}]}, "role"),
     ({"contents": [{"role": "user", "parts": [{"functionCall": {"args": {}}}]}]}, "functionCall")],
)
def test_bad_requests_are_named(body, said):
    assert said in gemini.check_request(body)


def test_a_bad_content_or_part_is_named_by_its_place():
    assert gemini.check_request({"contents": []}) == "'contents' must be a non-empty list of contents"
    assert gemini.check_request({"contents": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"text": "x"}, "p"]}]}) == (
        "contents[1].parts[1] must be an object"
    )
    assert gemini.check_request({"contents": [{"parts": [{"functionResponse": {}}]}]}) == "contents[0].parts[0].functionResponse must be an object with a name"
    assert gemini.check_request({"contents": [{"role": "user"}]}) == "contents[0].parts must be a list of parts"
    assert gemini.check_request({"contents": [{"parts": []}], "tools": {}}) == "'tools' must be a list of tools"


def _chunk(parts, finish=None):
    candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5}}


def test_a_streamed_reply_is_read_with_text_as_it_comes():
    deltas: list[str] = []
    reader = gemini.stream_reader(deltas.append)
    for chunk in (_chunk([{"text": "hm", "thought": True}]), _chunk([{"text": "I'll "}]), _chunk([{"text": "run it."}]), _chunk([CALL], "STOP")):
        assert not reader.complete
        reader.feed(f"data: {json.dumps(chunk)}")
    assert reader.complete and deltas == ["I'll ", "run it."]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in reader.reply.tool_calls] == [("call_0", "run_shell_command", SHELL)]
    assert (reader.reply.input_tokens, reader.reply.output_tokens, reader.reply.finish_reason) == (10, 5, "tool_calls")


def test_an_error_body_is_a_wire_error():
    with pytest.raises(WireError, match="quota"):
        gemini.read_whole({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})


def test_an_edited_reply_keeps_thoughts_and_the_calls_signature():
    original = gemini.read_whole(_chunk([{"text": "hm", "thought": True}, {"text": "I'll run it."}, CALL], "STOP"))
    call = {"id": "call_0", "type": "function", "function": {"name": "run_shell_command", "arguments": '{"command": "ls"}'}}
    built = gemini.built_reply("I'll run it.", [call], model="m", stream=True, usage=Usage(input_tokens=1, output_tokens=2), original=original)
    assert built.content_type == "text/event-stream"
    reader = gemini.stream_reader(lambda _: None)
    for line in built.body.decode().splitlines():
        reader.feed(line)
    assert reader.complete
    parts = reader.reply.message["parts"]
    assert parts == [{"text": "hm", "thought": True}, {"text": "I'll run it."}, {"functionCall": {"name": "run_shell_command", "args": {"command": "ls"}}, "thoughtSignature": "sig-1"}]


def test_errors_are_googles_error_body():
    body = json.loads(gemini.error_response(404, "agent-tui gateway: no route").body)
    assert body["error"]["code"] == 404 and body["error"]["status"] == "NOT_FOUND" and body["error"]["message"] == "agent-tui gateway: no route"
    assert gemini.error_detail(b'[{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}]') == "bad"


def test_a_reply_of_another_wire_is_written_anew():
    from engine.wires.neutral import Reply

    other = Reply(content="hi", wire="anthropic", message={"parts": [{"text": "secret plan", "thought": True}]})
    body = json.loads(gemini.built_reply("hi", [], model="m", stream=False, original=other).body)
    assert body["candidates"][0]["content"]["parts"] == [{"text": "hi"}]
