"""A bare forwarding proxy built of the gateway's own parts: the floor of the gateway benches.

    python bench/bare_proxy.py UPSTREAM_URL [--client thread|async] [--profile FILE]

What any proxy made of the parts the project fixes (an ASGI application on uvicorn, httpx to
the upstream) costs a request, with nothing of the gateway's own: no route, no JSON, no run,
no engine, no transcript. `BareProxy` is a `GatewayServer` (the same uvicorn configuration,
protocol, thread and start) whose application forwards every request to the upstream's
address, the same path, method, headers and body, and the reply back: a whole reply read
and sent with its length, an event stream's bytes sent on as they come (httpx `iter_raw`,
ASGI `more_body`). Its upstream client is, as `--client` says:

- `thread`: a sync `httpx.Client` on the gateway's worker threads (the gateway's own hand-off,
  `engine.gateway.server._in_thread`), as the gateway calls its upstream: one hand-off each
  way for a whole reply, one more back to the event loop for each piece of a stream (the pieces
  that came meanwhile sent on in one write);
- `async`: an `httpx.AsyncClient` on the event loop, no thread.

The benches `gateway_latency.py`, `gateway_first_byte.py` and `gateway_concurrency.py` ask it
beside the upstream and the gateway, request by request, in the same run. Run as a script it
serves in a process of its own (as `gateway_concurrency.py` runs the gateway): its port on
stdout, then it serves until stdin closes, then the CPU seconds it used as JSON; `--profile`:
cProfile on every thread of it (the event loop's and the workers'), timed by each thread's own
CPU clock (so a wait, for a socket or the interpreter lock, counts nothing), their stats
together written to FILE (`pstats`) when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from engine.gateway import GatewayServer  # noqa: E402
from engine.gateway.server import Receive, Scope, Send, _headers, _in_thread  # noqa: E402

CLIENTS = ("thread", "async")
_HOP = frozenset({b"host", b"content-length", b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade"})
"""Request headers the proxy does not pass on (httpx writes its own)."""
_NOT_BACK = frozenset({"connection", "keep-alive", "transfer-encoding", "date", "server"})
"""Reply headers the proxy does not pass back (uvicorn writes its own)."""


class BareProxy(GatewayServer):
    """Forwards every request to `upstream`'s address and its reply back, with the `client` of `CLIENTS`."""

    def __init__(self, upstream: str, client: str = "thread") -> None:
        if client not in CLIENTS:
            raise ValueError(f"the bare proxy's client is one of {', '.join(CLIENTS)}, not {client!r}")
        super().__init__(None, "127.0.0.1", 0)  # type: ignore[arg-type]  # no gateway: the application is its own
        parts = urlsplit(upstream)
        self.upstream = f"{parts.scheme}://{parts.netloc}"
        self.client = client
        self._sync = httpx.Client(timeout=30, trust_env=False) if client == "thread" else None
        self._async: httpx.AsyncClient | None = None
        """Made on the server's event loop, at the first request."""

    def __enter__(self) -> BareProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        if self._sync is not None:
            self._sync.close()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_for(self, direct: str) -> str:
        """`direct` (a URL on the upstream) with the proxy's address in place of the upstream's."""
        parts = urlsplit(direct)
        return self.root + direct[len(f"{parts.scheme}://{parts.netloc}"):]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await self._body(_headers(scope), receive) or b""
        url = self.upstream + scope["raw_path"].decode("latin-1")
        if scope["query_string"]:
            url += "?" + scope["query_string"].decode("latin-1")
        headers = [(k, v) for k, v in scope["headers"] if k not in _HOP]
        if self._sync is not None:
            await self._forward_in_thread(self._sync, scope["method"], url, headers, body, send)
        else:
            if self._async is None:
                self._async = httpx.AsyncClient(timeout=30, trust_env=False)
            await self._forward_on_loop(self._async, scope["method"], url, headers, body, send)

    async def _forward_in_thread(self, client: httpx.Client, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes, send: Send) -> None:
        response, whole = await _in_thread(_open, client, method, url, headers, body)
        if whole is not None:
            await _send_whole(send, response, whole)
            return
        await send(_start(response))
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[bytes | None] = asyncio.Queue()

        def pump() -> None:
            try:
                for piece in response.iter_raw():
                    loop.call_soon_threadsafe(pieces.put_nowait, piece)
            finally:
                response.close()
                loop.call_soon_threadsafe(pieces.put_nowait, None)

        pumped = asyncio.ensure_future(_in_thread(pump))
        ended = False
        while not ended:  # what came meanwhile goes on in one write
            came = [await pieces.get()]
            while not pieces.empty():
                came.append(pieces.get_nowait())
            ended = came[-1] is None
            if ended:
                came.pop()
            if came:
                await send({"type": "http.response.body", "body": b"".join(came), "more_body": True})  # type: ignore[arg-type]
        await pumped
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _forward_on_loop(self, client: httpx.AsyncClient, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes, send: Send) -> None:
        response = await client.send(client.build_request(method, url, headers=headers, content=body), stream=True)
        try:
            if not _streams(response):
                await _send_whole(send, response, b"".join([piece async for piece in response.aiter_raw()]))
                return
            await send(_start(response))
            async for piece in response.aiter_raw():
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()


def _open(client: httpx.Client, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes) -> tuple[httpx.Response, bytes | None]:
    """The upstream's reply to the request, and its bytes as they came unless it is an event stream (None: read it on)."""
    response = client.send(client.build_request(method, url, headers=headers, content=body), stream=True)
    if _streams(response):
        return response, None
    try:
        return response, b"".join(response.iter_raw())
    finally:
        response.close()


def _streams(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


def _start(response: httpx.Response) -> dict[str, Any]:
    headers = [(k, v) for k, v in response.headers.raw if k.decode("latin-1").lower() not in _NOT_BACK]
    return {"type": "http.response.start", "status": response.status_code, "headers": headers}


async def _send_whole(send: Send, response: httpx.Response, content: bytes) -> None:
    """A whole reply's `content` (its bytes as they came: not decoded), with its length."""
    start = _start(response)
    start["headers"] = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"] + [(b"content-length", str(len(content)).encode())]
    await send(start)
    await send({"type": "http.response.body", "body": content, "more_body": False})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("upstream", help="the upstream's URL (its address is used; the path is the request's)")
    parser.add_argument("--client", choices=CLIENTS, default="thread")
    parser.add_argument("--profile", type=Path, metavar="FILE", help="cProfile every thread; their stats to FILE")
    args = parser.parse_args()
    profiles = _profile_threads() if args.profile else []
    with BareProxy(args.upstream, args.client) as proxy:
        print(proxy.port, flush=True)
        cpu = time.process_time()
        sys.stdin.read()
        cpu = time.process_time() - cpu
        if profiles:
            pstats.Stats(*profiles).dump_stats(args.profile)
    print(json.dumps({"cpu": cpu}), flush=True)


def _profile_threads() -> list[cProfile.Profile]:
    """A profile for each thread started from now on (each enables its own: cProfile sees one
    thread), timed by that thread's CPU clock."""
    profiles: list[cProfile.Profile] = []
    run = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)
        profiles.append(profile)
        profile.enable()
        try:
            run(self)
        finally:
            profile.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    return profiles


if __name__ == "__main__":
    main()
