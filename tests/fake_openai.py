"""A chat completions server for tests, on 127.0.0.1, with scripted replies.

Each request takes the next scripted reply. A `say` / `call` reply is sent
streamed (server-sent events) or whole, as the request asks; the fault replies
send an HTTP status, bad JSON, a stream cut in the middle, or hang until the
test releases them. Every request body and its headers are recorded.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


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
            handler.wfile.write(b"40\r\ndata: {\"choi")
            handler.wfile.flush()
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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small writes go out at once (no 40 ms delayed-ACK stalls)
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self.send_json(400, {"error": {"message": "the request body is not JSON"}})
            return
        request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        fake = self.server.fake
        fake.requests.append(request)
        if self.path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        problem = fake.check(request)
        if problem:
            self.send_json(400, {"error": {"message": problem}})
            return
        with fake.lock:
            reply = fake.script.popleft() if fake.script else None
        if reply is None:
            self.send_json(500, {"error": {"message": "no scripted reply left"}})
            return
        if callable(reply) and not isinstance(reply, Reply):
            reply = reply(request)
        if isinstance(reply, (Hang, Drip)):
            fake.hangs.append(reply)
        reply.send(self, request)

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
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI


class FakeOpenAI:
    """Start with `with FakeOpenAI() as server:`; `server.url` is the base URL."""

    def __init__(self) -> None:
        self.script: deque[Reply | Callable[[Request], Reply]] = deque()
        self.requests: list[Request] = []
        self.hangs: list[Hang | Drip] = []
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

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
        return self

    def __exit__(self, *exc: object) -> None:
        for reply in [*self.script, *self.hangs]:
            if isinstance(reply, Hang):
                reply.release.set()
            elif isinstance(reply, Drip):
                reply.stop.set()
        self._server.shutdown()
        self._server.server_close()


def refused_url() -> str:
    """A base URL on a local port where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
