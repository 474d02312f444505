"""A streamed reply's text reaches the agent as the upstream sends it; only a tool call waits.

The fake upstream here streams its first text, then waits for an event that the test sets
only once the agent has read that text through the gateway: the agent gets it before the
upstream has finished. A call after the text is still held for the operator (the text came
while it was held), and released, the agent gets the rest of the same stream; rejected, the
model is asked again and the call never reaches the agent. Chat completions, Gemini and
Anthropic Messages and OpenAI Responses (whose stream is one message or response: the rest takes up
its blocks or output items, never a second start).
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from engine.core.answers import Answer
from engine.gateway import Upstream
from engine.model.config import Secret
from tests.support.gateway_harness import TOOLS, Operator, gateway
from tests.support.loopback import Loopback
from tests.support.waiting import wait_for

USER = [{"role": "user", "content": "Delete the notes."}]
ANTHROPIC_TOOLS = [{"name": "delete_file", "description": "d", "input_schema": TOOLS[1]["function"]["parameters"]}]
RESPONSES_TOOLS = [{"type": "function", "name": "delete_file", "description": "d", "parameters": TOOLS[1]["function"]["parameters"]}]
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "delete_file", "description": "d", "parametersJsonSchema": TOOLS[1]["function"]["parameters"]}]}]


class GatedUpstream(Loopback):
    """Streams "Hello" (`first`), waits for `go`, then " world" (`then`) and (when `call`) a delete_file call; in
    chat completions' or Gemini's events. A request after a refusal gets a plain answer."""

    def __init__(self, wire: str, call: bool, first: str = "Hello", then: str = " world") -> None:
        self.wire, self.call, self.first, self.then = wire, call, first, then
        self.shows_first = first
        self.again = "Kept the notes."
        """The text of the reply to a request after a refusal."""
        """What the agent reads first, before the upstream goes on."""
        self.gates_thinking = False
        """(Anthropic) wait for `go` after the thinking block, before any text."""
        self.cuts = False
        """End the stream at `go`, the reply not complete."""
        self.go = threading.Event()
        self.requests: list[dict[str, Any]] = []
        super().__init__(Starlette(routes=[Route("/{path:path}", self._reply, methods=["POST"])]))

    async def _reply(self, request: Request) -> StreamingResponse:
        body = await request.json()
        self.requests.append(body)
        again = len(self.requests) > 1
        return StreamingResponse(self._events(again), media_type="text/event-stream")

    async def _events(self, again: bool) -> AsyncIterator[bytes]:
        if self.wire in ("anthropic", "responses"):
            async for event in self._anthropic(again) if self.wire == "anthropic" else self._responses(again):
                yield event
            return
        if again:
            yield self._text(self.again, finish=True, role=True)
            if self.wire == "chat":
                yield b"data: [DONE]\n\n"
            return
        yield self._text(self.first, role=True)
        await self._gate(True)
        if self.cuts:
            return
        yield self._text(self.then, finish=not self.call)
        if self.call:
            yield self._call()
        if self.wire == "chat":
            yield b"data: [DONE]\n\n"

    async def _anthropic(self, again: bool) -> AsyncIterator[bytes]:
        """One Messages stream: thinking (signed), text in two deltas, then (when `call`) a tool use."""
        def event(data: dict[str, Any]) -> bytes:
            return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

        start = {"id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {"input_tokens": 3, "output_tokens": 0}}
        yield event({"type": "message_start", "message": start})
        at = 0
        if not again:
            yield event({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            yield event({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "They asked."}})
            yield event({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig-1"}})
            yield event({"type": "content_block_stop", "index": 0})
            at = 1
            await self._gate(self.gates_thinking)
        yield event({"type": "content_block_start", "index": at, "content_block": {"type": "text", "text": ""}})
        yield event({"type": "content_block_delta", "index": at, "delta": {"type": "text_delta", "text": self.again if again else self.first}})
        if not again:
            await self._gate(True)
            if self.cuts:
                return
            yield event({"type": "content_block_delta", "index": at, "delta": {"type": "text_delta", "text": self.then}})
        yield event({"type": "content_block_stop", "index": at})
        calls = self.call and not again
        if calls:
            use = {"type": "tool_use", "id": "toolu_1", "name": "delete_file", "input": {}}
            yield event({"type": "content_block_start", "index": at + 1, "content_block": use})
            yield event({"type": "content_block_delta", "index": at + 1, "delta": {"type": "input_json_delta", "partial_json": '{"path": "notes.txt"}'}})
            yield event({"type": "content_block_stop", "index": at + 1})
        yield event({"type": "message_delta", "delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 9}})
        yield event({"type": "message_stop"})

    async def _gate(self, waits: bool) -> None:
        for _ in range(3000 if waits else 0):  # bounded: at most 30 s
            if self.go.is_set():
                return
            await asyncio.sleep(0.01)

    async def _responses(self, again: bool) -> AsyncIterator[bytes]:
        """One Responses stream: a reasoning item, a message whose text comes in two deltas, then (when `call`) a call."""
        number = iter(range(100))

        def event(data: dict[str, Any]) -> bytes:
            data = {**data, "sequence_number": next(number)}
            return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

        response: dict[str, Any] = {"id": f"resp_{len(self.requests)}", "object": "response", "status": "in_progress", "model": "m", "output": []}
        yield event({"type": "response.created", "response": response})
        output: list[dict[str, Any]] = []
        if not again:
            reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc-1"}
            yield event({"type": "response.output_item.added", "output_index": 0, "item": {**reasoning, "encrypted_content": None}})
            yield event({"type": "response.output_item.done", "output_index": 0, "item": reasoning})
            output.append(reasoning)
        at = len(output)
        text = self.again if again else self.first + self.then
        where = {"item_id": f"msg_{at}", "output_index": at, "content_index": 0}
        yield event({"type": "response.output_item.added", "output_index": at, "item": {"id": f"msg_{at}", "type": "message", "role": "assistant", "status": "in_progress", "content": []}})
        yield event({"type": "response.content_part.added", **where, "part": {"type": "output_text", "text": "", "annotations": []}})
        yield event({"type": "response.output_text.delta", **where, "delta": self.again if again else self.first})
        if not again:
            await self._gate(True)
            if self.cuts:
                return
            yield event({"type": "response.output_text.delta", **where, "delta": self.then})
        message = {"id": f"msg_{at}", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
        yield event({"type": "response.output_text.done", **where, "text": text})
        yield event({"type": "response.output_item.done", "output_index": at, "item": message})
        output.append(message)
        if self.call and not again:
            call = {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "delete_file", "arguments": '{"path": "notes.txt"}'}
            yield event({"type": "response.output_item.added", "output_index": at + 1, "item": {**call, "arguments": ""}})
            yield event({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": at + 1, "delta": call["arguments"]})
            yield event({"type": "response.output_item.done", "output_index": at + 1, "item": call})
            output.append(call)
        yield event({"type": "response.completed", "response": {**response, "status": "completed", "output": output, "usage": {"input_tokens": 3, "output_tokens": 9, "total_tokens": 12}}})

    def _text(self, text: str, finish: bool = False, role: bool = False) -> bytes:
        """A text event (opening a reply: with chat completions' role, which a client joins by appending)."""
        if self.wire == "chat":
            delta = {"role": "assistant", "content": text} if role else {"content": text}
            chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": "stop" if finish else None}]}
        else:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
            if finish:
                candidate["finishReason"] = "STOP"
            chunk = {"candidates": [candidate]}
        return f"data: {json.dumps(chunk)}\n\n".encode()

    def _call(self) -> bytes:
        if self.wire == "chat":
            delta = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "delete_file", "arguments": '{"path": "notes.txt"}'}}]}
            chunk: dict[str, Any] = {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls"}]}
        else:
            part = {"functionCall": {"name": "delete_file", "args": {"path": "notes.txt"}}}
            chunk = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}]}
        return f"data: {json.dumps(chunk)}\n\n".encode()


def _request(wire: str, root: str) -> tuple[str, dict[str, Any]]:
    if wire == "chat":
        return f"{root}/v1/chat/completions", {"model": "m", "messages": USER, "tools": TOOLS, "stream": True}
    if wire == "responses":
        return f"{root}/v1/responses", {"model": "m", "input": USER, "tools": RESPONSES_TOOLS, "stream": True}
    if wire == "anthropic":
        return f"{root}/v1/messages", {"model": "m", "max_tokens": 100, "messages": USER, "tools": ANTHROPIC_TOOLS, "stream": True}
    body = {"contents": [{"role": "user", "parts": [{"text": "Delete the notes."}]}], "tools": GEMINI_TOOLS}
    return f"{root}/v1beta/models/m:streamGenerateContent?alt=sse", body


def _text_and_calls(wire: str, raw: str) -> tuple[str, list[dict[str, Any]]]:
    """The text and calls of a stream, as a client joins them; a chat completions stream has its role once."""
    if wire == "chat":
        assert raw.count('"role"') == 1, raw
    if wire == "anthropic":
        return _message_text_and_calls(raw)
    if wire == "responses":
        return _response_text_and_calls(raw)
    text, calls = "", []
    for line in raw.splitlines():
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[5:])
        if wire == "chat":
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                text += delta.get("content") or ""
                calls += delta.get("tool_calls") or []
        else:
            for part in chunk["candidates"][0]["content"]["parts"]:
                text += part.get("text", "")
                calls += [part["functionCall"]] if "functionCall" in part else []
    return text, calls


def _message_text_and_calls(raw: str) -> tuple[str, list[dict[str, Any]]]:
    """The text and tool uses of a Messages stream, checked to be one message as a client reads it:
    one start, each block started at the next index, its deltas and stop after its start, one end;
    the thinking block's signature kept."""
    events = [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds.count("message_start") == 1, kinds
    assert kinds[-2:] == ["message_delta", "message_stop"] and kinds.count("message_stop") == 1, kinds
    blocks: list[dict[str, Any]] = []
    stopped: set[int] = set()
    for e in events:
        if e["type"] == "content_block_start":
            assert e["index"] == len(blocks), kinds
            blocks.append(dict(e["content_block"]))
        elif e["type"] in ("content_block_delta", "content_block_stop"):
            assert e["index"] < len(blocks) and e["index"] not in stopped, kinds
            if e["type"] == "content_block_stop":
                stopped.add(e["index"])
                continue
            delta, block = e["delta"], blocks[e["index"]]
            for kind, key in (("text_delta", "text"), ("thinking_delta", "thinking"), ("signature_delta", "signature"), ("input_json_delta", "partial_json")):
                if delta["type"] == kind:
                    block[key] = block.get(key, "") + delta[key]
    assert stopped == set(range(len(blocks))), kinds
    assert all(b.get("signature") == "sig-1" for b in blocks if b["type"] == "thinking"), blocks
    text = "".join(b.get("text", "") for b in blocks if b["type"] == "text")
    calls = [{"name": b["name"], "args": json.loads(b.get("partial_json") or "{}")} for b in blocks if b["type"] == "tool_use"]
    return text, calls


def _response_text_and_calls(raw: str) -> tuple[str, list[dict[str, Any]]]:
    """The text and calls of a Responses stream, checked to be one response as a client reads it:
    one start, sequence numbers in order, each item added at the next output index and done once,
    one `response.completed` at the end whose output says the same; the reasoning item kept."""
    events = [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds.count("response.created") == 1, kinds
    assert kinds[-1] == "response.completed" and kinds.count("response.completed") == 1, kinds
    assert [e["sequence_number"] for e in events] == list(range(len(events))), kinds
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    finished = [e for e in events if e["type"] == "response.output_item.done"]
    assert added == list(range(len(added))) and sorted(e["output_index"] for e in finished) == added, kinds
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    calls = [{"name": e["item"]["name"], "args": json.loads(e["item"]["arguments"])} for e in finished if e["item"]["type"] == "function_call"]
    output = events[-1]["response"]["output"]
    assert [i["id"] for i in output] == [e["item"]["id"] for e in sorted(finished, key=lambda e: e["output_index"])], output
    assert "".join(c["text"] for i in output if i["type"] == "message" for c in i["content"]) == text, output
    assert [i for i in output if i["type"] == "reasoning"][0]["encrypted_content"] == "enc-1", output
    return text, calls


def _stream_through(upstream: GatedUpstream, root: str, wire: str, answer: Any = None, gw: Any = None) -> tuple[str, str]:
    """The agent's request; returns the first event it read (before the upstream went on) and all it read."""
    url, body = _request(wire, root)
    with httpx.stream("POST", url, json=body, timeout=30) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        before: list[str] = []
        for first in lines:
            if first.startswith("data:") and upstream.shows_first in first:
                break
            before.append(first)
        assert not upstream.go.is_set()
        upstream.go.set()
        if answer is not None:
            wait_for(lambda: gw.engine is not None and gw.engine.status == "awaiting_approval", "the call held")
            answer(gw)
        rest = "\n".join(lines)
    return first, "\n".join([*before, first, rest])


KEY = "sk-upstream-7f3a9c1e5b2d4a6c8e0f"
"""An upstream key, as every real upstream has: text goes early with it as without it."""


@pytest.mark.parametrize("key", [None, KEY], ids=["no key", "a key"])
@pytest.mark.parametrize("wire", ["chat", "gemini", "anthropic", "responses"])
def test_text_only_reply_reaches_the_agent_before_the_upstream_finishes(tmp_path: Path, wire: str, key: str | None) -> None:
    secret = Secret(key) if key else None
    with GatedUpstream(wire, call=False) as upstream, gateway(upstream, tmp_path, wire, key=secret) as (gw, server):
        first, whole = _stream_through(upstream, f"http://127.0.0.1:{server.port}", wire)
        runs = list(gw.runs)
    assert "Hello" in first
    assert _text_and_calls(wire, whole) == ("Hello world", [])
    assert runs[0].ended is not None and runs[0].ended.answer == "Hello world"


@pytest.mark.parametrize("key", [None, KEY], ids=["no key", "a key"])
@pytest.mark.parametrize("wire", ["chat", "gemini", "anthropic", "responses"])
def test_text_before_a_held_call_arrives_and_the_call_waits_for_approval(tmp_path: Path, wire: str, key: str | None) -> None:
    secret = Secret(key) if key else None
    with GatedUpstream(wire, call=True) as upstream, gateway(upstream, tmp_path, wire, key=secret) as (gw, server):
        first, whole = _stream_through(upstream, f"http://127.0.0.1:{server.port}", wire, lambda g: g.answer(Answer.approve()), gw)
        released = dict(gw.runs[0].engine.released)
    assert "Hello" in first and "delete_file" not in first
    text, calls = _text_and_calls(wire, whole)
    assert text == "Hello world" and len(calls) == 1 and released == {0: {"path": "notes.txt"}}


@pytest.mark.parametrize("wire", ["chat", "gemini", "anthropic", "responses"])
def test_an_edited_call_after_early_text_is_sent_once_without_the_text_again(tmp_path: Path, wire: str) -> None:
    with GatedUpstream(wire, call=True) as upstream, gateway(upstream, tmp_path, wire) as (gw, server):
        edit = lambda g: g.answer(Answer.edit({"path": "other.txt"}))  # noqa: E731
        _, whole = _stream_through(upstream, f"http://127.0.0.1:{server.port}", wire, edit, gw)
    text, calls = _text_and_calls(wire, whole)
    arguments = calls[0]["function"]["arguments"] if wire == "chat" else json.dumps(calls[0]["args"])
    assert text == "Hello world" and len(calls) == 1 and json.loads(arguments) == {"path": "other.txt"}


@pytest.mark.parametrize("wire", ["chat", "anthropic", "responses"])
def test_a_rejected_call_after_early_text_never_reaches_the_agent(tmp_path: Path, wire: str) -> None:
    """The model asked again answers; its reply continues the stream the agent has (in a Messages or
    Responses stream: its blocks or items after those sent, in the same message or response)."""
    with GatedUpstream(wire, call=True) as upstream, gateway(upstream, tmp_path, wire) as (gw, server):
        _, whole = _stream_through(upstream, f"http://127.0.0.1:{server.port}", wire, lambda g: g.answer(Answer.reject("keep them")), gw)
    text, calls = _text_and_calls(wire, whole)
    assert calls == [] and text == "Hello worldKept the notes."
    assert "keep them" in json.dumps(upstream.requests[1])


@pytest.mark.parametrize("wire", ["chat", "gemini", "anthropic", "responses"])
def test_a_stream_cut_after_early_text_ends_with_the_wires_error_event(tmp_path: Path, wire: str) -> None:
    """The status went as 200 with the text: the failure comes as this API's error event, which
    its clients raise (the Anthropic SDK skips a data line without an event name; chat completions
    and Gemini name no events), never the upstream asked again behind the agent's back; the run
    records the failure and the agent's retry is answered by a new reply."""
    upstream = GatedUpstream(wire, call=True)
    upstream.cuts = True
    with upstream, gateway(upstream, tmp_path, wire) as (gw, server):
        _, whole = _stream_through(upstream, f"http://127.0.0.1:{server.port}", wire)
        asked, status = len(upstream.requests), gw.runs[0].engine.status
    lines = [line for line in whole.splitlines() if line]
    if wire in ("anthropic", "responses"):
        assert lines[-2] == "event: error", lines[-3:]
    assert "the stream ended before the reply was complete" in lines[-1] and json.loads(lines[-1][5:])["error"], lines[-3:]
    assert _text_before_the_error(wire, whole) == "Hello", whole
    assert asked == 1 and status == "policy_failed"


def _text_before_the_error(wire: str, raw: str) -> str:
    """The text of a stream that ends with an error event (checked there only: it is the last event)."""
    text = ""
    for line in raw.splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if wire == "chat":
            text += "".join((c.get("delta") or {}).get("content") or "" for c in event.get("choices") or [])
        elif wire == "gemini":
            text += "".join(p.get("text", "") for c in event.get("candidates") or [] for p in c["content"]["parts"])
        elif event.get("type") == "content_block_delta":
            text += event["delta"].get("text", "")
        elif event.get("type") == "response.output_text.delta":
            text += event["delta"]
    return text


@pytest.mark.parametrize("wire", ["chat", "gemini", "anthropic", "responses"])
def test_a_call_rejected_after_early_text_and_asked_again_of_another_wire_continues_with_the_whole_reply(tmp_path: Path, wire: str) -> None:
    """The operator swapped to an upstream of another wire, then rejected the held call: the reply
    asked again there is none of what went early, so it follows whole (not cut by the length of
    the text that went before), and the rejected call never reaches the agent."""
    other = "anthropic" if wire == "chat" else "chat"
    upstream = GatedUpstream(wire, call=True)
    second = GatedUpstream(other, call=False, first="Kept the notes, all of them.", then="")
    second.go.set()

    def swap_and_reject(gw: Any) -> None:
        gw.swap_policy("second")
        gw.answer(Answer.reject("keep them"))

    with upstream, second, gateway(upstream, tmp_path, wire) as (gw, server):
        gw.upstreams.append(Upstream("second", second.url, wire=other))
        _, whole = _stream_through(upstream, f"http://127.0.0.1:{server.port}", wire, swap_and_reject, gw)
    text, calls = _text_and_calls(wire, whole)
    assert calls == [] and text == "Hello worldKept the notes, all of them.", text
    assert "keep them" in json.dumps(second.requests[0])


@pytest.mark.parametrize("wire", ["chat", "gemini", "anthropic", "responses"])
def test_a_key_spelled_across_early_text_and_the_reply_asked_again_never_reaches_the_agent(tmp_path: Path, wire: str) -> None:
    """The text that went early ends with the key's start, and the reply asked again after the
    refusal begins with its rest: the agent, which joins them, never reads the key."""
    key = "sk-upstream-7f3a9c1e5b2d4a6c8e0f"
    upstream = GatedUpstream(wire, call=True, first="Here: " + key[:14], then=" " + "y" * 2000)
    upstream.again = key[14:] + " is the rest."
    upstream.go.set()
    with upstream, gateway(upstream, tmp_path, wire, key=Secret(key)) as (gw, server):
        url, body = _request(wire, f"http://127.0.0.1:{server.port}")
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep them")))
        raw = httpx.post(url, json=body, timeout=30).text
        operator.join()
        asked = len(upstream.requests)
    text, calls = _text_and_calls(wire, raw)
    assert asked == 2 and calls == [] and text.startswith("Here: " + key[:14]), text[:100]
    assert key not in text and text.endswith(" is the rest."), text[-100:]


def test_thinking_reaches_the_agent_before_any_text(tmp_path: Path) -> None:
    upstream = GatedUpstream("anthropic", call=False)
    upstream.shows_first, upstream.gates_thinking = "They asked.", True
    with upstream, gateway(upstream, tmp_path, "anthropic") as (gw, server):
        first, whole = _stream_through(upstream, f"http://127.0.0.1:{server.port}", "anthropic")
    assert "thinking_delta" in first
    assert _text_and_calls("anthropic", whole) == ("Hello world", [])


@pytest.mark.parametrize("wire", ["chat", "anthropic", "responses"])
def test_text_that_could_spell_the_key_is_held_back_and_masked(tmp_path: Path, wire: str) -> None:
    """With a key, text goes out the key's span behind what came; text holding the key is never sent."""
    key = "sk-upstream-7f3a9c1e5b2d4a6c8e0f"
    with GatedUpstream(wire, call=False, first="Your key is " + key) as upstream:
        with gateway(upstream, tmp_path, wire, key=Secret(key)) as (gw, server):
            url, body = _request(wire, f"http://127.0.0.1:{server.port}")
            upstream.go.set()
            raw = httpx.post(url, json=body, timeout=30).text
    assert key not in raw and "Your key is" in _text_and_calls(wire, raw)[0]


def test_a_reply_of_a_call_alone_sends_nothing_before_the_decision(tmp_path: Path) -> None:
    """A stream that opens with a role and no text, then a call: nothing goes early (the agent
    would see nothing of it), and the response is the upstream's stream whole once approved."""
    with GatedUpstream("chat", call=True, first="", then="") as upstream, gateway(upstream, tmp_path, "chat") as (gw, server):
        upstream.go.set()
        url, body = _request("chat", f"http://127.0.0.1:{server.port}")
        got: list[httpx.Response] = []
        agent = threading.Thread(target=lambda: got.append(httpx.post(url, json=body, timeout=30)), daemon=True)
        agent.start()
        wait_for(lambda: gw.engine is not None and gw.engine.status == "awaiting_approval", "the call held")
        held = gw.held
        assert held is not None and held.early is not None and not held.early.started
        gw.answer(Answer.approve())
        agent.join(30)
    text, calls = _text_and_calls("chat", got[0].text)
    assert text == "" and len(calls) == 1


class CallUnderAnotherChoice(GatedUpstream):
    """Its first event has text under choice 0 and a call under choice 1 (which the gateway's
    reader does not take as the reply's); then it waits for `go`."""

    def _text(self, text: str, finish: bool = False, role: bool = False) -> bytes:
        raw = super()._text(text, finish, role)
        if not role:
            return raw
        chunk = json.loads(raw[5:])
        call = {"index": 0, "id": "call_x", "type": "function", "function": {"name": "delete_file", "arguments": '{"path": "all"}'}}
        chunk["choices"].append({"index": 1, "delta": {"tool_calls": [call]}, "finish_reason": None})
        return f"data: {json.dumps(chunk)}\n\n".encode()


def test_a_line_naming_a_call_anywhere_waits_for_the_decision(tmp_path: Path) -> None:
    with CallUnderAnotherChoice("chat", call=False) as upstream, gateway(upstream, tmp_path, "chat") as (gw, server):
        url, body = _request("chat", f"http://127.0.0.1:{server.port}")
        got: list[httpx.Response] = []
        agent = threading.Thread(target=lambda: got.append(httpx.post(url, json=body, timeout=30)), daemon=True)
        agent.start()
        wait_for(lambda: gw.held is not None and len(upstream.requests) == 1, "the request held, the upstream asked")
        held = gw.held
        assert held is not None and held.early is not None and not held.early.started
        upstream.go.set()
        agent.join(30)
    assert got and got[0].status_code == 200


SPLIT_KEY = "sk-upstream-7f3a9c1e5b2d4a6c8e0f"


class SplitKey(GatedUpstream):
    """Spells the upstream's key in two pieces of a field the gateway's reader does not show (chat's
    `reasoning_content`, Gemini's thoughts), with plenty of text around and between them: `late`
    puts the second piece after 800 characters of text, where the first would long have gone early."""

    def __init__(self, wire: str, late: bool) -> None:
        super().__init__(wire, call=False)
        self.late = late

    async def _events(self, again: bool) -> AsyncIterator[bytes]:
        first, second = SPLIT_KEY[:16], SPLIT_KEY[16:]
        texts = ["A", "B" * 400, "C" * 400, "D" * 400]
        pieces = {0: first, 3 if self.late else 1: second}
        for n, text in enumerate(texts):
            last = n == len(texts) - 1
            if self.wire == "chat":
                delta: dict[str, Any] = {"content": text, **({"role": "assistant"} if n == 0 else {})}
                if n in pieces:
                    delta["reasoning_content"] = pieces[n]
                chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m",
                         "choices": [{"index": 0, "delta": delta, "finish_reason": "stop" if last else None}]}
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            else:
                parts = [*([{"text": pieces[n], "thought": True}] if n in pieces else []), {"text": text}]
                candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0,
                                             **({"finishReason": "STOP"} if last else {})}
                yield f"data: {json.dumps({'candidates': [candidate]})}\n\n".encode()
        if self.wire == "chat":
            yield b"data: [DONE]\n\n"


def _joined_hidden(wire: str, raw: str) -> str:
    """What the agent's client joins of the stream's reasoning (chat) or thoughts (Gemini)."""
    joined = ""
    for line in raw.splitlines():
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        data = json.loads(line[5:])
        for choice in data.get("choices") or []:
            joined += (choice.get("delta") or {}).get("reasoning_content") or ""
        for candidate in data.get("candidates") or []:
            joined += "".join(p.get("text", "") for p in (candidate.get("content") or {}).get("parts") or [] if p.get("thought"))
    return joined


@pytest.mark.parametrize("late", [False, True], ids=["close", "late"])
@pytest.mark.parametrize("wire", ["chat", "gemini"])
def test_a_key_split_across_a_field_the_reader_does_not_show_never_reaches_the_agent(wire, late, tmp_path):
    with SplitKey(wire, late) as upstream:
        with gateway(upstream, tmp_path, wire, key=Secret(SPLIT_KEY)) as (_gw, server):
            url, body = _request(wire, f"http://127.0.0.1:{server.port}")
            raw = httpx.post(url, json=body, timeout=30).text
    assert SPLIT_KEY not in _joined_hidden(wire, raw) and SPLIT_KEY not in raw
    assert "D" * 400 in raw  # the text itself still reaches the agent


def test_the_key_mask_says_when_a_text_ends_with_the_start_of_the_key():
    from engine.model.keymask import KeyMask

    mask = KeyMask(SPLIT_KEY)

    def could_begin(text: str) -> bool:
        return mask.tail_state(text)[1]

    assert could_begin("some text sk-u") and could_begin("x" * 500 + SPLIT_KEY[:20])
    assert could_begin("sk-up\\nstr")  # a gap a server may put inside it
    assert not could_begin("sk-") and not could_begin("skies") and not could_begin("")
    assert not KeyMask(None).tail_state("sk-upstream")[1]
    assert mask.tail_state("a b " + SPLIT_KEY[:9] + "\n" + SPLIT_KEY[9:]) == (True, False)  # whole, across a gap


def test_the_key_mask_finds_a_secret_holding_a_space_spelled_across_a_streams_events():
    """A URL's credential may hold a space (`%20`): its start at a stream's end holds the stream
    back, and the whole of it across two events is found, as the mask's pattern finds it."""
    from engine.gateway.echo import StreamEcho
    from engine.model.keymask import KeyMask

    mask = KeyMask(SPLIT_KEY, also=["open sesame"])
    assert mask.tail_state("say open ses") == (False, True)
    assert mask.tail_state("say open\n sesame") == (True, False)
    echo = StreamEcho(mask)

    def line(text: str) -> bytes:
        return ("data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}) + "\n").encode()

    echo.line(line("say open ses"))
    assert echo.could_complete_key and not echo.spelled_key
    echo.line(line("ame now"))
    assert echo.spelled_key and echo.carries_key


def _key_split(tmp_path: Path, wire: str, call: bool, first: str, then: str) -> tuple[str, str, list[dict[str, Any]], dict[int, Any]]:
    """A reply of `first`, then `then` (and, with `call`, a call the operator approves) from an
    upstream whose key the gateway holds: the agent's stream, its text and calls, and what ran."""
    upstream = GatedUpstream(wire, call=call, first=first, then=then)
    upstream.go.set()
    with upstream, gateway(upstream, tmp_path, wire, key=Secret(KEY)) as (gw, server):
        url, body = _request(wire, f"http://127.0.0.1:{server.port}")
        operator = Operator(gw, lambda g: g.answer(Answer.approve())) if call else None
        raw = httpx.post(url, json=body, timeout=30).text
        if operator is not None:
            operator.join()
        released = dict(gw.runs[0].engine.released)
    text, calls = _text_and_calls(wire, raw)
    return raw, text, calls, released


@pytest.mark.parametrize("call", [False, True], ids=["answer", "call"])
@pytest.mark.parametrize("begun", [1, 3, 4, 14])
@pytest.mark.parametrize("wire", ["chat", "gemini", "anthropic", "responses"])
def test_a_key_spelled_across_two_events_of_one_reply_reaches_the_agent_masked(tmp_path: Path, wire: str, begun: int, call: bool) -> None:
    """One event of the reply ends with the key's first `begun` characters, the next begins with
    its rest. Fewer than `MIN_SECRET` (4) do not hold the text back, so they go early; then the
    key is spelled and the rest of the reply is rebuilt, masked as it follows what went: the agent
    reads those few characters at most, then the mask, then the text after the key, once."""
    raw, text, calls, released = _key_split(tmp_path, wire, call, "Here: " + KEY[:begun], KEY[begun:] + " is the key.")
    assert KEY not in raw and KEY[:4] not in raw, raw
    went = KEY[:begun] if begun < 4 else ""  # what went before the key was spelled
    assert text == "Here: " + went + "*** is the key.", text
    assert len(calls) == int(call) and released == ({0: {"path": "notes.txt"}} if call else {})


@pytest.mark.parametrize("call", [False, True], ids=["answer", "call"])
@pytest.mark.parametrize("after", [10, 60, 200])
@pytest.mark.parametrize("wire", ["chat", "gemini", "anthropic", "responses"])
def test_a_key_completed_by_a_piece_that_goes_on_long_after_it_is_held_back(tmp_path: Path, wire: str, after: int, call: bool) -> None:
    """The first event ends with the key's first 14 characters (held), the next completes the key
    and goes on for `after` characters: past what a join's end keeps, the key is still found whole."""
    raw, text, calls, _ = _key_split(tmp_path, wire, call, "Here: " + KEY[:14], KEY[14:] + " " + "z" * after)
    assert KEY not in raw and text == "Here: *** " + "z" * after and len(calls) == int(call), text[:120]


def test_the_text_read_piece_by_piece_is_sliced_as_the_whole_text() -> None:
    """`EarlyStream` keeps a stream's text as its pieces (a string added to is copied whole: a
    16 MB stream would cost its length squared); every slice of them is the whole text's."""
    import random

    from engine.gateway.early import _Grown

    rng = random.Random("grown")
    for _ in range(200):
        grown, whole = _Grown(), ""
        for _ in range(rng.randrange(0, 12)):
            piece = "".join(rng.choice("ab\u00e9🙂") for _ in range(rng.randrange(0, 5)))
            grown.add(piece)
            whole += piece
        assert grown.length == len(whole)
        for start in range(len(whole) + 1):
            for end in range(start, len(whole) + 1):
                assert grown.between(start, end) == whole[start:end], (whole, start, end)
