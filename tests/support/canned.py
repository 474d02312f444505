"""A fake upstream that answers every POST with a canned status, body and headers, as bytes."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.loopback import Loopback


class Canned(Loopback):
    """Answers its n-th POST with its n-th reply (the last one again after): (status, body bytes,
    headers as (name, value) pairs, written as they are, even one a server should not send)."""

    def __init__(self, replies: list[tuple[int, bytes, list[tuple[str, str]]]]) -> None:
        self.replies = replies
        self.requests: list[tuple[str, bytes]] = []
        super().__init__(Starlette(routes=[Route("/{path:path}", self._reply, methods=["POST"])]))

    async def _reply(self, request: Request) -> Response:
        self.requests.append((request.url.path, await request.body()))
        status, body, headers = self.replies[min(len(self.requests), len(self.replies)) - 1]
        response = Response(body, status_code=status)
        for name, value in headers:
            response.raw_headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
        return response
