"""A Gemini API model for tests: a Starlette app on uvicorn (tests/support/loopback.py), scripted.

`POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` answers the agent's
conversation from a script of turns, chosen by how many `functionResponse`
parts the conversation already holds (a retry gets the same turn again), as
server-sent events each holding a `GenerateContentResponse`.
`POST /v1beta/models/MODEL:generateContent` (Gemini CLI's model router and
other side requests, which ask for JSON) gets `side_text` whole. Every request
is recorded with its headers.
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
    """One reply of the model: text, then function calls (name, args)."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _function_responses(body: dict[str, Any]) -> int:
    return sum(
        1
        for content in body.get("contents") or []
        for part in (content.get("parts") or [] if isinstance(content, dict) else [])
        if isinstance(part, dict) and "functionResponse" in part
    )


def _response(parts: list[dict[str, Any]], model: str) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 24, "totalTokenCount": 144},
        "modelVersion": model,
    }


class FakeGemini(Loopback):
    """The scripted model; `with FakeGemini(turns) as fake:` serves on `fake.url`."""

    def __init__(self, turns: list[Turn], side_text: str = '{"complexity_reasoning": "a one-step task", "complexity_score": 10}') -> None:
        self.turns = turns
        self.side_text = side_text
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/v1beta/models/{call:path}", self._models, methods=["POST"])])
        super().__init__(app)

    async def _models(self, request: Request) -> Response:
        call = request.path_params["call"]
        model, _, method = call.partition(":")
        body = await request.json()
        with self._lock:
            self.requests.append((call, dict(request.headers), body))
        if method == "countTokens":
            return JSONResponse({"totalTokens": 120})
        if method == "generateContent":
            return JSONResponse(_response([{"text": self.side_text}], model))
        if method != "streamGenerateContent":
            return JSONResponse({"error": {"code": 404, "message": f"no method {method}", "status": "NOT_FOUND"}}, status_code=404)
        turn = self.turns[min(_function_responses(body), len(self.turns) - 1)]
        pieces: list[list[dict[str, Any]]] = []
        text = turn.text
        for at in range(0, len(text), 16):
            pieces.append([{"text": text[at : at + 16]}])
        if turn.calls:
            pieces.append([{"functionCall": {"name": name, "args": args}} for name, args in turn.calls])

        async def stream():
            for parts in pieces or [[{"text": ""}]]:
                yield f"data: {json.dumps(_response(parts, model))}\r\n\r\n".encode()

        return StreamingResponse(stream(), media_type="text/event-stream")
