"""An OpenAI Responses API model for tests: a Starlette app on uvicorn (tests/support/loopback.py), scripted.

`POST /v1/responses` answers the agent's conversation from a script of turns,
chosen by how many `function_call_output` items its `input` already holds (a
retry gets the same turn again; the whole `input` comes every turn, as Codex
CLI and openai-agents send it). A streaming request gets the server-sent events
the openai client parses (`response.created`, `response.output_item.added`,
`response.output_text.delta`, `response.function_call_arguments.delta`,
`response.output_item.done`, `response.completed`), a whole one the `response`
object. A turn may instead be an HTTP error in the API's shape. Every request is
recorded with its headers.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.loopback import Loopback


@dataclass
class Turn:
    """One reply of the model (of this fake and tests/support/fake_gemini.py): text (streamed in pieces
    of `chunk_size`), then function calls (name, args); or an error status (the text its
    message) with `headers`. `{key}` in the text, the arguments' strings or a header is the
    request's key (an upstream that echoes it)."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    chunk_size: int = 16
    headers: dict[str, str] = field(default_factory=dict)
    call_ids: tuple[str, ...] = ()
    """The calls' ids (`call_id`) in this fake, when not its own distinct ones."""

    def echoing(self, key: str) -> Turn:
        """The turn with `{key}` replaced by `key`."""
        calls = [(name, json.loads(json.dumps(args).replace("{key}", key))) for name, args in self.calls]
        headers = {k: v.replace("{key}", key) for k, v in self.headers.items()}
        return Turn(self.text.replace("{key}", key), calls, self.status, self.chunk_size, headers, self.call_ids)


def function_outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The `function_call_output` items of a request's `input`."""
    items = body.get("input")
    if not isinstance(items, list):
        return []
    return [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]


def output_items(turn: Turn, number: int) -> list[dict[str, Any]]:
    """The turn as `response.output` items: a message with the text, then a `function_call` per call."""
    items: list[dict[str, Any]] = []
    if turn.text:
        items.append(
            {
                "id": f"msg_{number}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for n, (name, args) in enumerate(turn.calls):
        items.append(
            {
                "id": f"fc_{number}_{n}",
                "type": "function_call",
                "status": "completed",
                "call_id": turn.call_ids[n] if n < len(turn.call_ids) else f"call_{number}_{n}",
                "name": name,
                "arguments": json.dumps(args),
            }
        )
    return items


def response_object(body: dict[str, Any], number: int, output: list[dict[str, Any]], status: str = "completed") -> dict[str, Any]:
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": str(body.get("model") or "fake"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "usage": (
            {
                "input_tokens": 120,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": 24,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 144,
            }
            if status == "completed"
            else None
        ),
    }


def events(turn: Turn, body: dict[str, Any], number: int) -> Iterator[dict[str, Any]]:
    """The stream of a turn, as the Responses API sends it."""
    sequence = iter(range(1_000_000))
    yield {"type": "response.created", "sequence_number": next(sequence), "response": response_object(body, number, [], "in_progress")}
    items = output_items(turn, number)
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield {"type": "response.output_item.added", "sequence_number": next(sequence), "output_index": index, "item": {**item, "status": "in_progress", "content": []}}
            part = {"type": "output_text", "text": "", "annotations": []}
            yield {"type": "response.content_part.added", "sequence_number": next(sequence), "item_id": item["id"], "output_index": index, "content_index": 0, "part": part}
            for at in range(0, len(text), turn.chunk_size):
                yield {
                    "type": "response.output_text.delta", "sequence_number": next(sequence), "item_id": item["id"],
                    "output_index": index, "content_index": 0, "delta": text[at : at + turn.chunk_size], "logprobs": [],
                }
            yield {"type": "response.output_text.done", "sequence_number": next(sequence), "item_id": item["id"], "output_index": index, "content_index": 0, "text": text, "logprobs": []}
            yield {"type": "response.content_part.done", "sequence_number": next(sequence), "item_id": item["id"], "output_index": index, "content_index": 0, "part": {**part, "text": text}}
        else:
            arguments = item["arguments"]
            yield {"type": "response.output_item.added", "sequence_number": next(sequence), "output_index": index, "item": {**item, "status": "in_progress", "arguments": ""}}
            for at in range(0, len(arguments), turn.chunk_size):
                yield {
                    "type": "response.function_call_arguments.delta", "sequence_number": next(sequence), "item_id": item["id"],
                    "output_index": index, "delta": arguments[at : at + turn.chunk_size],
                }
            yield {"type": "response.function_call_arguments.done", "sequence_number": next(sequence), "item_id": item["id"], "output_index": index, "arguments": arguments}
        yield {"type": "response.output_item.done", "sequence_number": next(sequence), "output_index": index, "item": item}
    yield {"type": "response.completed", "sequence_number": next(sequence), "response": response_object(body, number, items)}


class FakeResponses(Loopback):
    """The scripted model; `with FakeResponses(turns) as fake:` serves on `fake.url` (`fake.url + "/v1"` is the base URL)."""

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/v1/responses", self._responses, methods=["POST"]), Route("/v1/models", self._models, methods=["GET"])])
        super().__init__(app)

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": []})

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append((request.url.path, dict(request.headers), body))
            number = len(self.requests)
        turn = self.turns[min(len(function_outputs(body)), len(self.turns) - 1)]
        turn = turn.echoing(request.headers.get("authorization", "").removeprefix("Bearer "))
        if turn.status != 200:
            error = {"message": turn.text or "the fake failed", "type": "server_error", "param": None, "code": None}
            return JSONResponse({"error": error}, status_code=turn.status, headers=turn.headers)
        if not body.get("stream"):
            return JSONResponse(response_object(body, number, output_items(turn, number)))

        async def stream():
            for event in events(turn, body, number):
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()

        return StreamingResponse(stream(), media_type="text/event-stream")
