"""A fake upstream that streams scripted bytes, and an event-stream client's reading of what it got.

`Scripted` serves its n-th script (a list of byte strings, each written as it is) to its n-th
request; `GATE` in a script waits for `go`. `sse_events` reads a body as an event-stream client
does (the WHATWG rules the openai and anthropic SDKs follow): a line ends at CRLF, LF or CR alone,
an event's `data:` lines are joined with a newline and dispatched at a blank line.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from typing import Any, AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from tests.support.loopback import Loopback

GATE = None
"""In a script: wait there until `go` is set (at most 10 s), before the events after it."""


class Scripted(Loopback):
    """Streams its n-th script (a list of events) to its n-th request, the last one again after."""

    def __init__(self, scripts: list[list[bytes | None]]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        self.go = threading.Event()
        self.went_on: list[bool] = []
        """At each gate: whether `go` was set (else the wait ran out)."""
        super().__init__(Starlette(routes=[Route("/{path:path}", self._reply, methods=["POST"])]))

    async def _reply(self, request: Request) -> StreamingResponse:
        self.requests.append(await request.json())
        script = self.scripts[min(len(self.requests), len(self.scripts)) - 1]

        async def events() -> AsyncIterator[bytes]:
            for event in script:
                if event is GATE:
                    for _ in range(1000):  # bounded: at most 10 s
                        if self.go.is_set():
                            break
                        await asyncio.sleep(0.01)
                    self.went_on.append(self.go.is_set())
                else:
                    yield event

        return StreamingResponse(events(), media_type="text/event-stream")


def sse_events(raw: str) -> list[tuple[str | None, str]]:
    """(event name, data) of each event of `raw`, as an event-stream client reads them."""
    out: list[tuple[str | None, str]] = []
    data: list[str] = []
    name: str | None = None
    for line in re.split(r"\r\n|\r|\n", raw):
        if line == "":
            if data:
                out.append((name, "\n".join(data)))
            data, name = [], None
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    return out


def sse_json(raw: str) -> list[Any]:
    """The JSON of each event of `raw` as a client reads them (chat completions' `[DONE]` left out)."""
    return [json.loads(data) for _, data in sse_events(raw) if data != "[DONE]"]
