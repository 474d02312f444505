"""Latency `agent-tui gateway` adds to a released model turn, next to calling the upstream directly.

    python bench/gateway_latency.py [--requests 300] [--turns 20] [--wire chat|anthropic|responses|gemini] [--bare thread|async|both] [--phases] [--processes]

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

`--processes`: the fake upstream, each bare proxy and the gateway each in a process of its own,
as a user runs them (the gateway as `agent-tui gateway --headless` with a rules file allowing
every call; `bench/server_processes.py`), only the agent's client in the bench's process: no
server shares an interpreter lock with another or with the client. The CPU figures are then
each server process's CPU a request (/proc, counted from the second request, after what each
loads on its first): the upstream's over every request it served, the bare proxy's and the
gateway's, and the gateway's over the bare proxy's.
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
from tests.support.fake_openai import FakeOpenAI, Request, call  # noqa: E402
from tests.support.fake_responses import FakeResponses  # noqa: E402
from tests.support.fake_responses import Turn as ScriptedTurn  # noqa: E402
from bench.bare_proxy import CLIENTS, BareProxy  # noqa: E402
from bench.options import at_least  # noqa: E402
from bench.server_processes import Servers, serve, stopped_on_sigterm  # noqa: E402

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

UNDER = {"chat": "/v1", "anthropic": "", "responses": "", "gemini": ""}
"""Where the agent's paths start on the upstream's and the gateway's address, by wire (its base URL)."""
UPSTREAM_UNDER = {"chat": "/v1", "anthropic": "", "responses": "/v1", "gemini": ""}
"""The upstream's base URL for the gateway (`Upstream.url`, `--upstream`) under its address, by wire."""


def _chat_reply(turns: int) -> Any:
    """The chat script of `measure` as one reply for any request: the call `measure` expects
    (`call_N`, `item-N`: N the request's number, from its conversation's and its turn's)."""

    def reply(request: Request) -> Any:
        conversation = int(request.messages[0]["content"].split()[1].rstrip(":"))
        n = conversation * turns + (len(request.messages) - 1) // 2
        return call("lookup", id=f"call_{n}", key=f"item-{n}")

    return reply


def fake_upstream(wire: str, turns: int, replies: int = 0) -> Any:
    """The fake upstream of `wire`, scripted as the bench asks it: every request answered with a
    call of the one tool, `lookup`. Chat's replies are added request by request (`fake.add`),
    unless `replies` says how many to script at once (a fake in a process of its own)."""
    if wire == "chat":
        fake = FakeOpenAI()
        fake.add(*[_chat_reply(turns)] * replies)
        return fake
    if wire == "anthropic":
        return FakeAnthropic([Turn(text="Looking it up.", tool_uses=[("lookup", {"key": f"item-{n}"})]) for n in range(turns + 1)])
    script = [ScriptedTurn(text="Looking it up.", calls=[("lookup", {"key": f"item-{n}"})]) for n in range(turns + 1)]
    return FakeResponses(script) if wire == "responses" else FakeGemini(script)


class _Bench:
    """One measurement's ways to ask (`ways`), the one `httpx.Client` they all use, the fake
    upstream when it is in the bench's process (`fake`, else None) and the servers' processes
    when they are not (`servers`)."""

    def __init__(self, ways: Ways, client: httpx.Client, fake: Any = None, servers: Servers | None = None) -> None:
        self.ways, self.client, self.fake, self.servers = ways, client, fake, servers
        self.asked = 0

    def ask(self, got: dict[str, list[float]], path: str, body: dict[str, Any], stream: bool | None = None) -> bytes:
        """One request each way in turn, each's wall and CPU milliseconds into `got`; the direct
        reply. The servers' CPU counts from the second request (the first loads what each serves with)."""
        replies = []
        for kind, root in self.ways:
            wall, cpu, raw = _timed(self.client, root + path, body, stream)
            got[kind].append(wall)
            got[f"{kind}_cpu"].append(cpu)
            replies.append(raw)
        self.asked += 1
        if self.servers is not None and self.asked == 1:
            self.servers.mark()
        return replies[0]

    def count(self, got: dict[str, list[float]]) -> None:
        """Each server process's CPU milliseconds a request into `got` (`KIND_process`; the
        upstream's as `direct_process`, over each request it served)."""
        if self.servers is None or self.asked < 2:
            return
        for kind, cpu in self.servers.cpu_each(self.asked - 1).items():
            got[f"{kind}_process"] = [cpu / len(self.ways) if kind == "direct" else cpu]


@contextmanager
def _servers(wire: str, turns: int, requests: int, out: Path, bare: tuple[str, ...], processes: bool) -> Iterator[_Bench]:
    """The fake upstream of `wire` and, in front of it, a bare proxy (`bench/bare_proxy.py`)
    with each client of `bare` and a headless gateway whose rule allows every call, writing its
    transcript to `out`: all in the bench's process, or (`processes`) each in its own, the
    gateway as `agent-tui gateway --headless` (`bench/server_processes.py`)."""
    if not processes:
        with fake_upstream(wire, turns) as fake:
            root = fake.url.removesuffix("/v1")
            upstream = Upstream("fake", root + UPSTREAM_UNDER[wire], wire=wire)
            with _released_all(upstream, out, bare, root + UNDER[wire], "http://127.0.0.1:{port}" + UNDER[wire]) as (ways, client):
                yield _Bench(ways, client, fake=fake)
        return
    serving = [__file__, "--serve-upstream", "--wire", wire, "--turns", str(turns), "--replies", str(requests * (2 + len(bare)) + 8)]
    prefix = "" if wire == "chat" else f"{wire}+"
    folder = out.parent / f"{out.stem}-servers"
    folder.mkdir()
    with Servers(folder, serving, bare, prefix + "{root}" + UPSTREAM_UNDER[wire]) as servers, httpx.Client(timeout=30, trust_env=False) as client:
        ways = [(kind, servers.root(kind) + UNDER[wire]) for kind in servers.children()]
        bench = _Bench(ways, client, servers=servers)
        yield bench


@contextmanager
def _released_all(upstream: Upstream, out: Path, bare: tuple[str, ...], direct: str, gateway_root: str) -> Iterator[tuple[Ways, httpx.Client]]:
    """A headless gateway in front of `upstream` whose rule allows every call, writing its
    transcript to `out`, and a bare proxy (`bench/bare_proxy.py`) in front of it with each client
    of `bare`; the ways to ask (`direct` on the upstream, `bare CLIENT` the same through each
    proxy, `through` at `gateway_root` on the gateway, `{port}` its port) and
    the one `httpx.Client` every way uses."""
    gw = Gateway([upstream], rules=[RuleInfo(tool="*", effect="allow")], headless=True, out=out)
    server = GatewayServer(gw, "127.0.0.1", 0)
    server.start()
    client = httpx.Client(timeout=30, trust_env=False)
    try:
        with ExitStack() as proxies:
            bares = [proxies.enter_context(BareProxy(upstream.url, mode)) for mode in bare]
            root = gateway_root.format(port=server.port)
            yield [("direct", direct), *((f"bare {p.client}", p.url_for(direct)) for p in bares), ("through", root)], client
    finally:
        client.close()
        gw.stop("the benchmark ended")
        server.close()


def measure_messages(requests: int, turns: int, stream: bool, folder: Path, bare: tuple[str, ...] = ("thread",), processes: bool = False) -> dict[str, list[float]]:
    """`measure` for an agent speaking Anthropic Messages to a Messages upstream."""
    got: dict[str, list[float]] = defaultdict(list)
    tools = [{"name": "lookup", "description": "Look a key up.", "input_schema": TOOLS[0]["function"]["parameters"]}]
    out = folder / f"bench-messages-{'stream' if stream else 'whole'}.jsonl"
    with _servers("anthropic", turns, requests, out, bare, processes) as bench:
        messages: list[dict[str, Any]] = []
        for n in range(requests):
            if n % turns == 0:
                messages = [{"role": "user", "content": f"Conversation {n // turns}: look up every key."}]
            body = {"model": "m", "max_tokens": 1024, "system": [{"type": "text", "text": "Be brief."}], "messages": messages, "tools": tools, "stream": stream}
            raw = bench.ask(got, "/v1/messages", body)
            message = _message(raw, stream)
            use = next(b for b in message["content"] if b["type"] == "tool_use")
            messages = [
                *messages,
                {"role": "assistant", "content": message["content"]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": f"value is {n * 7}"}]},
            ]
        bench.count(got)
    return got


def _message(raw: bytes, stream: bool) -> dict[str, Any]:
    if not stream:
        return json.loads(raw)
    reader = anthropic.StreamReader(lambda _: None)
    for line in raw.decode().splitlines():
        reader.feed(line)
    assert reader.reply.message is not None
    return reader.reply.message


def measure_items(requests: int, turns: int, stream: bool, folder: Path, wire: str, bare: tuple[str, ...] = ("thread",), processes: bool = False) -> dict[str, list[float]]:
    """`measure` for an agent speaking the Responses (`wire` "responses") or the Gemini API to the fake of that API."""
    got: dict[str, list[float]] = defaultdict(list)
    parameters = TOOLS[0]["function"]["parameters"]
    with _servers(wire, turns, requests, folder / f"bench-{wire}-{'stream' if stream else 'whole'}.jsonl", bare, processes) as bench:
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
            raw = bench.ask(got, path, body, stream)
            history = [*history, *_turn_items(raw, stream, wire, n)]
        bench.count(got)
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


def measure(requests: int, turns: int, stream: bool, folder: Path, bare: tuple[str, ...] = ("thread",), processes: bool = False) -> dict[str, list[float]]:
    """Wall and CPU milliseconds of each request each way (`direct`, `bare CLIENT` for each of
    `bare`, `through` the gateway; `KIND_cpu`), an agent speaking chat completions; with
    `processes`, each server in a process of its own, and each one's CPU milliseconds a request
    (`KIND_process`)."""
    got: dict[str, list[float]] = defaultdict(list)
    with _servers("chat", turns, requests, folder / f"bench-{'stream' if stream else 'whole'}.jsonl", bare, processes) as bench:
        messages: list[dict[str, Any]] = []
        for n in range(requests):
            if n % turns == 0:
                messages = [{"role": "user", "content": f"Conversation {n // turns}: look up every key."}]
            call_id = f"call_{n}"
            if bench.fake is not None:
                bench.fake.add(*[call("lookup", id=call_id, key=f"item-{n}")] * len(bench.ways))
            body = {"model": "m", "messages": messages, "tools": TOOLS, "stream": stream}
            bench.ask(got, "/chat/completions", body)
            messages = [
                *messages,
                {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"key": f"item-{n}"})}}]},
                {"role": "tool", "tool_call_id": call_id, "content": f"value of item-{n} is {n * 7}"},
            ]
        bench.count(got)
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
    """`kind`'s latency over `over`'s, request by request (median, 95th percentile), and its CPU
    time over `over`'s a request: the bench's process's (all in it), or, with the servers in
    processes of their own, the server process's of `kind` (over that of `over` unless `over`
    is direct, whose upstream serves every way)."""
    added = [b - a for a, b in zip(got[over], got[kind])]
    spread = f"p50 {statistics.median(added):.2f} ms p95 {_p95(added):.2f}"
    if f"{kind}_process" in got:
        cpu = got[f"{kind}_process"][0]
        if over == "direct":
            return f"{spread}  its process's CPU {cpu:.2f} ms a request"
        return f"{spread}  its process's CPU {cpu - got[f'{over}_process'][0]:.2f} ms a request more"
    cpu = statistics.median(got[f"{kind}_cpu"]) - statistics.median(got[f"{over}_cpu"])
    return f"{spread}  {'CPU added' if over == 'direct' else 'CPU'} {cpu:.2f} ms"


def _way(got: dict[str, list[float]], kind: str) -> str:
    return f"p50 {statistics.median(got[kind]):.2f} ms p95 {_p95(got[kind]):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=at_least(20), default=300)
    parser.add_argument("--turns", type=at_least(1), default=20, help="requests per conversation")
    parser.add_argument("--wire", choices=["chat", "anthropic", "responses", "gemini"], default="chat", help="the API the agent and the upstream speak")
    parser.add_argument("--bare", choices=[*CLIENTS, "both"], default="thread", help="the bare proxy's upstream client (the floor); both: one proxy with each")
    parser.add_argument("--phases", action="store_true", help="also where a request through the gateway and the bare proxy spends its time")
    parser.add_argument("--processes", action="store_true", help="the fake upstream, each bare proxy and the gateway (agent-tui gateway --headless) each in a process of its own")
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--replies", type=at_least(0), default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve(fake_upstream(args.wire, args.turns, args.replies))
        return
    if args.phases and args.processes:
        parser.error("--phases times the servers in the bench's own process: it does not go with --processes")
    bare = CLIENTS if args.bare == "both" else (args.bare,)
    with tempfile.TemporaryDirectory() as tmp, stopped_on_sigterm():
        for stream in (False, True):
            marks: dict[str, float] = {}
            rows: Rows = defaultdict(list)
            with _phases(marks) if args.phases else nullcontext(), _rows(marks, rows) if args.phases else nullcontext():
                if args.wire == "chat":
                    got = measure(args.requests, args.turns, stream, Path(tmp), bare, args.processes)
                elif args.wire == "anthropic":
                    got = measure_messages(args.requests, args.turns, stream, Path(tmp), bare, args.processes)
                else:
                    got = measure_items(args.requests, args.turns, stream, Path(tmp), args.wire, bare, args.processes)
            kind = "streamed" if stream else "whole"
            if args.processes:
                cpu = f"the upstream's process's CPU {got['direct_process'][0]:.2f} ms a request"
            else:
                cpu = f"CPU {statistics.median(got['direct_cpu']):.2f} ms"
            print(f"{kind:8} requests={len(got['direct'])}  direct {_way(got, 'direct')}  {cpu}")
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
