"""The gateway's HTTP side: a small asyncio server on h11.

Why not a framework: h11 already comes with httpx (no new dependency), the
server needs two routes, and every layer between the socket and the gateway
adds latency to each model turn. h11 does the HTTP/1.1 parsing and framing
(keep-alive, Content-Length, chunked bodies); a server-sent-event stream is
one complete body sent with the headers of an event stream, so a client sees
exactly the bytes the upstream or the gateway wrote. The gateway's work (the
upstream call, waiting for the operator) runs in a thread; while a response
is held, the server watches the connection and reports an agent that left.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import h11

from engine.gateway.controller import Gateway
from engine.gateway.wire import Response, error_response, models_list

DEFAULT_MAX_BODY = 10 * 1024 * 1024
_READ = 65536


class GatewayServer:
    """Serves `POST /v1/chat/completions` and `GET /v1/models` for one `Gateway`."""

    def __init__(self, gateway: Gateway, host: str, port: int, *, token: str | None = None, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.gateway = gateway
        self.host = host
        self.port = port
        self.token = token
        self.max_body = max_body
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="gateway")

    # -- life ------------------------------------------------------------------

    def start(self) -> None:
        """Listen in a background thread; raises OSError when the address cannot be used."""
        self._thread = threading.Thread(target=self._main, name="gateway-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(asyncio.start_server(self._connection, self.host, self.port))
            self.port = self._server.sockets[0].getsockname()[1]
        except OSError as exc:
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    def close(self) -> None:
        loop = self._loop
        if loop is None or self._server is None:
            return

        async def shut() -> None:
            self._server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

        try:
            asyncio.run_coroutine_threadsafe(shut(), loop).result(5)
        except Exception:  # the loop is already gone
            pass
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    # -- connections -----------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        try:
            while True:
                request, body, too_big = await self._read_request(conn, reader)
                if request is None:
                    return
                if too_big:
                    response = error_response(413, f"agent-tui gateway: the request body is over {self.max_body} bytes")
                else:
                    response = await self._answer(request, body, reader)
                if response is None:
                    return
                keep = await self._send(conn, writer, response)
                if not keep or too_big:
                    return
                conn.start_next_cycle()
        except (h11.RemoteProtocolError, ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            return
        finally:
            writer.close()

    async def _read_request(self, conn: h11.Connection, reader: asyncio.StreamReader) -> tuple[h11.Request | None, bytes, bool]:
        request: h11.Request | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(_READ)
                conn.receive_data(data)
                if not data and conn.their_state is h11.IDLE:
                    return None, b"", False
                continue
            if isinstance(event, h11.Request):
                request = event
                length = _header(event, b"content-length")
                if length is not None and length.isdigit() and int(length) > self.max_body:
                    return request, b"", True
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > self.max_body:
                    return request, b"", True
                chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return request, b"".join(chunks), False
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None, b"", False

    async def _answer(self, request: h11.Request, body: bytes, reader: asyncio.StreamReader) -> Response | None:
        path = request.target.split(b"?", 1)[0].rstrip(b"/")
        if self.token is not None:
            given = _header(request, b"authorization") or ""
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return error_response(401, "agent-tui gateway: this gateway needs its token as the bearer token", "authentication_error")
        if path in (b"/v1/models", b"/models") and request.method == b"GET":
            return models_list(self.gateway.model_names())
        if path not in (b"/v1/chat/completions", b"/chat/completions"):
            return error_response(404, f"agent-tui gateway: no route {request.method.decode()} {request.target.decode(errors='replace')}")
        if request.method != b"POST":
            return error_response(405, "agent-tui gateway: use POST for /v1/chat/completions")
        try:
            data: Any = json.loads(body)
        except (ValueError, RecursionError) as exc:
            return error_response(400, f"agent-tui gateway: the request body is not valid JSON ({exc})")
        loop = asyncio.get_running_loop()
        future = await loop.run_in_executor(self._pool, self.gateway.submit, data)
        if future.done():
            return future.result()
        waiting = asyncio.wrap_future(future)
        gone = asyncio.ensure_future(reader.read(1))
        done, _ = await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
        if waiting in done:
            gone.cancel()
            try:
                await gone
            except asyncio.CancelledError:
                pass
            try:
                return waiting.result()
            except asyncio.CancelledError:
                return error_response(409, "agent-tui gateway: a newer request took this one's place", "superseded")
        waiting.cancel()
        await loop.run_in_executor(self._pool, self.gateway.disconnected, future)
        return None

    async def _send(self, conn: h11.Connection, writer: asyncio.StreamWriter, response: Response) -> bool:
        headers = [
            (b"content-type", response.content_type.encode()),
            (b"content-length", str(len(response.body)).encode()),
        ]
        if response.content_type == "text/event-stream":
            headers.append((b"cache-control", b"no-cache"))
        headers.extend((k.encode(), v.encode()) for k, v in response.headers.items())
        out = conn.send(h11.Response(status_code=response.status, headers=headers, reason=_reason(response.status)))
        out += conn.send(h11.Data(data=response.body))
        out += conn.send(h11.EndOfMessage())
        writer.write(out)
        await writer.drain()
        return conn.our_state is h11.DONE and conn.their_state is h11.DONE


def _header(request: h11.Request, name: bytes) -> str | None:
    for key, value in request.headers:
        if key == name:
            return value.decode("latin-1")
    return None


def _reason(status: int) -> bytes:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""
