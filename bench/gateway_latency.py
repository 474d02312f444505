"""Latency `agent-tui gateway` adds to a released model turn, next to calling the upstream directly.

    python bench/gateway_latency.py [--requests 300] [--turns 20] [--wire chat|anthropic|responses|gemini] [--bare thread|async|both] [--phases]

An agent loop of `--turns` requests per conversation (each request carries
the whole history and one more tool result) runs against the loopback fake
upstream twice per request, in the same run: once directly, once through a
headless gateway in passthrough (continue) mode whose rule allows every call,
writing its transcript; and, between the two, through the floor of the gateway: a
bare forwarding proxy of the same parts (`bench/bare_proxy.py`: uvicorn with the gateway's
configuration and protocol, httpx to the upstream, nothing else), with a sync client on the
gateway's worker threads (`--bare thread`, the cheaper and the default), an `AsyncClient` on
its event loop (`async`) or each (`both`); one reused `httpx.Client` for all. Whole and
streamed replies. `--wire anthropic`: an agent speaking Anthropic Messages to
the fake Messages model (tests/support/fake_anthropic.py) instead of chat completions;
`--wire responses` / `gemini`: the OpenAI Responses or Gemini API to
tests/support/fake_responses.py or tests/support/fake_gemini.py. `--phases`: also where a
request through the gateway and one through the bare proxy (`thread`) spend their time, each
phase's median (timestamps taken at their own functions; see `_phases`). Prints, for each way,
the median and 95th percentile, the latency it adds to direct per request (median and 95th
percentile of the differences), and the gateway's own part: its latency over the bare proxy's,
request by request. On a shared, loaded machine wall-clock figures
mostly measure waiting for a core (every thread hand-off costs a time
slice), so it also prints the CPU time each way adds per request (the
process's median CPU time over its requests minus that over the direct
ones): the added latency on an idle machine is about that plus one loopback
round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from engine.core.events import RuleInfo  # noqa: E402
from engine.gateway import Gateway, GatewayServer, Upstream  # noqa: E402
from engine.wires import anthropic, gemini, responses  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, Turn  # noqa: E402
from tests.support.fake_gemini import FakeGemini  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, call  # noqa: E402
from tests.support.fake_responses import FakeResponses  # noqa: E402
from tests.support.fake_responses import Turn as ScriptedTurn  # noqa: E402
from bench.bare_proxy import CLIENTS, BareProxy  # noqa: E402
from bench.options import at_least  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a key up.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        },
    }
]


def _timed(client: httpx.Client, url: str, body: dict[str, Any], stream: bool | None = None) -> tuple[float, float, bytes]:
    """Wall-clock and process CPU milliseconds of one request, its body read to the end (and the body);
    streamed when `stream` (or, when it is None, the body's `stream`) says so."""
    started, cpu = time.perf_counter(), time.process_time()
    if body.get("stream") if stream is None else stream:
        with client.stream("POST", url, json=body) as response:
            raw = b"".join(response.iter_bytes())
            status = response.status_code
    else:
        response = client.post(url, json=body)
        status, raw = response.status_code, response.content
    elapsed, cpu_used = time.perf_counter() - started, time.process_time() - cpu
    if status != 200:
        raise SystemExit(f"request failed with {status}")
    return elapsed * 1000, cpu_used * 1000, raw


Ways = list[tuple[str, str]]
"""Each way of asking in a request's turn, in order: its name in the figures and its root URL."""


@contextmanager
def _released_all(upstream: Upstream, out: Path, bare: tuple[str, ...], direct: str, gateway_root: str | None = None) -> Iterator[tuple[Ways, httpx.Client]]:
    """A headless gateway in front of `upstream` whose rule allows every call, writing its
    transcript to `out`, and a bare proxy (`bench/bare_proxy.py`) in front of it with each client
    of `bare`; the ways to ask (`direct` on the upstream, `bare CLIENT` the same through each
    proxy, `through` at `gateway_root` on the gateway, `{port}` its port; its URL when None) and
    the one `httpx.Client` every way uses."""
    gw = Gateway([upstream], rules=[RuleInfo(tool="*", effect="allow")], headless=True, out=out)
    server = GatewayServer(gw, "127.0.0.1", 0)
    server.start()
    client = httpx.Client(timeout=30, trust_env=False)
    try:
        with ExitStack() as proxies:
            bares = [proxies.enter_context(BareProxy(upstream.url, mode)) for mode in bare]
            root = server.url if gateway_root is None else gateway_root.format(port=server.port)
            yield [("direct", direct), *((f"bare {p.client}", p.url_for(direct)) for p in bares), ("through", root)], client
    finally:
        client.close()
        gw.stop("the benchmark ended")
        server.close()


def _ask(got: dict[str, list[float]], ways: Ways, client: httpx.Client, path: str, body: dict[str, Any], stream: bool | None = None) -> bytes:
    """One request each way in turn, each's wall and CPU milliseconds into `got`; the direct reply."""
    replies = []
    for kind, root in ways:
        wall, cpu, raw = _timed(client, root + path, body, stream)
        got[kind].append(wall)
        got[f"{kind}_cpu"].append(cpu)
        replies.append(raw)
    return replies[0]


def measure_messages(requests: int, turns: int, stream: bool, folder: Path, bare: tuple[str, ...] = ("thread",)) -> dict[str, list[float]]:
    """`measure` for an agent speaking Anthropic Messages to a Messages upstream."""
    got: dict[str, list[float]] = defaultdict(list)
    tools = [{"name": "lookup", "description": "Look a key up.", "input_schema": TOOLS[0]["function"]["parameters"]}]
    with FakeAnthropic([Turn(text="Looking it up.", tool_uses=[("lookup", {"key": f"item-{n}"})]) for n in range(turns + 1)]) as fake:
        out = folder / f"bench-messages-{'stream' if stream else 'whole'}.jsonl"
        with _released_all(Upstream("fake", fake.url, wire="anthropic"), out, bare, fake.url, "http://127.0.0.1:{port}") as (ways, client):
            messages: list[dict[str, Any]] = []
            for n in range(requests):
                if n % turns == 0:
                    messages = [{"role": "user", "content": f"Conversation {n // turns}: look up every key."}]
                body = {"model": "m", "max_tokens": 1024, "system": [{"type": "text", "text": "Be brief."}], "messages": messages, "tools": tools, "stream": stream}
                raw = _ask(got, ways, client, "/v1/messages", body)
                message = _message(raw, stream)
                use = next(b for b in message["content"] if b["type"] == "tool_use")
                messages = [
                    *messages,
                    {"role": "assistant", "content": message["content"]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": f"value is {n * 7}"}]},
                ]
    return got


def _message(raw: bytes, stream: bool) -> dict[str, Any]:
    if not stream:
        return json.loads(raw)
    reader = anthropic.StreamReader(lambda _: None)
    for line in raw.decode().splitlines():
        reader.feed(line)
    assert reader.reply.message is not None
    return reader.reply.message


def measure_items(requests: int, turns: int, stream: bool, folder: Path, wire: str, bare: tuple[str, ...] = ("thread",)) -> dict[str, list[float]]:
    """`measure` for an agent speaking the Responses (`wire` "responses") or the Gemini API to the fake of that API."""
    got: dict[str, list[float]] = defaultdict(list)
    script = [ScriptedTurn(text="Looking it up.", calls=[("lookup", {"key": f"item-{n}"})]) for n in range(turns + 1)]
    parameters = TOOLS[0]["function"]["parameters"]
    with (FakeResponses(script) if wire == "responses" else FakeGemini(script)) as fake:
        upstream = Upstream("fake", fake.url + ("/v1" if wire == "responses" else ""), wire=wire)
        with _released_all(upstream, folder / f"bench-{wire}-{'stream' if stream else 'whole'}.jsonl", bare, fake.url, "http://127.0.0.1:{port}") as (ways, client):
            if wire == "responses":
                path = "/v1/responses"
                tools: list[dict[str, Any]] = [{"type": "function", "name": "lookup", "description": "Look a key up.", "parameters": parameters}]
            else:
                path = f"/v1beta/models/m:{'streamGenerateContent?alt=sse' if stream else 'generateContent'}"
                tools = [{"functionDeclarations": [{"name": "lookup", "description": "Look a key up.", "parametersJsonSchema": parameters}]}]
            history: list[dict[str, Any]] = []
            for n in range(requests):
                if n % turns == 0:
                    task = f"Conversation {n // turns}: look up every key."
                    history = [{"role": "user", "content": task}] if wire == "responses" else [{"role": "user", "parts": [{"text": task}]}]
                if wire == "responses":
                    body: dict[str, Any] = {"model": "m", "input": history, "tools": tools, "stream": stream, "store": False}
                else:
                    body = {"contents": history, "tools": tools}
                raw = _ask(got, ways, client, path, body, stream)
                history = [*history, *_turn_items(raw, stream, wire, n)]
    return got


def _turn_items(raw: bytes, stream: bool, wire: str, n: int) -> list[dict[str, Any]]:
    """The reply in `raw` and the result of its call, as the next request's history gets them."""
    module = responses if wire == "responses" else gemini
    if stream:
        reader = module.StreamReader(lambda _: None)
        for line in raw.decode().splitlines():
            reader.feed(line)
        reply = reader.reply
    else:
        reply = module.read_whole(json.loads(raw))
    assert reply.message is not None and reply.tool_calls
    if wire == "responses":
        output = reply.message["output"]
        calls = [i for i in output if i["type"] == "function_call"]
        return [*output, *({"type": "function_call_output", "call_id": c["call_id"], "output": f"value is {n * 7}"} for c in calls)]
    answers = [{"functionResponse": {"name": "lookup", "response": {"output": f"value is {n * 7}"}}} for _ in reply.tool_calls]
    return [{"role": "model", "parts": reply.message["parts"]}, {"role": "user", "parts": answers}]


def measure(requests: int, turns: int, stream: bool, folder: Path, bare: tuple[str, ...] = ("thread",)) -> dict[str, list[float]]:
    """Wall and CPU milliseconds of each request each way (`direct`, `bare CLIENT` for each of
    `bare`, `through` the gateway; `KIND_cpu`), an agent speaking chat completions."""
    got: dict[str, list[float]] = defaultdict(list)
    with FakeOpenAI() as fake:
        with _released_all(Upstream("fake", fake.url), folder / f"bench-{'stream' if stream else 'whole'}.jsonl", bare, fake.url) as (ways, client):
            messages: list[dict[str, Any]] = []
            for n in range(requests):
                if n % turns == 0:
                    messages = [{"role": "user", "content": f"Conversation {n // turns}: look up every key."}]
                call_id = f"call_{n}"
                fake.add(*[call("lookup", id=call_id, key=f"item-{n}")] * len(ways))
                body = {"model": "m", "messages": messages, "tools": TOOLS, "stream": stream}
                _ask(got, ways, client, "/chat/completions", body)
                messages = [
                    *messages,
                    {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"key": f"item-{n}"})}}]},
                    {"role": "tool", "tool_call_id": call_id, "content": f"value of item-{n} is {n * 7}"},
                ]
    return got


_PHASES = (
    ("the agent's request to the application", None, "app"),
    ("body read, JSON, hand-off to a worker", "app", "submit"),
    ("matched, delivered, engine step begun", "submit", "decide"),
    ("the upstream request built", "decide", "post"),
    ("the upstream's answer to its headers", "post", "headers"),
    ("the upstream's reply read and checked", "headers", "decided"),
    ("the decision recorded, the response made", "decided", "submitted"),
    ("hand-off back, the response sent", "submitted", "sent"),
    ("the response to the agent", "sent", None),
)
_BARE_PHASES = (
    ("the agent's request to the application", None, "bare_app"),
    ("body read, hand-off to a worker", "bare_app", "open"),
    ("the upstream request built, to its headers", "open", "headers"),
    ("the upstream's reply read", "headers", "opened"),
    ("hand-off back, the response sent", "opened", "sent"),
    ("the response to the agent", "sent", None),
)
"""The phases of a request through the bare proxy with its `thread` client (`bench/bare_proxy.py`)."""


@contextmanager
def _phases(marks: dict[str, float]) -> Iterator[None]:
    """Timestamps (into `marks`) where a request through the gateway, or the bare proxy, passes from one part to the next."""
    import threading
    from bench import bare_proxy
    from engine.gateway import server, upstream
    from engine.gateway.client import UpstreamClient

    patched: list[tuple[Any, str, Any]] = []

    def at(owner: Any, name: str, before: str | None, after: str | None) -> None:
        real = getattr(owner, name)
        if asyncio.iscoroutinefunction(real):
            async def timed(*args: Any, **kwargs: Any) -> Any:
                if before:
                    marks[before] = time.perf_counter()
                try:
                    return await real(*args, **kwargs)
                finally:
                    if after:
                        marks[after] = time.perf_counter()
        else:
            def timed(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
                if before:
                    marks[before] = time.perf_counter()
                try:
                    return real(*args, **kwargs)
                finally:
                    if after:
                        marks[after] = time.perf_counter()
        patched.append((owner, name, real))
        setattr(owner, name, timed)

    at(server.GatewayServer, "_answer", "app", None)
    at(server.GatewayServer, "_send", None, "sent")
    at(Gateway, "submit", "submit", "submitted")
    at(upstream.UpstreamPolicy, "decide", "decide", "decided")
    at(UpstreamClient, "post", "post", None)
    at(bare_proxy, "_open", "open", "opened")
    at(BareProxy, "_forward_in_thread", None, "sent")
    send = httpx.Client.send

    def sent(self: httpx.Client, *args: Any, **kwargs: Any) -> httpx.Response:
        response = send(self, *args, **kwargs)
        if threading.current_thread().name == "gateway-request":
            marks["headers"] = time.perf_counter()
        return response

    patched.append((httpx.Client, "send", send))
    httpx.Client.send = sent  # type: ignore[method-assign]
    call = BareProxy.__call__

    async def called(self: BareProxy, scope: Any, receive: Any, send: Any) -> None:  # its own parameters: uvicorn calls an app without any to see if it is a factory
        marks["bare_app"] = time.perf_counter()
        await call(self, scope, receive, send)

    patched.append((BareProxy, "__call__", call))
    BareProxy.__call__ = called  # type: ignore[method-assign]
    try:
        yield
    finally:
        for owner, name, real in reversed(patched):
            setattr(owner, name, real)


Rows = dict[str, list[tuple[float, float, dict[str, float]]]]
"""Each request's (sent, answered, its phases' timestamps) through the `gateway` and the `bare` proxy."""


def _print_phases(rows: list[tuple[float, float, dict[str, float]]], phases: tuple[tuple[str, str | None, str | None], ...]) -> None:
    for label, start, end in phases:
        spans = [((marks[end] if end else done) - (marks[start] if start else began)) * 1000 for began, done, marks in rows if (start is None or start in marks) and (end is None or end in marks)]
        if spans:
            print(f"    {label:44} p50 {statistics.median(spans):.3f} ms")


@contextmanager
def _rows(marks: dict[str, float], rows: Rows) -> Iterator[None]:
    """Each request through the gateway and the bare proxy into `rows`, from `_timed`."""
    global _timed
    real = _timed

    def timed(client: httpx.Client, url: str, body: dict[str, Any], stream: bool | None = None) -> tuple[float, float, bytes]:
        marks.clear()
        began = time.perf_counter()
        got = real(client, url, body, stream)
        for mark, way in (("app", "gateway"), ("bare_app", "bare")):
            if mark in marks:
                rows[way].append((began, time.perf_counter(), dict(marks)))
        return got

    _timed = timed
    try:
        yield
    finally:
        _timed = real


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def _added(got: dict[str, list[float]], kind: str, over: str = "direct") -> str:
    """`kind`'s latency over `over`'s, request by request (median, 95th percentile), and its CPU time over `over`'s a request."""
    added = [b - a for a, b in zip(got[over], got[kind])]
    cpu = statistics.median(got[f"{kind}_cpu"]) - statistics.median(got[f"{over}_cpu"])
    return f"p50 {statistics.median(added):.2f} ms p95 {_p95(added):.2f}  {'CPU added' if over == 'direct' else 'CPU'} {cpu:.2f} ms"


def _way(got: dict[str, list[float]], kind: str) -> str:
    return f"p50 {statistics.median(got[kind]):.2f} ms p95 {_p95(got[kind]):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=at_least(20), default=300)
    parser.add_argument("--turns", type=at_least(1), default=20, help="requests per conversation")
    parser.add_argument("--wire", choices=["chat", "anthropic", "responses", "gemini"], default="chat", help="the API the agent and the upstream speak")
    parser.add_argument("--bare", choices=[*CLIENTS, "both"], default="thread", help="the bare proxy's upstream client (the floor); both: one proxy with each")
    parser.add_argument("--phases", action="store_true", help="also where a request through the gateway and the bare proxy spends its time")
    args = parser.parse_args()
    bare = CLIENTS if args.bare == "both" else (args.bare,)
    runs = {"chat": measure, "anthropic": measure_messages}
    run = runs.get(args.wire) or (lambda requests, turns, stream, folder, bare: measure_items(requests, turns, stream, folder, args.wire, bare))
    with tempfile.TemporaryDirectory() as tmp:
        for stream in (False, True):
            marks: dict[str, float] = {}
            rows: Rows = defaultdict(list)
            with _phases(marks) if args.phases else nullcontext(), _rows(marks, rows) if args.phases else nullcontext():
                got = run(args.requests, args.turns, stream, Path(tmp), bare)
            kind = "streamed" if stream else "whole"
            print(f"{kind:8} requests={len(got['direct'])}  direct {_way(got, 'direct')}  CPU {statistics.median(got['direct_cpu']):.2f} ms")
            for client in bare:
                print(f"  bare proxy, {client:6}  {_way(got, f'bare {client}')}  added {_added(got, f'bare {client}')}")
            print(f"  gateway             {_way(got, 'through')}  added {_added(got, 'through')}  ratio {statistics.median(got['through']) / statistics.median(got['direct']):.2f}")
            for client in bare:
                print(f"  the gateway's own part over the bare proxy, {client:6}  {_added(got, 'through', f'bare {client}')}")
            if args.phases:
                print("  the gateway's phases:")
                _print_phases(rows["gateway"], _PHASES)
                if "thread" in bare:
                    print("  the bare proxy's phases (thread):")
                    _print_phases(rows["bare"], _BARE_PHASES)


if __name__ == "__main__":
    main()
