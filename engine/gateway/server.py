"""The gateway's HTTP side: an ASGI application served by uvicorn in a background thread.

uvicorn does the HTTP/1.1 work (parsing, keep-alive, HEAD, pipelining, the
accept loop that survives running out of file descriptors, graceful
shutdown); this module is the application: who may ask (the listening
address as the `Host`, no browser `Origin` unless allowed, the bearer token),
the routes (each wire's, `engine.wires`: `POST /v1/chat/completions`,
`POST /v1/messages`, its `count_tokens` passed through, `POST /v1/responses`,
`POST /v1beta/models/MODEL:generateContent` and `:streamGenerateContent`; `GET /v1/models`,
`GET`/`HEAD /` (uvicorn sends a HEAD's headers alone); any other route a 404
in the error shape of the wire the request looks like),
the body (JSON, at most `max_body` bytes: more is a 413, read to its end so
the client sees the answer) and the wait: the gateway's work (the upstream
call) runs on a worker thread, and a held request waits on its future while
the application watches for the agent leaving (`http.disconnect`), which it
reports to the gateway. Connections are bounded (`limit_concurrency`: the
rest get 503), an idle one is closed after `keep_alive` seconds, and the
operator is told on stderr when a limit is hit.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import ipaddress
import logging
import queue
import socket
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any, Awaitable, Callable

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from engine.gateway.controller import Gateway
from engine.gateway.early import EarlyStream
from engine.wires import Wire, anthropic, chat, gemini, passed_route, wire_for_path
from engine.wires.chat import models_list
from engine.wires.neutral import Response, json_from_wire

DEFAULT_MAX_BODY = 10 * 1024 * 1024
DEFAULT_MAX_CONNECTIONS = 100
DEFAULT_KEEP_ALIVE = 5.0
_MODELS = ("/v1/models", "/models")
_THREAD = "gateway-http"
_SERVERS = itertools.count(1)
"""Numbers the servers' threads, so each server's notices are counted on their own."""
_MAX_HEAD = 64 * 1024
"""The most bytes of a request's line and headers (h11's limit, which the gateway had before
httptools, which sets none): more is a 400 and the connection closed."""
_LOST = "agent_tui.connection_lost"
"""Set in a request's scope when its connection is lost (see `_Protocol`)."""

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class _Protocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol on httptools (a C parser: h11's pure Python was most of a
    released turn's added latency) with four additions: no Nagle delay (the headers and
    body are two writes), a connection that never sends a request is closed after the
    keep-alive timeout (uvicorn arms it only after a response), a request's head is at most
    `_MAX_HEAD` bytes, and a lost connection is marked in its request's scope, so the
    application knows whether a response it sent was handed to a live connection (uvicorn
    drops one sent to a lost connection silently)."""

    _in_head = True
    """Between requests or in one's line and headers (until they are complete)."""
    _head_bytes = 0
    _heads = 0
    """How many requests' headers were complete."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_OneWrite(transport, self.loop))  # type: ignore[arg-type]
        sock = transport.get_extra_info("socket")
        if sock is not None:  # asyncio sets it only for a listener made with IPPROTO_TCP
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def data_received(self, data: bytes) -> None:
        reading_head, heads = self._in_head, self._heads
        super().data_received(data)
        if reading_head and self._heads == heads and not self.transport.is_closing():  # no head ended in `data`
            self._head_bytes += len(data)
            if self._head_bytes > _MAX_HEAD:
                self.send_400_response(f"the request's line and headers are over {_MAX_HEAD // 1024} KB")

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        self._heads += 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head = True
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.scope is not None:
            self.scope[_LOST] = True  # type: ignore[literal-required]
        super().connection_lost(exc)


class _OneWrite:
    """A connection's transport whose writes made in one turn of the event loop go out as one
    (uvicorn writes a response's head and its body apart: with no Nagle delay, two segments and
    two wake-ups of the agent); everything else is the transport's own."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self._flush)
        self._held.append(data)

    def _flush(self) -> None:
        held, self._held = self._held, []
        if held:
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _Notice(logging.Handler):
    """uvicorn's and asyncio's warnings (a concurrency limit hit, accept() out of file
    descriptors) as one line on stderr for the operator, each at most every few seconds."""

    _EVERY = 5.0

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._last: dict[tuple[str, str], float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        thread = record.threadName or ""
        if not thread.startswith(_THREAD):  # another event loop of the process (the cockpit's)
            return
        text = _notice_text(record)
        now = time.monotonic()
        if now - self._last.get((thread, text), -self._EVERY) < self._EVERY:  # each server's own
            return
        self._last[(thread, text)] = now
        try:
            print(f"agent-tui gateway: {text}", file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


def _notice_text(record: logging.LogRecord) -> str:
    message = record.getMessage()
    if message.startswith("Exceeded concurrency limit"):
        return "too many connections at once: new requests get 503 until some close"
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, OSError) and "accept" in message:
        return f"cannot accept connections ({exc.strerror or exc}): retrying each second; idle connections close after the keep-alive timeout"
    return message.splitlines()[0] if message else record.levelname


_NOTICE = _Notice()


def _listen_for_notices() -> None:
    """Put the notice handler on uvicorn's and asyncio's loggers (again, if a logging
    configuration of the process, uvicorn's own default among them, took it off)."""
    for name in ("uvicorn.error", "asyncio"):
        logger = logging.getLogger(name)
        if _NOTICE not in logger.handlers:
            logger.addHandler(_NOTICE)


_listen_for_notices()


class GatewayServer:
    """Serves the gateway's routes for one `Gateway` on `host:port` (port 0: a free one)."""

    def __init__(
        self,
        gateway: Gateway,
        host: str,
        port: int,
        *,
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        allow_origins: tuple[str, ...] | list[str] = (),
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        keep_alive: float = DEFAULT_KEEP_ALIVE,
    ) -> None:
        self.gateway = gateway
        self.host = host
        self.port = port
        self.token = token
        self.max_body = max_body
        self.allow_origins = frozenset(o.rstrip("/").lower() for o in allow_origins)
        self.max_connections = max_connections
        self.keep_alive = keep_alive
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._hosts: frozenset[str] = frozenset()

    # -- life ------------------------------------------------------------------

    def start(self) -> None:
        """Listen and serve in a background thread; raises OSError when the address cannot be used."""
        _listen_for_notices()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self.port))
            listener.listen(128)
        except OSError:
            listener.close()
            raise
        self.port = listener.getsockname()[1]
        self._hosts = _allowed_hosts(self.host, self.port, token=self.token is not None)
        config = uvicorn.Config(
            self,
            http=_Protocol,
            interface="asgi3",
            loop="asyncio",
            proxy_headers=False,
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,
            limit_concurrency=self.max_connections,
            timeout_keep_alive=self.keep_alive,  # type: ignore[arg-type]
            timeout_graceful_shutdown=1,
        )
        server = uvicorn.Server(config)
        self._server = server
        ready = threading.Event()

        def serve() -> None:
            async def main() -> None:
                ready_task = asyncio.get_running_loop().create_task(_when(lambda: server.started, ready.set))
                try:
                    await server.serve(sockets=[listener])  # off the main thread: no signal handlers
                finally:
                    ready_task.cancel()
                    ready.set()

            try:
                asyncio.run(main())
            except BaseException as exc:  # SystemExit from a failed start included: the operator is told
                print(f"agent-tui gateway: the HTTP server stopped: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            finally:
                listener.close()

        self._thread = threading.Thread(target=serve, name=f"{_THREAD}-{next(_SERVERS)}", daemon=True)
        self._thread.start()
        ready.wait(30)

    def close(self) -> None:
        """Stop serving: open connections are closed once their response is sent (at most about a second)."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)

    @property
    def open_connections(self) -> int:
        """The agents' connections open now."""
        return len(self._server.server_state.connections) if self._server is not None else 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    # -- the application ---------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        early: list[_EarlyConnection] = []
        response, on_sent = await self._answer(scope, receive, send, early)
        if early and await early[0].finish():
            await self._send_rest(scope, send, response, on_sent, early[0].wire)
        else:
            await self._send(scope, send, response, on_sent)

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, early: list[_EarlyConnection]
    ) -> tuple[Response | None, Callable[[bool], None] | None]:
        """The response, and what to tell the gateway once it is sent; for a wire whose streams
        append, the connection that may get a streamed reply's first text before (into `early`)."""
        headers = _headers(scope)
        method, path = scope["method"], scope["path"].rstrip("/") or "/"
        routed = wire_for_path(path)
        wire = routed or _looks_like(path, headers)
        refused = self._refusal(headers, wire)
        if refused is not None:
            return refused, None
        if path == "/" and method in ("GET", "HEAD"):
            return Response(200, b"", "text/plain; charset=utf-8"), None
        if path in _MODELS and method in ("GET", "HEAD"):
            return models_list(self.gateway.model_names()), None
        if routed is None:
            shown = scope["path"].encode("ascii", "backslashreplace").decode()[:200]
            return wire.error_response(404, f"agent-tui gateway: no route {method} {shown}"), None
        if method != "POST":
            return wire.error_response(405, f"agent-tui gateway: use POST for {path}"), None
        if headers.get("content-type", "").split(";", 1)[0].strip().lower() != "application/json":
            return wire.error_response(415, "agent-tui gateway: the request body must be JSON, sent with Content-Type: application/json"), None
        body = await self._body(headers, receive)
        if body is None:
            return wire.error_response(413, f"agent-tui gateway: the request body is over {self.max_body} bytes"), None
        passed = passed_route(wire, path)
        if passed is not None:
            return await _in_thread(self.gateway.pass_through, wire, passed, body, headers), None
        try:
            data: Any = json_from_wire(body)
        except (ValueError, RecursionError) as exc:
            return wire.error_response(400, f"agent-tui gateway: the request body is not valid JSON ({exc})"), None
        connection = _EarlyConnection(asyncio.get_running_loop(), send, wire) if wire.APPENDS_STREAMS else None
        if connection is not None:
            early.append(connection)
        future = await _in_thread(self.gateway.submit, data, wire, headers, path, connection.stream if connection is not None else None)
        response = await self._wait(future, receive, wire)
        return response, (response.on_sent if response is not None else None)

    def _refusal(self, headers: dict[str, str], wire: Wire) -> Response | None:
        """A request the gateway does not serve: another `Host` (a page's DNS rebinding), a
        browser's `Origin` not allowed, or no token when one is set (the bearer token, or
        Anthropic's `x-api-key`, Gemini's `x-goog-api-key`); answered in the error shape of `wire`."""
        error_response = wire.error_response
        host = headers.get("host", "").lower()
        if self._hosts and host not in self._hosts:
            shown = host.encode("ascii", "backslashreplace").decode()[:100] or "none"
            return error_response(421, f"agent-tui gateway: the Host header ({shown}) is not this gateway's address {self.host}:{self.port}", "invalid_request_error", "wrong_host")
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self.allow_origins and "*" not in self.allow_origins:
            shown = origin.encode("ascii", "backslashreplace").decode()[:100]
            return error_response(403, f"agent-tui gateway: requests from web pages are refused (Origin {shown}); allow one with --allow-origin", "invalid_request_error", "origin_refused")
        if self.token is not None:
            given = headers.get("authorization", "")
            keyed = headers.get("x-api-key", "") or headers.get("x-goog-api-key", "")
            if not hmac.compare_digest(given.encode("latin-1"), f"Bearer {self.token}".encode()) and not hmac.compare_digest(
                keyed.encode("latin-1"), self.token.encode()
            ):
                return error_response(401, "agent-tui gateway: this gateway needs its token as the bearer token (or as x-api-key)", "authentication_error")
        return None

    async def _body(self, headers: dict[str, str], receive: Receive) -> bytes | None:
        """The request body, or None when it is over `max_body` (the rest is read and dropped
        by uvicorn after the answer, so a client that sends it whole still reads the 413)."""
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b""
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _wait(self, future: Future[Response], receive: Receive, wire: Wire) -> Response | None:
        """The response once decided; None when the agent left first (reported to the gateway)."""
        if future.done():
            return _result(future, wire)
        loop = asyncio.get_running_loop()
        decided = asyncio.Event()
        future.add_done_callback(lambda _: _wake(loop, decided))
        left = loop.create_task(_disconnect(receive))
        done = loop.create_task(decided.wait())
        try:
            await asyncio.wait((left, done), return_when=asyncio.FIRST_COMPLETED)
        finally:
            done.cancel()
        if future.done():
            left.cancel()
            return _result(future, wire)
        await _in_thread(self.gateway.disconnected, future)
        return None

    async def _send(self, scope: Scope, send: Send, response: Response | None, on_sent: Callable[[bool], None] | None) -> None:
        if response is None or scope.get(_LOST):
            _report(on_sent, False)
            return
        headers = [
            (b"content-type", response.content_type.encode("latin-1")),
            (b"content-length", str(len(response.body)).encode()),
        ]
        if response.content_type == "text/event-stream":
            headers.append((b"cache-control", b"no-cache"))
        headers.extend((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.items())
        try:
            await send({"type": "http.response.start", "status": response.status, "headers": headers})
            await send({"type": "http.response.body", "body": response.body, "more_body": False})
        except Exception:
            _report(on_sent, False)
            raise
        _report(on_sent, not scope.get(_LOST), response.sent_now)

    async def _send_rest(self, scope: Scope, send: Send, response: Response | None, on_sent: Callable[[bool], None] | None, wire: Wire) -> None:
        """End a response whose first text went before it was decided (`_EarlyConnection`): the rest
        of the reply, or a failure as an error event of the stream (its status was sent as 200)."""
        if response is None:
            body = b""
        elif response.status == 200:
            body = response.rest if response.rest is not None else response.body
        else:
            body = wire.stream_error(response.body)
        try:
            await send({"type": "http.response.body", "body": body, "more_body": False})
        except Exception:
            _report(on_sent, False)
            raise
        _report(on_sent, response is not None and not scope.get(_LOST), response.sent_now if response is not None else None)


class _EarlyConnection:
    """The agent's connection while its streamed request is held: the text the gateway sends before
    the reply is decided (`engine.gateway.early`, pushed from the gateway's thread) starts a 200
    event stream on it, without a length; `finish` says whether it did, once those bytes are sent."""

    def __init__(self, loop: asyncio.AbstractEventLoop, send: Send, wire: Wire) -> None:
        self._loop = loop
        self._send = send
        self.wire = wire
        self._chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._pushed: list[bytes] = []
        """Pieces pushed that the loop has not taken yet (a wake-up of the loop is on its way)."""
        self._pushed_lock = threading.Lock()
        self.stream = EarlyStream(self._push)

    def _push(self, data: bytes) -> None:
        """From the gateway's thread: `data` to the agent; the pieces of one burst (the loop has
        not taken the first yet) go with one wake-up of the loop."""
        with self._pushed_lock:
            self._pushed.append(data)
            if len(self._pushed) > 1:
                return
        try:
            self._loop.call_soon_threadsafe(self._take)
        except RuntimeError:  # the server stopped meanwhile
            pass

    def _take(self) -> None:
        with self._pushed_lock:
            pushed, self._pushed = self._pushed, []
        self._chunks.put_nowait(b"".join(pushed))
        if self._task is None:
            self._task = self._loop.create_task(self._run())

    async def _run(self) -> None:
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        while (data := await self._chunks.get()) is not None:
            await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def finish(self) -> bool:
        if self._task is None:
            return False
        self._chunks.put_nowait(None)
        try:
            await self._task
        except Exception:  # the connection went: the rest is reported as not sent
            pass
        return True


def _report(on_sent: Callable[[bool], None] | None, sent: bool, sent_now: Callable[[], bool] | None = None) -> None:
    """Tell the gateway whether the response reached the agent: on the loop when its `sent_now`
    can record it without waiting, else off the event loop (the callback takes the conversation's
    lock, which a request's upstream call may hold for long), without waiting for it: nothing on
    the loop needs its end, and a hand-off back to the loop is saved."""
    if on_sent is None:
        return
    if sent and sent_now is not None:
        try:
            if sent_now():
                return
        except Exception as exc:  # the server keeps serving whatever the callback does
            print(f"agent-tui gateway: reporting a sent response failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return
    _WORKERS.run(lambda: _report_sent(on_sent, sent))


def _report_sent(on_sent: Callable[[bool], None] | None, sent: bool) -> None:
    if on_sent is None:
        return
    try:
        on_sent(sent)
    except Exception as exc:  # the server keeps serving whatever the callback does
        print(f"agent-tui gateway: reporting a sent response failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def _wake(loop: asyncio.AbstractEventLoop, decided: asyncio.Event) -> None:
    try:
        loop.call_soon_threadsafe(decided.set)
    except RuntimeError:  # the server stopped meanwhile: nobody waits any more
        pass


def _result(future: Future[Response], wire: Wire) -> Response:
    if future.cancelled() or future.exception() is not None:  # a newer request took this one's place
        return wire.error_response(409, "agent-tui gateway: a newer request took this one's place", "superseded")
    return future.result()


class _Workers:
    """Daemon threads for the gateway's blocking work (its locks, the upstream call), kept
    between requests: a thread started per request costs its start and a hand-off more on
    every turn. One more starts when none is idle (a held request keeps its thread), and one
    idle for `IDLE` seconds ends. Daemons: a thread left blocked never holds up the exit."""

    IDLE = 30.0

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        """Threads waiting for a job, less the jobs queued for them."""

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            taken = self._idle > 0
            if taken:
                self._idle -= 1
        self._jobs.put(job)
        if not taken:
            threading.Thread(target=self._work, name="gateway-request", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.IDLE)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # idle with no job meant for it: this thread ends
                        self._idle -= 1
                        return
                continue  # a job is queued for it
            job()
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()


async def _in_thread(work: Callable[..., Any], *args: Any) -> Any:
    """`work(*args)` on one of the gateway's worker threads (`_Workers`), awaited."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)

    def run() -> None:
        try:
            value, error = work(*args), None
        except BaseException as exc:
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop closed meanwhile
            pass

    _WORKERS.run(run)
    return await done


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _when(condition: Callable[[], bool], then: Callable[[], None]) -> None:
    while not condition():
        await asyncio.sleep(0.005)
    then()


def _looks_like(path: str, headers: dict[str, str]) -> Wire:
    """The wire a request off every route is most likely meant for (its error shape): Anthropic's
    or Gemini's when it has that API's headers or path, else chat completions (whose error body
    the Responses API shares)."""
    if "anthropic-version" in headers or "x-api-key" in headers or path.startswith(("/v1/messages", "/messages")):
        return anthropic
    if "x-goog-api-key" in headers or path.startswith("/v1beta/"):
        return gemini
    return chat


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


def _allowed_hosts(host: str, port: int, *, token: bool) -> frozenset[str]:
    """The `Host` values a request may carry: the listening address, and for a loopback
    address also `localhost` and the loopback literals. Empty (any) off loopback when a
    token is set (required there): agents may name the machine as they like, and a page
    cannot send the token; and for a wildcard address, which has no one name."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    loopback = host == "localhost" or (address is not None and address.is_loopback)
    if (address is not None and address.is_unspecified) or (token and not loopback):
        return frozenset()
    names = {f"[{host}]" if ":" in host else host}
    if loopback:
        names |= {"localhost", "127.0.0.1", "[::1]"}
    allowed = {f"{n.lower()}:{port}" for n in names}
    if port == 80:
        allowed |= {n.lower() for n in names}
    return frozenset(allowed)
