"""Streams of each wire as a fake upstream writes them, and what an agent's client makes of them.

`chat`, `ant*`, `gem` and `Numbered` write one event of chat completions, Anthropic Messages,
Gemini and the Responses API; `anthropic_blocks`, `gemini_parts` and `arrival` read a stream's
events (`tests.support.scripted.sse_json`) as a client does: the blocks by index, the parts, every
text and thinking piece in the order it came; `stream` asks through a gateway as an agent does.
`KEY` is the upstream key the tests give the gateway.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support import gateway_harness as harness
from tests.support.scripted import Scripted

KEY = "sk-upstream-7f3a9c1e5b2d4a6c8e0f"
SCHEMA = harness.TOOLS[1]["function"]["parameters"]
CALLED = {"path": "notes.txt"}
HI = [{"role": "user", "content": "hi"}]
AGENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"model": "m", "messages": HI, "stream": True, "tools": harness.TOOLS}),
    "anthropic": ("/v1/messages", {"model": "m", "max_tokens": 100, "stream": True, "messages": HI,
                                   "tools": [{"name": "delete_file", "description": "d", "input_schema": SCHEMA}]}),
    "responses": ("/v1/responses", {"model": "m", "input": HI, "stream": True,
                                    "tools": [{"type": "function", "name": "delete_file", "description": "d", "parameters": SCHEMA}]}),
    "gemini": ("/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
               "tools": [{"functionDeclarations": [{"name": "delete_file", "description": "d", "parametersJsonSchema": SCHEMA}]}]}),
}


def chat(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


def ant(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def ant_start(ident: str = "msg_1") -> bytes:
    message = {"id": ident, "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {"input_tokens": 3, "output_tokens": 0}}
    return ant({"type": "message_start", "message": message})


def ant_block(index: int, kind: str) -> bytes:
    block: dict[str, Any] = {"type": kind, kind: ""} if kind != "thinking" else {"type": "thinking", "thinking": "", "signature": ""}
    return ant({"type": "content_block_start", "index": index, "content_block": block})


def ant_delta(index: int, kind: str, text: str) -> bytes:
    return ant({"type": "content_block_delta", "index": index, "delta": {"type": f"{kind}_delta", kind: text}})


def ant_stop(*indices: int) -> list[bytes]:
    return [ant({"type": "content_block_stop", "index": i}) for i in indices]


def ant_end(reason: str = "end_turn") -> list[bytes]:
    delta = {"stop_reason": reason, "stop_sequence": None}
    return [ant({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 9}}), ant({"type": "message_stop"})]


def gem(parts: list[dict[str, Any]], finish: bool = False) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0, **({"finishReason": "STOP"} if finish else {})}
    return f"data: {json.dumps({'candidates': [candidate]})}\r\n\r\n".encode()


class Numbered:
    """Responses API events, numbered in order."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, data: dict[str, Any], before: str = "") -> bytes:
        data = {**data, "sequence_number": self.n}
        self.n += 1
        return f"{before}event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_blocks(events: list[Any]) -> list[dict[str, Any]]:
    """The blocks as the Anthropic SDK accumulates them, each by its index."""
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        if event.get("type") == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif event.get("type") == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            for kind in ("text", "thinking"):
                if delta["type"] == f"{kind}_delta":
                    block[kind] = block.get(kind, "") + delta[kind]
    return [blocks[i] for i in sorted(blocks)]


def arrival(events: list[Any]) -> str:
    """Every text and thinking piece of a stream in the order it came (a terminal printing them)."""
    out = ""
    for event in events:
        if event.get("type") == "content_block_delta":
            out += event["delta"].get("text", "") + event["delta"].get("thinking", "")
        for candidate in event.get("candidates") or []:
            out += "".join(p.get("text", "") for p in candidate["content"]["parts"])
        if event.get("type") in ("response.output_text.delta", "response.reasoning_summary_text.delta"):
            out += event["delta"]
    return out


def gemini_parts(events: list[Any]) -> list[dict[str, Any]]:
    return [p for e in events for p in e["candidates"][0]["content"]["parts"]]


def stream(server: Any, wire: str, gate: Scripted | None = None, seen: str | None = None) -> str:
    """The agent's streamed request through the gateway; with `gate`, its `go` is set once a line
    holding `seen` came (what went early reached the agent)."""
    path, body = AGENTS[wire]
    got = ""
    with httpx.stream("POST", f"http://127.0.0.1:{server.port}{path}", json=body, timeout=30) as response:
        for line in response.iter_lines():
            got += line + "\n"
            if gate is not None and seen is not None and seen in line:
                gate.go.set()
    return got
