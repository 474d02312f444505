"""How results find their calls when the source's ids are not what they should be."""

from __future__ import annotations

import json

import pytest

from engine.stored.importers import runs_from_bytes


def _call(call_id: str, name: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_calls_that_share_an_id_are_answered_in_order():
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_0", "read"), _call("call_0", "list")]},
        {"role": "tool", "tool_call_id": "call_0", "content": "read's result"},
        {"role": "tool", "tool_call_id": "call_0", "content": "list's result"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_0", "write")]},
        {"role": "tool", "tool_call_id": "call_0", "content": "write's result"},
        {"role": "tool", "tool_call_id": "call_0", "content": "a result no call is waiting for"},
        {"role": "assistant", "content": "done"},
    ]
    (run,) = runs_from_bytes("chat.json", json.dumps(messages).encode())
    observed = [(e.tool, e.text) for e in run.events if e.type == "observation"]
    assert observed == [("read", "read's result"), ("list", "list's result"), ("write", "write's result")]
    assert [e.text for e in run.events if e.type == "note" and e.kind == "unrecognised"] == [
        "a tool result for call 'call_0' that no earlier message made: a result no call is waiting for"]


def test_images_are_named_not_dumped_as_base64_and_nested_content_is_read():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 500}}
    lines = [
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}},
        {"type": "assistant", "sessionId": "s", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Screenshot", "input": {}}]}},
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "captured"}, image,
                                                                     {"type": "tool_reference", "content": [{"type": "text", "text": "inner"}]}]}]}},
        {"type": "assistant", "sessionId": "s", "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "A chart."}]}},
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": []}, "media_type": ["x"]}, {"type": ["odd"]}]}},
    ]
    (run,) = runs_from_bytes("session.jsonl", "".join(json.dumps(line) + "\n" for line in lines).encode())
    assert run.header.task_text == "What is this?\n(image, image/png)"
    observed = next(e for e in run.events if e.type == "observation")
    assert observed.text == "captured\n(image, image/png)\ninner"
    assert "iVBOR" not in "".join(e.model_dump_json() for e in run.events)



_INSPECT_ONE_CALL = [
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "", "tool_calls": {"id": "c1", "function": "bash", "arguments": {"cmd": "rm -rf /"}}},
    {"role": "tool", "tool_call_id": "c1", "function": "bash", "content": "ok"},
    {"role": "assistant", "content": "done"},
]
_SWE_ONE_CALL = {"history": [
    {"role": "system", "content": "s", "agent": "main"},
    {"role": "user", "content": "q", "agent": "main"},
    {"role": "assistant", "content": "t", "thought": "t", "agent": "main",
     "tool_calls": {"id": "c1", "function": {"name": "bash", "arguments": "{\"cmd\": \"rm -rf /\"}"}}},
    {"role": "tool", "content": "ok", "tool_call_ids": ["c1"], "agent": "main"},
], "trajectory": []}


@pytest.mark.parametrize("name, data, fmt", [("insp.json", _INSPECT_ONE_CALL, "inspect"), ("run.traj", _SWE_ONE_CALL, "swe-agent")],
                         ids=["inspect", "swe-agent"])
def test_tool_calls_written_as_one_object_are_a_call_its_result_answers(name: str, data: object, fmt: str):
    """An assistant message whose `tool_calls` is one call, not a list of them (read as the chat
    importer reads it): the call is kept with its name and arguments, and its result answers it."""
    (run,) = runs_from_bytes(name, json.dumps(data).encode())
    assert run.header.options["format"] == fmt
    calls = [(a.tool, a.args, a.call_id) for e in run.events if e.type == "decision" for a in e.actions]
    assert calls == [("bash", {"cmd": "rm -rf /"}, "c1")]
    assert [(e.step, e.index, e.tool, e.text) for e in run.events if e.type == "observation"] == [(1, 0, "bash", "ok")]
    assert run.warnings == [] and not [e for e in run.events if e.type == "note"]


def _gemini_turn(record_id: str, call_id: str, command: str, output: str | None) -> dict:
    call: dict = {"id": call_id, "name": "run_shell_command", "args": {"command": command}, "status": "executing"}
    if output is not None:
        call["status"] = "success"
        call["result"] = [{"functionResponse": {"id": call_id, "name": "run_shell_command", "response": {"output": output}}}]
    return {"id": record_id, "type": "gemini", "content": "", "toolCalls": [call]}


def test_a_gemini_cli_result_held_by_its_call_answers_that_call_when_ids_repeat():
    """Step 1's `c1` never finished; step 2's `c1` holds its result, which the CLI writes again in a
    user record: the result is step 2's, the copy is skipped, and step 1's call stays unanswered."""
    lines = [
        {"sessionId": "s1", "projectHash": "p", "startTime": "2025-01-01T00:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": "go"}]},
        _gemini_turn("g1", "c1", "sleep 100", None),
        _gemini_turn("g2", "c1", "echo hi", "hi"),
        {"id": "r2", "type": "user", "content": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "hi"}}}]},
        {"id": "g3", "type": "gemini", "content": "done"},
    ]
    (run,) = runs_from_bytes("chat.jsonl", "".join(json.dumps(line) + "\n" for line in lines).encode())
    calls = [(e.step, a.call_id, a.args["command"]) for e in run.events if e.type == "decision" for a in e.actions]
    assert calls == [(1, "c1", "sleep 100"), (2, "c1", "echo hi")]
    assert [(e.step, e.index, e.text) for e in run.events if e.type == "observation"] == [(2, 0, "hi")]
    assert not [e for e in run.events if e.type == "note"]
    assert run.warnings == ["chat.jsonl: 1 bookkeeping line without a message was skipped (result repeated from its call ×1)"]


def test_a_gemini_cli_result_in_a_user_record_still_answers_the_open_call_of_its_id():
    """The first `c1` holds its result; the second is open when a user record brings a result of
    `c1`: it is the second's (the first already holds one)."""
    lines = [
        {"sessionId": "s1", "projectHash": "p", "startTime": "2025-01-01T00:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": "go"}]},
        _gemini_turn("g1", "c1", "echo one", "one"),
        _gemini_turn("g2", "c1", "echo two", None),
        {"id": "r2", "type": "user", "content": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "two"}}}]},
        {"id": "g3", "type": "gemini", "content": "done"},
    ]
    (run,) = runs_from_bytes("chat.jsonl", "".join(json.dumps(line) + "\n" for line in lines).encode())
    assert [(e.step, e.index, e.text) for e in run.events if e.type == "observation"] == [(1, 0, "one"), (2, 0, "two")]
    assert not [e for e in run.events if e.type == "note"] and not run.warnings


def _opencode_step(call_id: str, command: str, state: dict) -> dict:
    tool = {"type": "tool", "tool": "bash", "callID": call_id, "state": {"input": {"command": command}, **state}}
    return {"info": {"role": "assistant"}, "parts": [{"type": "step-start"}, tool, {"type": "step-finish"}]}


def test_an_opencode_result_held_by_its_tool_part_answers_that_call_when_ids_repeat():
    """opencode numbers each turn's calls from `call_0`: step 1's call is still running, step 2's
    completed with `hi`, step 3's failed; each result is its own call's."""
    session = {"info": {"id": "ses_1", "title": "t"}, "messages": [
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "do it"}]},
        _opencode_step("call_0", "sleep 100", {"status": "running"}),
        _opencode_step("call_0", "echo hi", {"status": "completed", "output": "hi"}),
        _opencode_step("call_0", "false", {"status": "error", "error": "exit 1"}),
        {"info": {"role": "assistant"}, "parts": [{"type": "step-start"}, {"type": "text", "text": "done"}, {"type": "step-finish"}]},
    ]}
    (run,) = runs_from_bytes("session.json", json.dumps(session).encode())
    calls = [(e.step, a.call_id, a.args["command"]) for e in run.events if e.type == "decision" for a in e.actions]
    assert calls == [(1, "call_0", "sleep 100"), (2, "call_0", "echo hi"), (3, "call_0", "false")]
    assert [(e.step, e.index, e.text, e.error) for e in run.events if e.type == "observation"] == [(2, 0, "hi", False), (3, 0, "exit 1", True)]
    assert not [e for e in run.events if e.type == "note"] and not run.warnings
    assert run.events[-1].answer == "done"
