"""The upstream's key split across thinking never reaches the agent (issue 26, "split streams").

Thinking streams to the agent before the reply is decided, as text does (engine/gateway/early.py).
A key can be spelled across what the agent's client joins of it: two thinking blocks of one reply,
a thinking block and the text after it, or the thinking that went early and the thinking of the
reply asked again after every call was refused, which the gateway's stream continues. In each case
the agent reads the key's start at most, never the rest after it; a thinking block that carries no
part of a key keeps its signature as the upstream sent it. The upstreams are real servers on
127.0.0.1 (tests/support/fake_anthropic.py); the agent is an httpx client streaming through a
real `GatewayServer`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.core.answers import Answer
from engine.model.config import Secret
from engine.model.keymask import KeyMask
from engine.wires import anthropic
from tests.support import gateway_harness as harness
from tests.support.fake_anthropic import FakeAnthropic, Turn
from tests.support.gateway_harness import Operator
from tests.support.scripted import GATE, Scripted

KEY = "sk-upstream-7f3a9c1e5b2d4a6c8e0f"
START, REST = KEY[:14], KEY[14:]
BASH = {"command": "rm -rf build"}
TOOLS = [{"name": "Bash", "description": "Run a shell command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
PADDING = " " + "y" * 2000
"""Thinking after the key's start, long enough that the start goes early while the padding waits."""


def _post(server: Any, stream: bool) -> httpx.Response:
    body = {
        "model": "claude-fake", "max_tokens": 64000, "stream": stream, "tools": TOOLS,
        "messages": [{"role": "user", "content": "clean the build"}], "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    return httpx.post(f"http://127.0.0.1:{server.port}/v1/messages", json=body, timeout=30)


def _message(response: httpx.Response) -> dict[str, Any]:
    """The Messages reply the agent's client reads: whole, or folded from one stream's events (one
    message start, one end)."""
    if not response.headers["content-type"].startswith("text/event-stream"):
        return response.json()
    kinds = [json.loads(line[5:])["type"] for line in response.text.splitlines() if line.startswith("data:")]
    assert kinds.count("message_start") == 1 and kinds[-1] == "message_stop" and kinds.count("message_stop") == 1, kinds
    reader = anthropic.StreamReader(lambda _: None)
    for line in response.text.splitlines():
        reader.feed(line)
    assert reader.complete and reader.reply.message is not None
    return reader.reply.message


def _thinking(message: dict[str, Any]) -> str:
    return "".join(b["thinking"] for b in message["content"] if b["type"] == "thinking")


def _said(message: dict[str, Any]) -> str:
    """The thinking and text of the message's blocks in order, as Claude Code shows them."""
    return "".join(b.get("thinking") or b.get("text") or "" for b in message["content"] if b["type"] in ("thinking", "text"))


def _signatures(message: dict[str, Any]) -> dict[str, str]:
    return {b["thinking"]: b["signature"] for b in message["content"] if b["type"] == "thinking"}


@pytest.mark.parametrize("begun", [3, 14])
@pytest.mark.parametrize("into", ["thinking", "text"])
def test_a_key_split_across_thinking_that_went_early_and_the_reply_asked_again_never_reaches_the_agent(tmp_path: Path, into: str, begun: int) -> None:
    """The first reply's thinking ends with the key's first `begun` characters; every call
    refused, the reply asked again begins its thinking (or, without thinking, its text) with the
    key's rest. Three characters go early (fewer than `MIN_SECRET` hold nothing back) and the rest
    is masked as it follows them; fourteen hold the first reply back whole, so the agent reads only
    the reply asked again. Either way the agent, which joins the blocks it reads, never reads the key."""
    start, rest = KEY[:begun], KEY[begun:]
    again = Turn(thinking=rest + " is the rest.", text="Left it.") if into == "thinking" else Turn(text=rest + " is the rest.")
    turns = [Turn(thinking=["Here: " + start], text="Removing it.", tool_uses=[("Bash", BASH)]), again]
    with FakeAnthropic(turns) as fake, harness.gateway(fake, tmp_path, "anthropic", rules=[], key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep the build")))
        response = _post(server, stream=True)
        operator.join()
        asked = len(fake.requests)
    message = _message(response)
    said = _said(message)
    assert asked == 2 and KEY not in said and KEY not in _thinking(message) and KEY not in response.text, said
    ending = " is the rest." if into == "text" else " is the rest.Left it."
    if begun < 4:  # the start went early; what continues it is masked, and keeps the signature it came with
        assert said == "Here: " + start + "Removing it.***" + ending, said
        assert _signatures(message)["Here: " + start] == "sig-0001"
        if into == "thinking":
            assert _signatures(message)["*** is the rest."] == "sig-0002"
    else:  # nothing of the first reply went
        assert said == rest + ending, said


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_key_split_across_two_thinking_blocks_of_one_reply_never_reaches_the_agent(tmp_path: Path, stream: bool) -> None:
    turns = [Turn(thinking=["Noted: " + START, REST + " is the key.", "Then: remove it."], text="Removing it.", tool_uses=[("Bash", BASH)])]
    with FakeAnthropic(turns) as fake, harness.gateway(fake, tmp_path, "anthropic", rules=[], key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        response = _post(server, stream)
        operator.join()
    message = _message(response)
    assert KEY not in _thinking(message) and KEY not in _said(message), _thinking(message)
    assert [b["type"] for b in message["content"]][-1] == "tool_use"
    # the blocks the key's pieces were in are masked and keep the signatures they came with (which
    # no longer cover them: nothing can sign them again); the block that carries none is as it came
    assert _signatures(message) == {"Noted: ***": "sig-0001", " is the key.": "sig-0001-2", "Then: remove it.": "sig-0001-3"}


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_key_split_between_a_thinking_block_and_the_text_after_it_never_reaches_the_agent(tmp_path: Path, stream: bool) -> None:
    turns = [Turn(thinking=["First: look.", "Noted: " + START], text=REST + " is the key.", tool_uses=[("Bash", BASH)])]
    with FakeAnthropic(turns) as fake, harness.gateway(fake, tmp_path, "anthropic", rules=[], key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        response = _post(server, stream)
        operator.join()
    message = _message(response)
    assert KEY not in _said(message) and _said(message) == "First: look.Noted: *** is the key.", _said(message)
    assert _signatures(message) == {"First: look.": "sig-0001", "Noted: ***": "sig-0001-2"}


SCHEMA = harness.TOOLS[1]["function"]["parameters"]
DELETE = {"path": "notes.txt"}


def _responses_script(number: int, summary: list[str], text: str, call: bool) -> list[bytes]:
    """A Responses stream: a reasoning item whose summary comes in the deltas `summary`, a message
    with `text` (when any), a `delete_file` call (when `call`)."""
    sequence = iter(range(1000))

    def event(data: dict[str, Any]) -> bytes:
        data = {**data, "sequence_number": next(sequence)}
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    response = {"id": f"resp_{number}", "object": "response", "status": "in_progress", "model": "m", "output": []}
    out = [event({"type": "response.created", "response": response})]
    reasoning = {"id": f"rs_{number}", "type": "reasoning", "summary": [{"type": "summary_text", "text": "".join(summary)}], "encrypted_content": f"enc-{number}"}
    where = {"item_id": reasoning["id"], "output_index": 0, "summary_index": 0}
    out.append(event({"type": "response.output_item.added", "output_index": 0, "item": {**reasoning, "summary": [], "encrypted_content": None}}))
    out.append(event({"type": "response.reasoning_summary_part.added", **where, "part": {"type": "summary_text", "text": ""}}))
    out += [event({"type": "response.reasoning_summary_text.delta", **where, "delta": piece}) for piece in summary]
    out.append(event({"type": "response.reasoning_summary_text.done", **where, "text": "".join(summary)}))
    out.append(event({"type": "response.reasoning_summary_part.done", **where, "part": reasoning["summary"][0]}))
    out.append(event({"type": "response.output_item.done", "output_index": 0, "item": reasoning}))
    output: list[dict[str, Any]] = [reasoning]
    if text:
        message = {"id": f"msg_{number}", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
        at = {"item_id": message["id"], "output_index": len(output), "content_index": 0}
        out.append(event({"type": "response.output_item.added", "output_index": len(output), "item": {**message, "status": "in_progress", "content": []}}))
        out.append(event({"type": "response.content_part.added", **at, "part": {"type": "output_text", "text": "", "annotations": []}}))
        out.append(event({"type": "response.output_text.delta", **at, "delta": text}))
        out.append(event({"type": "response.output_text.done", **at, "text": text}))
        out.append(event({"type": "response.output_item.done", "output_index": len(output), "item": message}))
        output.append(message)
    if call:
        item = {"id": f"fc_{number}", "type": "function_call", "status": "completed", "call_id": f"call_{number}", "name": "delete_file", "arguments": json.dumps(DELETE)}
        out.append(event({"type": "response.output_item.added", "output_index": len(output), "item": {**item, "arguments": ""}}))
        out.append(event({"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": len(output), "delta": item["arguments"]}))
        out.append(event({"type": "response.output_item.done", "output_index": len(output), "item": item}))
        output.append(item)
    usage = {"input_tokens": 3, "output_tokens": 9, "total_tokens": 12}
    return out + [event({"type": "response.completed", "response": {**response, "status": "completed", "output": output, "usage": usage}})]


def _gemini_script(chunks: list[list[dict[str, Any]]]) -> list[bytes]:
    """A Gemini stream, one chunk of `parts` each; the last one finishes the reply."""
    out = []
    for n, parts in enumerate(chunks):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if n == len(chunks) - 1:
            candidate["finishReason"] = "STOP"
        out.append(f"data: {json.dumps({'candidates': [candidate]})}\r\n\r\n".encode())
    return out


def _chat_script(chunks: list[dict[str, Any]], finish: str) -> list[bytes]:
    """A chat completions stream, one chunk of each delta (the first with the role, the last with
    the finish reason), then `[DONE]`."""
    out = []
    for n, delta in enumerate(chunks):
        choice = {"index": 0, "delta": {**({"role": "assistant"} if n == 0 else {}), **delta}, "finish_reason": finish if n == len(chunks) - 1 else None}
        out.append(f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', 'model': 'm', 'choices': [choice]})}\n\n".encode())
    return out + [b"data: [DONE]\n\n"]


def _reasoning_and_text(wire: str, raw: str) -> tuple[str, str]:
    """What the agent's client joins of a Responses stream's reasoning summaries (deltas, or an
    item's summary when it came whole) and text, of a Gemini stream's thoughts and text, or of
    a chat completions stream's `reasoning_content` and content."""
    events = [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:") and line != "data: [DONE]"]
    if wire == "chat":
        deltas = [c.get("delta") or {} for e in events for c in e.get("choices") or []]
        return "".join(d.get("reasoning_content") or "" for d in deltas), "".join(d.get("content") or "" for d in deltas)
    if wire == "gemini":
        parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
        return "".join(p.get("text", "") for p in parts if p.get("thought")), "".join(p.get("text", "") for p in parts if not p.get("thought"))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds.count("response.created") == 1 and kinds[-1] == "response.completed", kinds
    reasoning: dict[int, str] = {}
    text = ""
    for e in events:
        if e["type"] == "response.reasoning_summary_text.delta":
            reasoning[e["output_index"]] = reasoning.get(e["output_index"], "") + e["delta"]
        elif e["type"] == "response.output_item.done" and e["item"]["type"] == "reasoning" and e["output_index"] not in reasoning:
            reasoning[e["output_index"]] = "".join(s["text"] for s in e["item"]["summary"])
        elif e["type"] == "response.output_text.delta":
            text += e["delta"]
    return "".join(reasoning[n] for n in sorted(reasoning)), text


def _agent_request(wire: str) -> tuple[str, dict[str, Any]]:
    if wire == "chat":
        return "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "Delete the notes."}], "stream": True, "tools": harness.TOOLS}
    if wire == "responses":
        tools = [{"type": "function", "name": "delete_file", "description": "d", "parameters": SCHEMA}]
        return "/v1/responses", {"model": "m", "input": [{"role": "user", "content": "Delete the notes."}], "stream": True, "tools": tools}
    tools = [{"functionDeclarations": [{"name": "delete_file", "description": "d", "parametersJsonSchema": SCHEMA}]}]
    return "/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": [{"role": "user", "parts": [{"text": "Delete the notes."}]}], "tools": tools}


@pytest.mark.parametrize("wire", ["responses", "gemini"])
def test_a_key_split_between_reasoning_and_the_text_after_it_never_reaches_the_agent(tmp_path: Path, wire: str) -> None:
    """A Responses reasoning summary (a Gemini thought) ends with the key's start, the message's
    text (the text after it) begins with its rest, then a call the operator approves."""
    if wire == "responses":
        scripts = [_responses_script(1, ["Noted: " + START], REST + " is the key.", call=True)]
    else:
        scripts = [_gemini_script([[{"text": "Noted: " + START, "thought": True}], [{"text": REST + " is the key."}], [{"functionCall": {"name": "delete_file", "args": DELETE}}]])]
    url, body = _agent_request(wire)
    with Scripted(scripts) as upstream, harness.gateway(upstream, tmp_path, wire, key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        raw = httpx.post(f"http://127.0.0.1:{server.port}{url}", json=body, timeout=30).text
        operator.join()
    reasoning, text = _reasoning_and_text(wire, raw)
    assert KEY not in reasoning + text and reasoning.startswith("Noted: ") and text.endswith(" is the key."), (reasoning, text)
    assert "delete_file" in raw


@pytest.mark.parametrize("begun", [3, 14])
@pytest.mark.parametrize("wire", ["responses", "gemini", "chat"])
def test_a_key_split_across_reasoning_that_went_early_and_the_reply_asked_again_never_reaches_the_agent(tmp_path: Path, wire: str, begun: int) -> None:
    """A Responses reasoning summary (a Gemini thought) ends with the key's first `begun`
    characters, text follows it; every call refused, the reply asked again begins its reasoning
    (thought) with the key's rest. Chat completions' reasoning (`reasoning_content`) is not
    rebuilt: the reply asked again begins its text with the key's rest, which a client showing
    the reasoning, then the text, joins. Three characters go early and what continues them is
    masked; fourteen hold the first reply back whole."""
    start, rest = KEY[:begun], KEY[begun:]
    if wire == "chat":
        call = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "delete_file", "arguments": json.dumps(DELETE)}}]}
        scripts = [_chat_script([{"reasoning_content": "Here: " + start}, {"content": "Removing it."}, call], "tool_calls"),
                   _chat_script([{"content": rest + " is the rest."}], "stop")]
    elif wire == "responses":
        scripts = [_responses_script(1, ["Here: " + start], "Removing it.", call=True), _responses_script(2, [rest + " is the rest."], "Left it.", call=False)]
    else:
        call = {"functionCall": {"name": "delete_file", "args": DELETE}}
        scripts = [_gemini_script([[{"text": "Here: " + start, "thought": True}], [{"text": "Removing it."}], [call]]),
                   _gemini_script([[{"text": rest + " is the rest.", "thought": True}], [{"text": "Left it."}]])]
    url, body = _agent_request(wire)
    with Scripted(scripts) as upstream, harness.gateway(upstream, tmp_path, wire, key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep them")))
        raw = httpx.post(f"http://127.0.0.1:{server.port}{url}", json=body, timeout=30).text
        operator.join()
        asked = len(upstream.requests)
    reasoning, text = _reasoning_and_text(wire, raw)
    assert asked == 2 and KEY not in raw and KEY not in reasoning + text and KEY not in text + reasoning, (reasoning, text)
    if begun < 4 and wire == "chat":
        assert (reasoning, text) == ("Here: " + start, "Removing it.*** is the rest."), (reasoning, text)
    elif begun < 4:
        assert (reasoning, text) == ("Here: " + start + "*** is the rest.", "Removing it.Left it."), (reasoning, text)
    elif wire == "chat":
        assert (reasoning, text) == ("", rest + " is the rest."), (reasoning, text)
    else:
        assert (reasoning, text) == (rest + " is the rest.", "Left it."), (reasoning, text)


def test_the_key_mask_masks_a_key_spelled_across_pieces_and_after_what_was_shown() -> None:
    mask = KeyMask(KEY)
    assert mask.across(["a " + START, REST + " b"]) == ["a ***", " b"]
    assert mask.across(["a " + KEY[:5], KEY[5:20], KEY[20:] + " b"]) == ["a ***", "", " b"]  # over three pieces
    assert mask.across([REST + " b"], before="x " + START) == ["*** b"]  # begun in what the reader has
    assert mask.across(["one", "two"], before=START) == ["one", "two"]
    pieces = ["nothing", "here"]
    assert mask.across(pieces) is pieces and KeyMask(None).across(["a " + START, REST]) == ["a " + START, REST]
    message = {"content": [{"type": "thinking", "thinking": "a " + START, "signature": START}, {"type": "text", "text": REST}]}
    assert mask.joined(message) == {"content": [{"type": "thinking", "thinking": "a ***", "signature": START}, {"type": "text", "text": ""}]}
    assert mask.joined(message["content"][1], before=START) == {"type": "text", "text": "***"}
    assert mask("x " + KEY[:9] + "\n " + KEY[9:]) == "x ***" and mask(KEY[:9] + "\\n" + KEY[9:]) == "***"  # gaps, raw or escaped
    assert KeyMask(KEY, also=["open sesame"])("say open sesame now, open\n  sesame") == "say *** now, ***"  # a secret with a space
    after = {"type": "text", "text": " and after"}
    assert mask.joined(after, before=KEY) is after  # a key wholly in what was shown is no business of what follows


@pytest.mark.parametrize("wire", ["gemini", "chat"])
def test_reasoning_reaches_the_agent_before_any_text(tmp_path: Path, wire: str) -> None:
    """A Gemini thought (chat completions' `reasoning_content`) goes to the agent as it comes: the
    upstream goes on to its text only once the agent has read the thought through the gateway."""
    if wire == "gemini":
        thought, text = _gemini_script([[{"text": "They asked.", "thought": True}], [{"text": "Hello"}]])
        script: list[bytes | None] = [thought, GATE, text]
    else:
        chunks = _chat_script([{"reasoning_content": "They asked."}, {"content": "Hello"}], "stop")
        script = [chunks[0], GATE, *chunks[1:]]
    url, body = _agent_request(wire)
    seen = ""
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, wire) as (gw, server):
        with httpx.stream("POST", f"http://127.0.0.1:{server.port}{url}", json=body, timeout=30) as response:
            for line in response.iter_lines():
                seen += line + "\n"
                if "They asked." in line:
                    upstream.go.set()
        runs = list(gw.runs)
    assert upstream.went_on == [True], seen
    assert _reasoning_and_text(wire, seen) == ("They asked.", "Hello") and runs[0].ended is not None


def test_a_key_begun_in_the_text_that_went_early_is_masked_in_what_follows_whatever_thinking_came_after() -> None:
    """A client showing only the text joins the text that went early and the reply asked again;
    thinking that went after that text stands between them only for a client showing both. And
    a client showing all the thinking, then all the text, joins the thinking with the text after."""
    from engine.gateway.early import EarlyStream

    mask, pushed = KeyMask(KEY), []
    early = EarlyStream(pushed.append)
    early.begin(mask)
    for text, thought in (("a " + KEY[:3], ""), ("", "t" * 10), ("", "u" * 10)):
        early.text(text)
        early.thinking(thought)
        early.line(b"data: {}\n", False)
        early.line(b"\n", False)
    assert len(pushed) == 3  # each event as it came: three characters of a key hold nothing back
    assert early.following(KEY[3:] + " b") == "*** b"
    early = EarlyStream(pushed.append)
    early.begin(mask)
    for text, thought in (("", "a " + KEY[:3]), ("x", "")):
        early.text(text)
        early.thinking(thought)
        early.line(b"data: {}\n", False)
        early.line(b"\n", False)
    assert early.following(KEY[3:] + " b") == "*** b"  # the thinking's end, then the text


def test_an_early_event_goes_when_it_is_whole_and_no_join_ends_with_a_keys_start() -> None:
    """Nothing goes until an event is whole (its blank line); then all of it that was read, unless
    a join of what was read ends with a key's start (`key_begun`), which holds it until one moves
    on; a whole key ends the early stream (the rest waits for the decision)."""
    from engine.gateway.early import EarlyStream

    pushed: list[bytes] = []
    early = EarlyStream(pushed.append)
    early.begin(KeyMask(KEY))
    early.text("Hello")
    early.line(b"data: 1\n", False)
    assert pushed == []
    early.line(b"\n", False)
    assert pushed == [b"data: 1\n\n"]
    early.text(" " + KEY[:6])
    early.line(b"data: 2\n", False, key_begun=True)
    early.line(b"\n", False, key_begun=True)
    assert len(pushed) == 1  # the key's start holds it
    early.text(" moved on")
    early.line(b"data: 3\n", False)
    early.line(b"\n", False)
    assert pushed[1:] == [b"data: 2\n\ndata: 3\n\n"] and early.chars == len("Hello " + KEY[:6] + " moved on")
    early.text(KEY)
    early.line(b"data: 4\n", False, key=True)
    early.text("after")
    early.line(b"\n", False)
    early.line(b"data: 5\n", False)
    early.line(b"\n", False)
    assert len(pushed) == 2  # a key ended it


def test_the_key_mask_masks_a_key_split_by_any_whitespace() -> None:
    """Every character the mask's gap takes (Unicode whitespace, as `str.split` splits at) leaves
    the key masked, as its cheap first test squeezes them out too."""
    mask = KeyMask(KEY)
    for gap in ("\u3000", "\x1c", "\x85", "\u2028", "\xa0", "\t\v\f"):
        assert mask("x " + START + gap + REST + " y") == "x *** y", repr(gap)
        assert mask.across(["x " + START + gap, REST + " y"]) == ["x ***", " y"], repr(gap)
