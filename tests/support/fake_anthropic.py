"""An Anthropic Messages model for tests: a Starlette app on uvicorn, on 127.0.0.1, scripted.

`POST /v1/messages` answers the agent's main conversation from a script (`turns`):
each request that carries tools takes the next reply whose turn it is, judged by
how many tool results the conversation already holds, so a retried request gets
the same reply again. A request without tools (Claude Code's title and topic
side requests) gets a short text. Replies are streamed as server-sent events
(`message_start`, `content_block_*`, `message_delta`, `message_stop`) when the
request says `stream: true`, else one JSON message. `HEAD /` and `GET /`
answer as an API root does. Every request is recorded.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.loopback import Loopback


@dataclass
class Turn:
    """One reply of the model: thinking (with its signature; a list: one thinking block each, the
    first signed `sig-NNNN`, the next `sig-NNNN-2`...), text, then tool uses (name, input); or, with
    `status`, an error of that status (`text` its message, `headers` sent with it)."""

    text: str = ""
    tool_uses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    thinking: str | list[str] = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


NO_CACHE = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
"""The cache counts the Messages API sends in every usage (claude-agent-acp adds them up for its usage_update)."""


def _tool_results(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            count += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return count


def _blocks(turn: Turn, number: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    thoughts = [turn.thinking] if isinstance(turn.thinking, str) else turn.thinking
    for n, thought in enumerate(t for t in thoughts if t):
        blocks.append({"type": "thinking", "thinking": thought, "signature": f"sig-{number:04d}" + (f"-{n + 1}" if n else "")})
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for n, (name, args) in enumerate(turn.tool_uses):
        blocks.append({"type": "tool_use", "id": f"toolu_fake{number:02d}{n:02d}", "name": name, "input": args})
    return blocks


def _message(blocks: list[dict[str, Any]], model: str, number: int) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": f"msg_fake{number:04d}", "type": "message", "role": "assistant", "model": model, "content": blocks,
        "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 120, "output_tokens": 24, **NO_CACHE},
    }


def _events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The message as the stream events the Messages API sends."""
    start = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 120, "output_tokens": 1, **NO_CACHE}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "thinking":
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}))
            for delta in ({"type": "thinking_delta", "thinking": block["thinking"]}, {"type": "signature_delta", "signature": block["signature"]}):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        elif block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            text = block["text"]
            for at in range(0, len(text), 12):
                delta = {"type": "text_delta", "text": text[at : at + 12]}
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        else:
            opened = {**block, "input": {}}
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": 24}}
    events += [("message_delta", delta), ("message_stop", {"type": "message_stop"})]
    return events


class FakeAnthropic(Loopback):
    """The scripted model; `with FakeAnthropic(turns) as fake:` serves on `fake.url`."""

    def __init__(self, turns: list[Turn], side_text: str = '{"title": "A short task", "isNewTopic": true}') -> None:
        self.turns = turns
        self.side_text = side_text
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._served = 0
        app = Starlette(routes=[
            Route("/", self._root, methods=["GET", "HEAD"]),
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count, methods=["POST"]),
        ])
        super().__init__(app)

    async def _root(self, request: Request) -> Response:
        return Response(status_code=200) if request.method == "HEAD" else JSONResponse({"ok": True})

    async def _count(self, request: Request) -> Response:
        self.requests.append((str(request.url.path), dict(request.headers), await request.json()))
        return JSONResponse({"input_tokens": 120})

    def turn(self, body: dict[str, Any]) -> Turn:
        """The reply to a request: the script's next turn when it carries tools, else the side text."""
        if body.get("tools"):
            return self.turns[min(_tool_results(body), len(self.turns) - 1)]
        return Turn(text=self.side_text)

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append((str(request.url.path), dict(request.headers), body))
            self._served += 1
            number = self._served
        turn = self.turn(body)
        if turn.status != 200:
            error = {"type": "error", "error": {"type": "rate_limit_error", "message": turn.text}}
            return JSONResponse(error, status_code=turn.status, headers=turn.headers)
        message = _message(_blocks(turn, number), str(body.get("model") or "claude-fake"), number)
        if not body.get("stream"):
            return JSONResponse(message)

        async def stream():
            for name, data in _events(message):
                yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        return StreamingResponse(stream(), media_type="text/event-stream")
