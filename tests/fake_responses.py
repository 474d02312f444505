"""An OpenAI Responses model for tests (Codex's wire): a Starlette app on uvicorn, scripted.

`POST /v1/responses` answers from a script of turns chosen by how many
`function_call_output` items the input already holds, as server-sent events:
`response.created`, one `response.output_item.done` per item (the text as a
message, then the function calls), `response.completed` with the usage.
Every request body is recorded.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.fake_gemini import Turn  # one reply: text, then function calls (name, arguments)
from tests.support.loopback import Loopback

__all__ = ["FakeResponses", "Turn"]


def _outputs(body: dict[str, Any]) -> int:
    return sum(1 for item in body.get("input") or [] if isinstance(item, dict) and item.get("type") == "function_call_output")


class FakeResponses(Loopback):
    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/v1/responses", self._responses, methods=["POST"]),
                                Route("/v1/models", self._models, methods=["GET"])])
        super().__init__(app)

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [], "models": []})

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            number = len(self.requests)
        turn = self.turns[min(_outputs(body), len(self.turns) - 1)]
        items: list[dict[str, Any]] = []
        if turn.text:
            items.append({"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
        for n, (name, args) in enumerate(turn.calls):
            items.append({"type": "function_call", "id": f"fc_{number}_{n}", "call_id": f"call_{number}_{n}", "name": name,
                          "arguments": json.dumps(args), "status": "completed"})
        response = {"id": f"resp_{number}", "object": "response", "status": "completed", "model": body.get("model", "m"),
                    "output": items, "usage": {"input_tokens": 120, "output_tokens": 24, "total_tokens": 144,
                                               "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}

        async def stream():
            yield _event("response.created", {"response": {**response, "status": "in_progress", "output": []}})
            for index, item in enumerate(items):
                yield _event("response.output_item.done", {"output_index": index, "item": item})
            yield _event("response.completed", {"response": response})

        return StreamingResponse(stream(), media_type="text/event-stream")


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
