"""The gateway benches' floor (`bench/bare_proxy.py`): a bare proxy that passes every wire's
request and reply through byte for byte, whole and streamed, a stream's pieces as they come,
with either client; and the three gateway benches print it beside direct and the gateway."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bare_proxy import CLIENTS, BareProxy  # noqa: E402
from tests.support.loopback import Loopback  # noqa: E402

ROUTES = {
    "chat": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "responses": "/v1/responses",
    "gemini": "/v1beta/models/m:generateContent",
}
STREAMED = {**ROUTES, "gemini": "/v1beta/models/m:streamGenerateContent?alt=sse"}


class Echo(Loopback):
    """Replies with what it was asked (method, path and query, two headers, the body as bytes
    show it), whole as JSON or, asked with `"stream": true` (or `alt=sse`), as three events of
    a stream, the last sent only once `release` is set (within 5 s; else another)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        super().__init__(Starlette(routes=[Route("/{path:path}", self._reply, methods=["POST"])]))

    async def _reply(self, request: Request) -> Response:
        body = await request.body()
        asked = {
            "method": request.method,
            "path": request.url.path,
            "query": request.url.query,
            "x-api-key": request.headers.get("x-api-key"),
            "content-type": request.headers.get("content-type"),
            "body": body.decode("latin-1"),
        }
        if request.query_params.get("alt") == "sse" or json.loads(body).get("stream"):
            return StreamingResponse(self._events(asked), media_type="text/event-stream", headers={"x-upstream": "streamed"})
        return Response(json.dumps(asked, separators=(",", ":")) + " \u00e9\u0001\n", media_type="application/json", headers={"x-upstream": "whole"})

    async def _events(self, asked: dict[str, Any]) -> AsyncIterator[bytes]:
        yield f"data: {json.dumps(asked)}\n\n".encode()
        yield "data: {\"text\": \"caf\u00e9 \\u0000\"}\n\n".encode()
        for _ in range(500):
            if self.release.is_set():
                yield b"data: [DONE]\n\n"
                return
            await asyncio.sleep(0.01)
        yield b"data: [not released: the first events did not reach the client]\n\n"


@pytest.fixture(scope="module")
def echo() -> Any:
    with Echo() as server:
        yield server


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("wire", ROUTES)
def test_the_bare_proxy_passes_a_whole_reply_byte_for_byte(echo, wire, client):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "caf\u00e9"}], "stream": False}).encode()
    headers = {"content-type": "application/json", "x-api-key": "k-1"}
    with BareProxy(echo.url, client) as proxy, httpx.Client(timeout=10, trust_env=False) as http:
        direct = http.post(echo.url + ROUTES[wire], content=body, headers=headers)
        through = http.post(proxy.url_for(echo.url + ROUTES[wire]), content=body, headers=headers)
    assert direct.status_code == through.status_code == 200
    assert json.loads(direct.content.rsplit(b" ", 1)[0])["body"] == body.decode()
    assert through.content == direct.content
    assert through.headers["content-type"] == direct.headers["content-type"]
    assert through.headers["x-upstream"] == "whole"
    assert through.headers["content-length"] == str(len(direct.content))


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("wire", STREAMED)
def test_the_bare_proxy_passes_a_stream_on_as_it_comes_byte_for_byte(echo, wire, client):
    asking = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]} if wire == "gemini" else {"model": "m", "stream": True}
    body = json.dumps(asking).encode()
    headers = {"content-type": "application/json", "x-api-key": "k-2"}
    got: dict[str, bytes] = {}
    with BareProxy(echo.url, client) as proxy, httpx.Client(timeout=10, trust_env=False) as http:
        for kind, url in (("direct", echo.url + STREAMED[wire]), ("through", proxy.url_for(echo.url + STREAMED[wire]))):
            echo.release.clear()
            raw = b""
            with http.stream("POST", url, content=body, headers=headers) as response:
                assert response.status_code == 200
                assert response.headers["x-upstream"] == "streamed"
                pieces = response.iter_raw()
                while raw.count(b"\n\n") < 2:  # the first two events, before the upstream sends its last
                    raw += next(pieces)
                echo.release.set()
                raw += b"".join(pieces)
            got[kind] = raw
    assert got["through"] == got["direct"]
    assert got["direct"].endswith(b"data: [DONE]\n\n")
    asked = json.loads(got["direct"].split(b"\n\n")[0][len(b"data: "):])
    assert asked["path"] + ("?" + asked["query"] if asked["query"] else "") == STREAMED[wire]
    assert asked["x-api-key"] == "k-2" and asked["body"] == body.decode()


def test_the_bare_proxy_refuses_a_client_it_does_not_have():
    with pytest.raises(ValueError, match="one of thread, async"):
        BareProxy("http://127.0.0.1:1", "pool")


def run_script(*argv: str) -> str:
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


NUMBER = r"-?\d+\.\d\d"


@pytest.mark.parametrize("wire", ["chat", "anthropic", "responses", "gemini"])
def test_gateway_latency_prints_the_bare_proxies_between_direct_and_the_gateway(wire):
    out = run_script("bench/gateway_latency.py", "--requests", "20", "--turns", "5", "--wire", wire, "--bare", "both")
    for kind in ("whole", "streamed"):
        assert re.search(rf"^{kind} +requests=20 +direct +p50 {NUMBER} ms p95 {NUMBER} +CPU {NUMBER} ms$", out, re.M), out
    for way in ("bare proxy, thread", "bare proxy, async", "gateway"):
        rows = re.findall(rf"^  {re.escape(way)} +p50 {NUMBER} ms p95 {NUMBER} +added p50 {NUMBER} ms p95 {NUMBER} +CPU added {NUMBER} ms(  ratio \d+\.\d\d)?$", out, re.M)
        assert len(rows) == 2, (way, out)
    for way in ("thread", "async"):
        rows = re.findall(rf"^  the gateway's own part over the bare proxy, {way} +p50 {NUMBER} ms p95 {NUMBER} +CPU {NUMBER} ms$", out, re.M)
        assert len(rows) == 2, (way, out)


def test_gateway_first_byte_prints_the_bare_proxy():
    out = run_script("bench/gateway_first_byte.py", "--requests", "3", "--pieces", "2", "--gap", "5", "--wire", "anthropic")
    for way in ("direct", "bare proxy, thread", "gateway"):
        assert re.search(rf"^  {re.escape(way)} +first byte p50 +{NUMBER} ms +first text p50 +{NUMBER} ms +end p50 +{NUMBER} ms$", out, re.M), (way, out)
    for what in ("byte", "text"):
        assert re.search(rf"^  first {what} added p50: bare proxy, thread {NUMBER} ms, gateway {NUMBER} ms, the gateway's own part {NUMBER} ms$", out, re.M), out


def test_gateway_concurrency_prints_the_bare_proxy_beside_direct_and_the_gateway():
    out = run_script("bench/gateway_concurrency.py", "--clients", "2", "--requests", "16", "--rounds", "2", "--turns", "4", "--latency", "20")
    assert re.search(r"^2 clients, 16 requests, 2 rounds: direct \d+ requests/s$", out, re.M), out
    assert re.search(r"^  bare proxy, thread \(in its own process\) \d+ requests/s, ratio \d+\.\d\d; its CPU \d+\.\d\d ms a request; failed requests 0$", out, re.M), out
    assert re.search(r"^  gateway \(in its own process\) \d+ requests/s, ratio \d+\.\d\d; its CPU \d+\.\d\d ms a request; failed requests 0; runs \d+, aborted by another conversation 0; \d+\.\d\dx the bare proxy's \(thread\)$", out, re.M), out


def test_gateway_latency_phases_split_the_gateway_and_the_bare_proxy():
    out = run_script("bench/gateway_latency.py", "--requests", "20", "--turns", "5", "--phases")
    for table, phases in (("the gateway's phases:", 9), ("the bare proxy's phases (thread):", 6)):
        for at in [m.end() for m in re.finditer(re.escape(table), out)]:
            rows = out[at:].strip("\n").splitlines()[:phases]
            assert all(re.fullmatch(r"    \S.{43} p50 -?\d+\.\d{3} ms", row) for row in rows), (table, out)
        assert out.count(table) == 2, out
