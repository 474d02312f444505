"""The gateway's HTTP side under attack: a web page, HEAD, an oversize body sent whole, idle
and too many connections, running out of file descriptors, an upstream that drips, and
the report of a response handed to the agent (`Response.on_sent`)."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from engine.gateway import DEFAULT_MAX_BODY, Gateway, GatewayServer, Upstream
from engine.gateway.client import UpstreamClient
from engine.wires.neutral import Response
from tests.support.fake_openai import Drip, FakeOpenAI, Status, say
from tests.support.gateway_harness import gateway
from tests.support.waiting import wait_for

USER = [{"role": "user", "content": "hi"}]
BODY = {"model": "m", "messages": USER}
JSON = {"Content-Type": "application/json"}


def _post(server: GatewayServer, headers: dict[str, str], body: Any = BODY, timeout: float = 30) -> httpx.Response:
    return httpx.post(server.url + "/chat/completions", content=json.dumps(body).encode(), headers=headers, timeout=timeout)




# -- cross-site requests ---------------------------------------------------------


def test_a_web_page_cannot_drive_the_loopback_gateway(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (_gw, server):
        rebound = _post(server, {**JSON, "Host": "evil.example"})
        assert rebound.status_code == 421 and "Host header (evil.example)" in rebound.json()["error"]["message"]
        cross = _post(server, {**JSON, "Origin": "https://evil.example"})
        assert cross.status_code == 403 and "--allow-origin" in cross.json()["error"]["message"]
        plain = _post(server, {"Content-Type": "text/plain"})
        assert plain.status_code == 415 and "application/json" in plain.json()["error"]["message"]
        form = _post(server, {"Content-Type": "application/x-www-form-urlencoded"})
        assert form.status_code == 415
        assert fake.requests == []
        fake.add(say("hi"))
        assert _post(server, JSON).status_code == 200  # httpx and the openai client send the Host, no Origin
        assert _post(server, {**JSON, "Host": f"localhost:{server.port}"}).status_code == 200


def test_an_allowed_origin_is_served(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        gw = Gateway([Upstream("fake", fake.url)], out=tmp_path / "g.jsonl", headless=True, mode="continue")
        server = GatewayServer(gw, "127.0.0.1", 0, allow_origins=["https://tool.example"])
        server.start()
        try:
            fake.add(say("hi"))
            assert _post(server, {**JSON, "Origin": "https://tool.example"}).status_code == 200
            assert _post(server, {**JSON, "Origin": "https://other.example"}).status_code == 403
        finally:
            gw.stop("the test ended")
            server.close()


def test_allow_origin_is_a_repeatable_gateway_flag(tmp_path: Path) -> None:
    from tui.cli import build_parser

    args = build_parser().parse_args(["gateway", "--upstream", "http://127.0.0.1:9/v1", "--allow-origin", "https://a.example", "--allow-origin", "https://b.example"])
    assert args.allow_origin == ["https://a.example", "https://b.example"]


# -- HEAD, GET /, unknown routes, 413 ------------------------------------------------


def test_the_gateway_parses_http_in_c() -> None:
    """uvicorn's httptools protocol (a pinned dependency), not its pure-Python h11 one, which
    was most of a released turn's added latency."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from engine.gateway import server

    assert issubclass(server._Protocol, HttpToolsProtocol)


def test_headers_over_64_kb_are_refused_and_the_connection_closed(tmp_path: Path) -> None:
    """A request whose line and headers go on past 64 KB (one endless header, or many) gets a 400
    and its connection is closed: the gateway never keeps more of a request's head than that."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (_, server):
        for endless in (b"X-Pad: " + b"a" * 200_000, b"".join(b"X-Pad-%d: %s\r\n" % (n, b"a" * 1000) for n in range(200))):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                try:
                    sock.sendall(endless)
                except OSError:
                    pass  # closed while sending: the answer is already there to read
                got = b""
                try:
                    while chunk := sock.recv(4096):
                        got += chunk
                except OSError:
                    pass
            assert got.startswith(b"HTTP/1.1 400"), got[:200]
        assert httpx.get(f"http://127.0.0.1:{server.port}/", timeout=10).status_code == 200
        fake.add(say("ok"))
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 100_000}]}).encode()
        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\nConnection: close\r\n" % server.port
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)  # a long body in the same write as the head
            got = b""
            while chunk := sock.recv(65536):
                got += chunk
        assert got.startswith(b"HTTP/1.1 200"), got[:200]


def test_head_and_get_of_the_root_answer_without_a_body_and_the_connection_goes_on(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (_gw, server):
        root = server.url.removesuffix("/v1") + "/"
        with httpx.Client(timeout=10) as client:
            head = client.head(root)
            assert head.status_code == 200 and head.content == b""
            got = client.get(root)
            assert got.status_code == 200 and got.content == b""
            assert client.head(server.url + "/models").status_code == 200
            models = client.get(server.url + "/models")  # the same connection: nothing was left on it
            assert models.status_code == 200 and models.json()["object"] == "list"
            missing = client.get(root + "nowhere")
            assert missing.status_code == 404
            assert missing.json()["error"]["type"] == "invalid_request_error" and "no route GET /nowhere" in missing.json()["error"]["message"]


def test_an_oversize_body_sent_whole_gets_a_readable_413(tmp_path: Path) -> None:
    """As curl or the standard library send it: the whole body, then read the answer
    (httpx would read an early answer when its write fails, hiding a reset)."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path, max_body=DEFAULT_MAX_BODY) as (_gw, server):
        big = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * (11 * 1024 * 1024)}]}).encode()
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        try:
            connection.request("POST", "/v1/chat/completions", body=big, headers=JSON)
            response = connection.getresponse()
            assert response.status == 413
            assert f"over {DEFAULT_MAX_BODY} bytes" in json.loads(response.read())["error"]["message"]
        finally:
            connection.close()
        assert fake.requests == []


# -- connections -------------------------------------------------------------------


def test_an_idle_connection_is_closed(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (_gw, server):
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as idle:
            assert idle.recv(1) == b""  # the gateway hung up (its keep-alive timeout), it did not wait forever


def _hit_the_connection_limit(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        gw = Gateway([Upstream("fake", fake.url)], out=tmp_path / "g.jsonl")
        server = GatewayServer(gw, "127.0.0.1", 0, max_connections=2, keep_alive=120.0)  # the idle two stay for the check
        server.start()
        try:
            idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
            try:
                wait_for(lambda: httpx.get(server.url + "/models", timeout=10).status_code == 503, "503 while the descriptors run out", timeout=20)
            finally:
                for sock in idle:
                    sock.close()
            wait_for(lambda: httpx.get(server.url + "/models", timeout=10).status_code == 200, "200 again", timeout=20)
        finally:
            gw.stop("the test ended")
            server.close()


def test_connections_are_bounded_and_the_operator_is_told(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _hit_the_connection_limit(tmp_path)
    assert "agent-tui gateway: too many connections at once" in capfd.readouterr().err


def test_each_gateway_of_a_process_tells_of_its_own_limit(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The notices are kept to one every few seconds; a second gateway in the same process (a
    test run, a program embedding two) still tells of its own."""
    for n in (1, 2):
        (tmp_path / str(n)).mkdir()
        _hit_the_connection_limit(tmp_path / str(n))
        assert "agent-tui gateway: too many connections at once" in capfd.readouterr().err, f"gateway {n}"


_LOW_LIMIT = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    from engine.gateway import Gateway, GatewayServer, Upstream
    gw = Gateway([Upstream("up", "http://127.0.0.1:9/v1")], out=sys.argv[1])
    server = GatewayServer(gw, "127.0.0.1", 0, keep_alive=1.0)
    server.start()
    print(server.port, flush=True)
    sys.stdin.read()
    server.close()
    """
)


def test_running_out_of_file_descriptors_does_not_make_the_gateway_deaf(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _LOW_LIMIT, str(tmp_path / "g.jsonl")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        port = int(proc.stdout.readline())
        url = f"http://127.0.0.1:{port}/v1/models"
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]  # more than the 64 descriptors
        for sock in idle:
            sock.close()

        def answers() -> bool:
            try:
                return httpx.get(url, timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, "the gateway to answer", timeout=30)
    finally:
        proc.stdin.close()
        proc.wait(30)
    err = proc.stderr.read()
    assert "agent-tui gateway: cannot accept connections" in err, err


# -- the upstream's timeout ---------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_an_upstream_that_drips_is_cut_at_the_timeout(tmp_path: Path, stream: bool) -> None:
    drip = Drip(seconds=30, every=0.5, stream=stream)
    with FakeOpenAI() as fake, gateway(fake, tmp_path, timeout=2.0, headless=True, mode="continue") as (_gw, server):
        fake.add(drip)
        response = _post(server, JSON, {**BODY, "stream": stream}, timeout=60)
        assert response.status_code == 504, response.text
        assert "did not answer in time" in response.json()["error"]["message"]
        assert not drip.completed


def test_a_stream_is_bounded_in_all_by_its_own_limit() -> None:
    with FakeOpenAI() as fake:
        fake.add(Drip(seconds=30, every=0.05, stream=True))
        client = UpstreamClient(timeout=30, stream_limit=1.0)
        try:
            with client.post(fake.url + "/chat/completions", json.dumps({**BODY, "stream": True}).encode(), JSON) as response:
                with pytest.raises(TimeoutError):
                    for _ in client.lines(response):
                        pass
        finally:
            client.close()


def test_sigterm_during_a_drip_stops_the_gateway_at_once(tmp_path: Path) -> None:
    """The upstream read is cut when the signal comes: the drip sends at most a few more
    bytes (a byte each half second), not the sixty its --timeout 30 would let it."""
    drip = Drip(seconds=60, every=0.5)
    with FakeOpenAI() as fake:
        fake.add(drip)
        proc = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "gateway", "--headless", "--approve", "all", "--timeout", "30", "--upstream", fake.url,
             "--listen", "127.0.0.1:0", "--out", str(tmp_path / "gw.jsonl")],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        line = proc.stderr.readline()
        url = line.split("listening on ")[1].split(" ")[0]
        threading.Thread(target=lambda: _post_quietly(url), daemon=True).start()
        assert drip.started.wait(30)
        at_signal = drip.sent
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert not drip.completed, "the gateway waited for the upstream to finish"
        assert drip.sent - at_signal <= 6, f"{drip.sent - at_signal} more bytes (half a second each) after SIGTERM"
    assert proc.returncode == 5 and "outcome: aborted" in out, out + err


def _post_quietly(url: str) -> None:
    try:
        httpx.post(url + "/chat/completions", json=BODY, timeout=120)
    except httpx.HTTPError:
        pass


# -- the upstream's headers ----------------------------------------------------------------


def test_headers_passed_on_from_the_upstream_have_the_key_masked(tmp_path: Path) -> None:
    key = "sk-header-secret-4242"
    headers = {"Retry-After": f"1 {key}", "x-ratelimit-remaining-tokens": f"Bearer {key}", "x-ratelimit-reset-requests": "2s"}
    with FakeOpenAI() as fake, gateway(fake, tmp_path, key=_secret(key), headless=True, mode="continue") as (_gw, server):
        fake.add(Status(429, "slow down", headers))
        response = _post(server, JSON)
    assert response.status_code == 429
    assert key not in str(response.headers) and key not in response.text
    assert response.headers["retry-after"] == "1 ***"
    assert response.headers["x-ratelimit-remaining-tokens"] == "***"
    assert response.headers["x-ratelimit-reset-requests"] == "2s"


def _secret(text: str):
    from engine.model.config import Secret

    return Secret(text)


# -- what the server reports of a response it sent ----------------------------------------


class _OneResponse:
    """A stand-in for the gateway: answers every request with `response`, after `before()`."""

    def __init__(self, response: Response, before=lambda: None) -> None:
        self.response = response
        self.before = before
        self.left: list[Future[Response]] = []

    def submit(self, body: Any, wire: Any = None, headers: Any = None, path: str = "", early: Any = None) -> Future[Response]:
        self.before()
        future: Future[Response] = Future()
        future.set_result(self.response)
        return future

    def disconnected(self, future: Future[Response]) -> None:
        self.left.append(future)

    def model_names(self) -> list[str]:
        return ["m"]


def test_on_sent_is_told_true_once_the_body_was_handed_to_the_agent() -> None:
    sent: list[bool] = []
    stand_in = _OneResponse(Response(200, b'{"ok": true}', on_sent=sent.append))
    server = GatewayServer(stand_in, "127.0.0.1", 0)  # type: ignore[arg-type]
    server.start()
    try:
        assert _post(server, JSON).json() == {"ok": True}
        wait_for(lambda: sent == [True], "the reply reported sent", timeout=20)
    finally:
        server.close()
    assert sent == [True]


def test_on_sent_is_told_false_when_the_agent_left_before_the_body_went() -> None:
    sent: list[bool] = []
    gave_up = threading.Event()
    servers: list[GatewayServer] = []

    def wait_for_the_agent_to_leave() -> None:
        gave_up.wait(30)
        wait_for(lambda: servers[0].open_connections == 0, "no open connection", timeout=20)

    stand_in = _OneResponse(Response(200, b'{"ok": true}', on_sent=sent.append), before=wait_for_the_agent_to_leave)
    server = GatewayServer(stand_in, "127.0.0.1", 0)  # type: ignore[arg-type]
    servers.append(server)
    server.start()
    try:
        with pytest.raises(httpx.ReadTimeout):  # the agent gives up and closes its connection
            _post(server, JSON, timeout=0.5)
        gave_up.set()
        wait_for(lambda: sent != [], "the reply reported", timeout=20)
    finally:
        server.close()
    assert sent == [False]


def test_an_on_sent_that_raises_does_not_break_the_server(capfd: pytest.CaptureFixture[str]) -> None:
    def broken(_sent: bool) -> None:
        raise RuntimeError("boom")

    stand_in = _OneResponse(Response(200, b'{"ok": true}', on_sent=broken))
    server = GatewayServer(stand_in, "127.0.0.1", 0)  # type: ignore[arg-type]
    server.start()
    try:
        with httpx.Client(timeout=10) as client:
            for _ in range(2):
                assert client.post(server.url + "/chat/completions", json=BODY).json() == {"ok": True}
    finally:
        server.close()
    assert "reporting a sent response failed: RuntimeError: boom" in capfd.readouterr().err


def test_the_operator_is_told_of_the_limit_also_after_uvicorn_configured_logging(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """uvicorn's default logging configuration (another server of the process made with it)
    takes the handlers off its loggers; the gateway puts its own back when it starts."""
    import logging

    names = ("uvicorn", "uvicorn.error", "uvicorn.access")
    before = {name: (list(logging.getLogger(name).handlers), logging.getLogger(name).level, logging.getLogger(name).propagate) for name in names}
    try:
        uvicorn.Config(lambda scope, receive, send: None)  # configures logging as uvicorn's default does
        _hit_the_connection_limit(tmp_path)
        assert "agent-tui gateway: too many connections at once" in capfd.readouterr().err
    finally:  # the rest of this process's tests log as they did
        for name, (handlers, level, propagate) in before.items():
            logger = logging.getLogger(name)
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate = propagate


def test_a_released_turn_hands_the_gateway_one_job_and_is_reported_sent_on_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The request's work goes to a worker thread once; that its released call reached the agent
    is recorded on the server's loop (the conversation's lock is free then), not by a second job."""
    from engine.gateway import server as http_side
    from tests.support.fake_openai import call
    from tests.support.gateway_harness import TOOLS

    jobs: list[object] = []
    real = http_side._WORKERS.run
    monkeypatch.setattr(http_side._WORKERS, "run", lambda job: (jobs.append(job), real(job))[-1])
    with FakeOpenAI() as fake, gateway(fake, tmp_path, headless=True) as (gw, server):
        fake.add(call("read_file", id="c1", path="notes.txt"))
        response = _post(server, JSON, {"model": "m", "messages": USER, "tools": TOOLS})
        assert response.status_code == 200 and response.json()["choices"][0]["message"]["tool_calls"][0]["id"] == "c1"
        run = gw.runs[0]
        wait_for(lambda: run.carried == {0: True}, "the released call recorded as handed to the agent", timeout=20)
    assert len(jobs) == 1


def test_a_responses_head_and_body_go_to_the_connection_in_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn writes a response's head and body apart; the gateway's connections join the writes
    of one turn of the loop, so the agent gets one segment (and wakes once), HEAD's head alone too."""
    import asyncio.selector_events

    writes: list[bytes] = []
    real = asyncio.selector_events._SelectorSocketTransport.write

    def write(self: Any, data: bytes) -> None:
        if threading.current_thread().name.startswith("gateway-http"):
            writes.append(bytes(data))
        real(self, data)

    monkeypatch.setattr(asyncio.selector_events._SelectorSocketTransport, "write", write)
    server = GatewayServer(_OneResponse(Response(200, b'{"ok": true}')), "127.0.0.1", 0)  # type: ignore[arg-type]
    server.start()
    try:
        with httpx.Client(timeout=10) as client:
            assert client.post(server.url + "/chat/completions", json=BODY).json() == {"ok": True}
            assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200") and writes[0].endswith(b'{"ok": true}')
            head = client.head(f"http://127.0.0.1:{server.port}/")
            assert head.status_code == 200 and head.content == b""
            assert len(writes) == 2 and writes[1].startswith(b"HTTP/1.1 200") and writes[1].endswith(b"\r\n\r\n")
    finally:
        server.close()


def _answering_ok(bodies: list[bytes]) -> Any:
    """A loopback chat-completions upstream that keeps each request's body in `bodies` and
    answers every one "ok"."""
    from tests.support.loopback import Loopback

    reply = json.dumps({"id": "r", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}).encode()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": reply})

    return Loopback(app)


def test_the_upstream_gets_the_request_as_compact_utf8_json_and_a_lone_surrogate_escaped(tmp_path: Path) -> None:
    """The request upstream is written by pydantic's JSON writer (text as UTF-8, no spaces); a
    string JSON's UTF-8 cannot hold (a lone surrogate the agent sent escaped, in a field passed on) goes as an escape."""
    bodies: list[bytes] = []
    with _answering_ok(bodies) as upstream, gateway(upstream, tmp_path, url=upstream.url + "/v1", headless=True) as (_gw, server):
        said = _post(server, JSON, {"model": "m", "messages": [{"role": "user", "content": "café \u4e2d"}]})
        lone = httpx.post(server.url + "/chat/completions", content=b'{"model": "m", "metadata": {"note": "a\\ud800b"}, "messages": [{"role": "user", "content": "hi"}]}', headers=JSON)
    assert said.status_code == 200 and lone.status_code == 200
    assert "café \u4e2d".encode() in bodies[0] and b'"messages":[{' in bodies[0]
    assert b"a\\ud800b" in bodies[1] and json.loads(bodies[1])["metadata"]["note"] == "a\ud800b"


def test_early_pieces_pushed_before_the_loop_takes_the_first_wake_it_once() -> None:
    """The gateway's thread pushes a stream's early pieces in a burst (several events of one
    read); those pushed while the loop has not taken the first are taken with it, in order."""
    from engine.gateway.server import _EarlyConnection

    class Loop:
        def __init__(self) -> None:
            self.wakes: list[Any] = []
            self.tasks: list[Any] = []

        def call_soon_threadsafe(self, callback: Any, *args: Any) -> None:
            self.wakes.append((callback, args))

        def create_task(self, coroutine: Any) -> None:
            coroutine.close()
            self.tasks.append(coroutine)

    loop = Loop()
    connection = _EarlyConnection(loop, None, None)  # type: ignore[arg-type]
    for piece in (b"event: a\n\n", b"event: b\n\n", b"event: c\n\n"):
        connection._push(piece)
    assert len(loop.wakes) == 1
    callback, args = loop.wakes.pop()
    callback(*args)
    connection._push(b"event: d\n\n")
    assert len(loop.wakes) == 1 and len(loop.tasks) == 1
    callback, args = loop.wakes.pop()
    callback(*args)
    taken = []
    while not connection._chunks.empty():
        taken.append(connection._chunks.get_nowait())
    assert b"".join(taken) == b"event: a\n\nevent: b\n\nevent: c\n\nevent: d\n\n"


def test_a_lone_surrogate_in_the_agents_task_is_recorded_cleaned_and_the_turn_answered(tmp_path: Path) -> None:
    """The task (the agent's first user message) opens the run's transcript with its header: a
    lone surrogate in it (an escape JSON allows and UTF-8 cannot hold) is written as U+FFFD,
    the request passed on as it came, the reply given; no traceback, no 500."""
    bodies: list[bytes] = []
    with _answering_ok(bodies) as upstream, gateway(upstream, tmp_path, url=upstream.url + "/v1", headless=True) as (_gw, server):
        said = httpx.post(server.url + "/chat/completions", content=b'{"model": "m", "messages": [{"role": "user", "content": "fix \\ud800 this"}]}', headers=JSON)
    assert said.status_code == 200, said.text
    assert said.json()["choices"][0]["message"]["content"] == "ok"
    assert json.loads(bodies[0])["messages"][0]["content"] == "fix \ud800 this"
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*.jsonl"))
    assert "fix \ufffd this" in written.decode() and b"\\ud800" not in written
