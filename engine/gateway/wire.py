"""What the gateway sends back to the agent: the upstream's bytes, or a reply it builds.

A reply released as the upstream wrote it goes back byte for byte. When the
operator changed it (edited arguments, calls held back, a reply written by
hand) it is rebuilt: a `chat.completion` object, or for a streaming request a
server-sent-event stream of `chat.completion.chunk`s ending in `[DONE]`, the
shapes the openai client parses.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.core.events import Usage


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    on_sent: Callable[[bool], None] | None = None
    """Called once by the server: True when the whole body was handed to the agent's connection, False when it could not be."""


def error_response(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None) -> Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return Response(status, json.dumps(body).encode())


def passthrough(raw: bytes, stream: bool) -> Response:
    return Response(200, raw, "text/event-stream" if stream else "application/json")


def built_reply(
    content: str | None,
    calls: list[dict[str, Any]],
    *,
    model: str,
    stream: bool,
    usage: Usage | None = None,
    include_usage: bool = False,
) -> Response:
    """A reply the gateway wrote: `calls` are chat completions tool calls (id, type, function)."""
    created = int(time.time())
    ident = f"chatcmpl-agent-tui-{time.monotonic_ns()}"
    finish = "tool_calls" if calls else "stop"
    usage_body = (
        {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens, "total_tokens": usage.input_tokens + usage.output_tokens}
        if usage is not None
        else None
    )
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        data: dict[str, Any] = {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        }
        if usage_body is not None:
            data["usage"] = usage_body
        return Response(200, json.dumps(data).encode())
    base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": content or ""}]
    for n, call in enumerate(calls):
        deltas.append({"tool_calls": [{"index": n, **call}]})
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if include_usage and usage_body is not None:
        chunks.append({**base, "choices": [], "usage": usage_body})
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Response(200, text.encode(), "text/event-stream")


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def models_list(names: list[str]) -> Response:
    data = [{"id": n, "object": "model", "created": 0, "owned_by": "agent-tui"} for n in names]
    return Response(200, json.dumps({"object": "list", "data": data}).encode())
