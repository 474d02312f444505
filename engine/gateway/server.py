"""The gateway's HTTP side: a small threaded server on h11.

Why not a framework: h11 already comes with httpx (no new package), the
server needs two routes, and every layer between the socket and the gateway
adds latency to each model turn. h11 does the HTTP/1.1 parsing and framing
(keep-alive, Content-Length and chunked request bodies); a server-sent-event
stream is one complete body sent with the headers of an event stream, so a
client sees exactly the bytes the upstream or the gateway wrote. One thread
per connection does the whole request: the gateway's work (the upstream
call) runs on it, so a request let through costs no hand-off between
threads; a held request waits on its future while the thread watches the
socket and reports an agent that left.
"""

from __future__ import annotations

import hmac
import json
import select
import socket
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import h11

from engine.gateway.controller import Gateway
from engine.gateway.wire import Response, error_response, models_list

DEFAULT_MAX_BODY = 10 * 1024 * 1024
_READ = 65536
_WATCH = 0.1
"""Seconds between looks at the socket of a held request."""


class _Closed(Exception):
    """The agent closed the connection."""


class GatewayServer:
    """Serves `POST /v1/chat/completions` and `GET /v1/models` for one `Gateway`."""

    def __init__(self, gateway: Gateway, host: str, port: int, *, token: str | None = None, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.gateway = gateway
        self.host = host
        self.port = port
        self.token = token
        self.max_body = max_body
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closing = False

    # -- life ------------------------------------------------------------------

    def start(self) -> None:
        """Listen and serve in background threads; raises OSError when the address cannot be used."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self.port))
            listener.listen(64)
        except OSError:
            listener.close()
            raise
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, name="gateway-accept", daemon=True).start()

    def _accept(self) -> None:
        while not self._closing:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._connections.add(sock)
            threading.Thread(target=self._connection, args=(sock,), name="gateway-connection", daemon=True).start()

    def close(self) -> None:
        self._closing = True
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        with self._lock:
            for sock in list(self._connections):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    # -- connections -----------------------------------------------------------

    def _connection(self, sock: socket.socket) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        try:
            while not self._closing:
                request, body, too_big = self._read_request(conn, sock)
                if request is None:
                    return
                if too_big:
                    response = error_response(413, f"agent-tui gateway: the request body is over {self.max_body} bytes")
                else:
                    response = self._answer(request, body, sock)
                if not self._send(conn, sock, response) or too_big:
                    return
                conn.start_next_cycle()
        except (h11.RemoteProtocolError, OSError, _Closed):
            return
        finally:
            with self._lock:
                self._connections.discard(sock)
            sock.close()

    def _read_request(self, conn: h11.Connection, sock: socket.socket) -> tuple[h11.Request | None, bytes, bool]:
        request: h11.Request | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = sock.recv(_READ)
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
            else:  # ConnectionClosed, or PAUSED (a pipelined request: one at a time)
                return None, b"", False

    def _answer(self, request: h11.Request, body: bytes, sock: socket.socket) -> Response:
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
        return self._wait(self.gateway.submit(data), sock)

    def _wait(self, future: Future[Response], sock: socket.socket) -> Response:
        """The response once decided; an agent that leaves meanwhile is reported (`_Closed`)."""
        while True:
            try:
                return future.result(timeout=_WATCH)
            except FutureTimeout:
                pass
            except Exception:  # cancelled: a newer request took this one's place
                return error_response(409, "agent-tui gateway: a newer request took this one's place", "superseded")
            readable, _, _ = select.select([sock], [], [], 0)
            if readable and not sock.recv(1, socket.MSG_PEEK):
                self.gateway.disconnected(future)
                raise _Closed()

    def _send(self, conn: h11.Connection, sock: socket.socket, response: Response) -> bool:
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
        sock.sendall(out)
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
