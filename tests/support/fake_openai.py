"""A chat completions server for tests, on 127.0.0.1, with scripted replies: an ASGI
application on uvicorn.

Each request takes the next scripted reply. A `say` / `call` reply is sent
streamed (server-sent events) or whole, as the request asks; the fault replies
send an HTTP status, bad JSON, a stream cut in the middle, or hang until the
test releases them. Every request body and its headers are recorded.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import uvicorn


@dataclass
class Request:
    path: str
    """As requested, with its query."""
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body["messages"]


class Reply:
    def send(self, handler: _Handler, request: Request) -> None:
        raise NotImplementedError


@dataclass
class Answer(Reply):
    """An assistant message: text and/or tool calls, with usage unless `usage` is None."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: tuple[int, int] | None = (100, 20)
    chunk_size: int = 7

    def _calls(self) -> list[dict[str, Any]]:
        return [
            {
                "id": c.get("id", f"call_srv{n}"),
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for n, c in enumerate(self.tool_calls)
        ]

    def _usage(self) -> dict[str, int] | None:
        if self.usage is None:
            return None
        return {"prompt_tokens": self.usage[0], "completion_tokens": self.usage[1], "total_tokens": sum(self.usage)}

    def send(self, handler: _Handler, request: Request) -> None:
        finish = "tool_calls" if self.tool_calls else "stop"
        if not request.body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": self.content}
            if self.tool_calls:
                message["tool_calls"] = self._calls()
            data: dict[str, Any] = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
            if self.usage is not None:
                data["usage"] = self._usage()
            handler.send_json(200, data)
            return
        chunks: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        text = self.content or ""
        for i in range(0, len(text), self.chunk_size):
            chunks.append({"content": text[i : i + self.chunk_size]})
        for n, call in enumerate(self._calls()):
            args = call["function"]["arguments"]
            chunks.append(
                {"tool_calls": [{"index": n, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}]}
            )
            for i in range(0, len(args), 5):
                chunks.append({"tool_calls": [{"index": n, "function": {"arguments": args[i : i + 5]}}]})
        events = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in chunks]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        include_usage = (request.body.get("stream_options") or {}).get("include_usage")
        if include_usage and self.usage is not None:
            events.append({"choices": [], "usage": self._usage()})
        handler.start_stream()
        for event in events:
            handler.send_chunk(f"data: {json.dumps(event)}\n\n")
        handler.send_chunk("data: [DONE]\n\n")
        handler.end_stream()


def say(content: str, usage: tuple[int, int] | None = (100, 20)) -> Answer:
    return Answer(content=content, usage=usage)


def call(name: str, content: str | None = None, usage: tuple[int, int] | None = (100, 20), id: str | None = None, **args: Any) -> Answer:
    """One tool call with JSON-encoded arguments."""
    spec: dict[str, Any] = {"name": name, "arguments": json.dumps(args)}
    if id is not None:
        spec["id"] = id
    return Answer(content=content, tool_calls=[spec], usage=usage)


def calls(*specs: tuple[str, str], content: str | None = None, usage: tuple[int, int] | None = (100, 20)) -> Answer:
    """Several tool calls; each spec is (name, raw arguments text)."""
    return Answer(
        content=content,
        tool_calls=[{"name": n, "arguments": a, "id": f"call_m{i}"} for i, (n, a) in enumerate(specs)],
        usage=usage,
    )


@dataclass
class Status(Reply):
    """An HTTP error with a JSON error body (and headers such as Retry-After)."""

    code: int
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)

    def send(self, handler: _Handler, request: Request) -> None:
        handler.send_json(self.code, {"error": {"message": self.message, "type": "test"}}, self.headers)


@dataclass
class Raw(Reply):
    """Any body with a 200 status (malformed JSON, say)."""

    body: str
    content_type: str = "application/json"

    def send(self, handler: _Handler, request: Request) -> None:
        data = self.body.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", self.content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


@dataclass
class Cut(Reply):
    """A stream that starts a reply and then closes the connection.

    chunked=True cuts inside the chunked encoding (a protocol error for the
    client); chunked=False ends the body cleanly but without a finish.
    """

    content: str = "I will look this"
    chunked: bool = True

    def send(self, handler: _Handler, request: Request) -> None:
        event = {"choices": [{"index": 0, "delta": {"content": self.content}, "finish_reason": None}]}
        line = f"data: {json.dumps(event)}\n\n"
        handler.close_connection = True
        if self.chunked:
            handler.start_stream()
            handler.send_chunk(line)
            handler.send_chunk('data: {"choi')
            handler.cut()
        else:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(line.encode())
            handler.wfile.flush()


@dataclass
class Hang(Reply):
    """Say nothing until the test sets `release` (or the server stops)."""

    release: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)

    def send(self, handler: _Handler, request: Request) -> None:
        self.started.set()
        self.release.wait(30)
        handler.close_connection = True


@dataclass
class Drip(Reply):
    """A 200 whose body comes one byte every `every` seconds for `seconds` in all (`stream`:
    an event stream whose first line never ends). `started` is set at the first byte,
    `completed` once every byte went (never when the reader hung up or `stop` was set);
    `sent` counts the bytes written (a clock for the test: one byte each `every`)."""

    seconds: float = 30.0
    every: float = 0.5
    stream: bool = False
    started: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    completed: bool = False
    sent: int = 0

    def send(self, handler: _Handler, request: Request) -> None:
        handler.close_connection = True
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream" if self.stream else "application/json")
        handler.send_header("Connection", "close")
        handler.end_headers()
        head = b'data: {"choices": [' if self.stream else b'{"id": "x", "choices": ['
        try:
            for n in range(int(self.seconds / self.every)):
                handler.wfile.write(head[n : n + 1] if n < len(head) else b" ")
                handler.wfile.flush()
                self.sent += 1
                self.started.set()
                if self.stop.wait(self.every):
                    return
        except OSError:
            return
        self.completed = True


class _Body:
    """`handler.wfile`: each write is a piece of the response body, sent before it returns."""

    def __init__(self, handler: _Handler) -> None:
        self._handler = handler

    def write(self, data: bytes) -> int:
        self._handler._send({"type": "http.response.body", "body": bytes(data), "more_body": True})
        return len(data)

    def flush(self) -> None:
        pass


class _Handler:
    """What a scripted reply writes its response with, as `http.server`'s handler had it
    (`send_response`, `send_header`, `end_headers`, `wfile`), on a thread of its own: each
    call is an ASGI `send` on the server's loop, waited for (so a slow reader slows the
    writer), and raises BrokenPipeError once the client has gone."""

    def __init__(self, loop: asyncio.AbstractEventLoop, send: Any, gone: threading.Event) -> None:
        self._loop = loop
        self._asgi_send = send
        self._gone = gone
        self._status = 200
        self._headers: list[tuple[bytes, bytes]] = []
        self.started = False
        self.finished = False
        self.close_connection = False
        self.wfile = _Body(self)

    def _send(self, message: dict[str, Any]) -> None:
        if self._gone.is_set():
            raise BrokenPipeError("the client has gone")
        if message["type"] == "http.response.start":
            self.started = True
        elif not message.get("more_body"):
            self.finished = True
        asyncio.run_coroutine_threadsafe(self._asgi_send(message), self._loop).result(30)

    def send_response(self, code: int) -> None:
        self._status, self._headers = code, []

    def send_header(self, name: str, value: str) -> None:
        self._headers.append((name.lower().encode("latin-1"), str(value).encode("latin-1")))

    def end_headers(self) -> None:
        self._send({"type": "http.response.start", "status": self._status, "headers": self._headers})

    def send_json(self, code: int, data: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def start_stream(self) -> None:
        """An event stream without a length: uvicorn sends it chunked."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

    def send_chunk(self, text: str) -> None:
        self.wfile.write(text.encode())

    def end_stream(self) -> None:
        self._send({"type": "http.response.body", "body": b"", "more_body": False})

    def cut(self) -> None:
        """Close the connection in the middle of the body (the client reads a broken stream)."""
        self.finished = True  # the application returns with its response unfinished: uvicorn closes


def _handle(fake: FakeOpenAI, handler: _Handler, raw: bytes, path: str, headers: dict[str, str]) -> None:
    try:
        body = json.loads(raw)
    except json.JSONDecodeError:
        handler.send_json(400, {"error": {"message": "the request body is not JSON"}})
        return
    request = Request(path, headers, body)
    fake.requests.append(request)
    if path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
        handler.send_json(404, {"error": {"message": f"no route {path}"}})
        return
    problem = fake.check(request)
    if problem:
        handler.send_json(400, {"error": {"message": problem}})
        return
    with fake.lock:
        reply = fake.script.popleft() if fake.script else None
    if reply is None:
        handler.send_json(500, {"error": {"message": "no scripted reply left"}})
        return
    if callable(reply) and not isinstance(reply, Reply):
        reply = reply(request)
    if isinstance(reply, (Hang, Drip)):
        fake.hangs.append(reply)
    reply.send(handler, request)


class FakeOpenAI:
    """Start with `with FakeOpenAI() as server:`; `server.url` is the base URL."""

    def __init__(self) -> None:
        self.script: deque[Reply | Callable[[Request], Reply]] = deque()
        self.requests: list[Request] = []
        self.hangs: list[Hang | Drip] = []
        self.lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        config = uvicorn.Config(self._app, interface="asgi3", http="h11", loop="asyncio", lifespan="off", log_config=None,
                                access_log=False, proxy_headers=False, timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._listener]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI application: the request read here, the scripted reply written on a thread."""
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        path = scope["raw_path"].decode("latin-1") + (f"?{scope['query_string'].decode('latin-1')}" if scope["query_string"] else "")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        gone = threading.Event()
        loop = asyncio.get_running_loop()
        handler = _Handler(loop, send, gone)

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = loop.create_task(watch())
        done = loop.create_future()

        def write() -> None:  # a thread of its own: a reply may block (Hang) without holding up others
            try:
                _handle(self, handler, b"".join(chunks), path, headers)
            except OSError:
                pass
            finally:
                loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))

        threading.Thread(target=write, daemon=True).start()
        try:
            await done
        finally:
            watcher.cancel()
        if handler.started and not handler.finished and not gone.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def add(self, *replies: Reply | Callable[[Request], Reply]) -> FakeOpenAI:
        with self.lock:
            self.script.extend(replies)
        return self

    def check(self, request: Request) -> str | None:
        """What a strict server would refuse in the history: tool results that answer no call."""
        open_calls: set[str] = set()
        for m in request.body.get("messages", []):
            if m.get("role") == "assistant":
                if open_calls:
                    return f"tool calls without results: {sorted(open_calls)}"
                open_calls = {c["id"] for c in m.get("tool_calls") or []}
            elif m.get("role") == "tool":
                if m.get("tool_call_id") not in open_calls:
                    return f"tool result for unknown call {m.get('tool_call_id')!r}"
                open_calls.discard(m["tool_call_id"])
            elif open_calls:
                return f"tool calls without results: {sorted(open_calls)}"
        return None

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        for reply in [*self.script, *self.hangs]:
            if isinstance(reply, Hang):
                reply.release.set()
            elif isinstance(reply, Drip):
                reply.stop.set()
        self._server.should_exit = True
        self._thread.join(10)
        self._listener.close()


def refused_url() -> str:
    """A base URL on a local port where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
