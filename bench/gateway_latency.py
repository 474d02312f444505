"""Latency `agent-tui gateway` adds to a released model turn, next to calling the upstream directly.

    python bench/gateway_latency.py [--requests 300] [--turns 20] [--wire chat|anthropic|responses|gemini]

An agent loop of `--turns` requests per conversation (each request carries
the whole history and one more tool result) runs against the loopback fake
upstream twice per request, in the same run: once directly, once through a
headless gateway in passthrough (continue) mode whose rule allows every call,
writing its transcript; one reused `httpx.Client` for both. Whole and
streamed replies. `--wire anthropic`: an agent speaking Anthropic Messages to
the fake Messages model (tests/support/fake_anthropic.py) instead of chat completions;
`--wire responses` / `gemini`: the OpenAI Responses or Gemini API to
tests/support/fake_responses.py or tests/support/fake_gemini.py. `--phases`: also where a
request through the gateway spends its time, each phase's median (timestamps taken at the
gateway's own functions; see `_phases`). Prints, for each, the median and 95th percentile of both,
the added latency per request (median and 95th percentile of the
differences) and the ratio. On a shared, loaded machine wall-clock figures
mostly measure waiting for a core (every thread hand-off costs a time
slice), so it also prints the CPU time the gateway adds per request (the
process's CPU time over the gateway's requests minus that over the direct
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
from contextlib import contextmanager, nullcontext
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


@contextmanager
def _released_all(upstream: Upstream, out: Path) -> Iterator[tuple[GatewayServer, httpx.Client]]:
    """A headless gateway in front of `upstream` whose rule allows every call, writing its
    transcript to `out`, and the one `httpx.Client` both ways of asking use."""
    gw = Gateway([upstream], rules=[RuleInfo(tool="*", effect="allow")], headless=True, out=out)
    server = GatewayServer(gw, "127.0.0.1", 0)
    server.start()
    client = httpx.Client(timeout=30, trust_env=False)
    try:
        yield server, client
    finally:
        client.close()
        gw.stop("the benchmark ended")
        server.close()


def measure_messages(requests: int, turns: int, stream: bool, folder: Path) -> dict[str, list[float]]:
    """`measure` for an agent speaking Anthropic Messages to a Messages upstream."""
    got: dict[str, list[float]] = {"direct": [], "through": [], "direct_cpu": [], "through_cpu": []}
    tools = [{"name": "lookup", "description": "Look a key up.", "input_schema": TOOLS[0]["function"]["parameters"]}]
    with FakeAnthropic([Turn(text="Looking it up.", tool_uses=[("lookup", {"key": f"item-{n}"})]) for n in range(turns + 1)]) as fake:
        with _released_all(Upstream("fake", fake.url, wire="anthropic"), folder / f"bench-messages-{'stream' if stream else 'whole'}.jsonl") as (server, client):
            messages: list[dict[str, Any]] = []
            for n in range(requests):
                if n % turns == 0:
                    messages = [{"role": "user", "content": f"Conversation {n // turns}: look up every key."}]
                body = {"model": "m", "max_tokens": 1024, "system": [{"type": "text", "text": "Be brief."}], "messages": messages, "tools": tools, "stream": stream}
                raw = b""
                for kind, url in (("direct", fake.url), ("through", f"http://127.0.0.1:{server.port}")):
                    wall, cpu, raw = _timed(client, url + "/v1/messages", body)
                    got[kind].append(wall)
                    got[f"{kind}_cpu"].append(cpu)
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


def measure_items(requests: int, turns: int, stream: bool, folder: Path, wire: str) -> dict[str, list[float]]:
    """`measure` for an agent speaking the Responses (`wire` "responses") or the Gemini API to the fake of that API."""
    got: dict[str, list[float]] = {"direct": [], "through": [], "direct_cpu": [], "through_cpu": []}
    script = [ScriptedTurn(text="Looking it up.", calls=[("lookup", {"key": f"item-{n}"})]) for n in range(turns + 1)]
    parameters = TOOLS[0]["function"]["parameters"]
    with (FakeResponses(script) if wire == "responses" else FakeGemini(script)) as fake:
        with _released_all(Upstream("fake", fake.url + ("/v1" if wire == "responses" else ""), wire=wire), folder / f"bench-{wire}-{'stream' if stream else 'whole'}.jsonl") as (server, client):
            root = f"http://127.0.0.1:{server.port}"
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
                raw = b""
                for kind, url in (("direct", fake.url), ("through", root)):
                    wall, cpu, raw = _timed(client, url + path, body, stream)
                    got[kind].append(wall)
                    got[f"{kind}_cpu"].append(cpu)
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


def measure(requests: int, turns: int, stream: bool, folder: Path) -> dict[str, list[float]]:
    got: dict[str, list[float]] = {"direct": [], "through": [], "direct_cpu": [], "through_cpu": []}
    with FakeOpenAI() as fake:
        with _released_all(Upstream("fake", fake.url), folder / f"bench-{'stream' if stream else 'whole'}.jsonl") as (server, client):
            messages: list[dict[str, Any]] = []
            for n in range(requests):
                if n % turns == 0:
                    messages = [{"role": "user", "content": f"Conversation {n // turns}: look up every key."}]
                call_id = f"call_{n}"
                fake.add(call("lookup", id=call_id, key=f"item-{n}"), call("lookup", id=call_id, key=f"item-{n}"))
                body = {"model": "m", "messages": messages, "tools": TOOLS, "stream": stream}
                for kind, url in (("direct", fake.url), ("through", server.url)):
                    wall, cpu, _ = _timed(client, url + "/chat/completions", body)
                    got[kind].append(wall)
                    got[f"{kind}_cpu"].append(cpu)
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


@contextmanager
def _phases(marks: dict[str, float]) -> Iterator[None]:
    """Timestamps (into `marks`) where a request through the gateway passes from one part to the next."""
    import threading
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
    send = httpx.Client.send

    def sent(self: httpx.Client, *args: Any, **kwargs: Any) -> httpx.Response:
        response = send(self, *args, **kwargs)
        if threading.current_thread().name == "gateway-request":
            marks["headers"] = time.perf_counter()
        return response

    patched.append((httpx.Client, "send", send))
    httpx.Client.send = sent  # type: ignore[method-assign]
    try:
        yield
    finally:
        for owner, name, real in reversed(patched):
            setattr(owner, name, real)


def _print_phases(rows: list[tuple[float, float, dict[str, float]]]) -> None:
    for label, start, end in _PHASES:
        spans = [((marks[end] if end else done) - (marks[start] if start else began)) * 1000 for began, done, marks in rows if (start is None or start in marks) and (end is None or end in marks)]
        if spans:
            print(f"    {label:44} p50 {statistics.median(spans):.3f} ms")


@contextmanager
def _rows(marks: dict[str, float], rows: list[tuple[float, float, dict[str, float]]]) -> Iterator[None]:
    """Each request through the gateway as (sent, answered, its phases' timestamps), from `_timed`."""
    global _timed
    real = _timed

    def timed(client: httpx.Client, url: str, body: dict[str, Any], stream: bool | None = None) -> tuple[float, float, bytes]:
        marks.clear()
        began = time.perf_counter()
        got = real(client, url, body, stream)
        if "app" in marks:
            rows.append((began, time.perf_counter(), dict(marks)))
        return got

    _timed = timed
    try:
        yield
    finally:
        _timed = real


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=at_least(20), default=300)
    parser.add_argument("--turns", type=at_least(1), default=20, help="requests per conversation")
    parser.add_argument("--wire", choices=["chat", "anthropic", "responses", "gemini"], default="chat", help="the API the agent and the upstream speak")
    parser.add_argument("--phases", action="store_true", help="also where a request through the gateway spends its time")
    args = parser.parse_args()
    runs = {"chat": measure, "anthropic": measure_messages}
    run = runs.get(args.wire) or (lambda requests, turns, stream, folder: measure_items(requests, turns, stream, folder, args.wire))
    with tempfile.TemporaryDirectory() as tmp:
        for stream in (False, True):
            marks: dict[str, float] = {}
            rows: list[tuple[float, float, dict[str, float]]] = []
            with _phases(marks) if args.phases else nullcontext(), _rows(marks, rows) if args.phases else nullcontext():
                got = run(args.requests, args.turns, stream, Path(tmp))
            direct, through = got["direct"], got["through"]
            added = [b - a for a, b in zip(direct, through)]
            cpu = statistics.median(got["through_cpu"]) - statistics.median(got["direct_cpu"])
            kind = "streamed" if stream else "whole"
            print(
                f"{kind:8} requests={len(direct)}  direct p50 {statistics.median(direct):.2f} ms p95 {_p95(direct):.2f}  "
                f"gateway p50 {statistics.median(through):.2f} ms p95 {_p95(through):.2f}  "
                f"added p50 {statistics.median(added):.2f} ms p95 {_p95(added):.2f}  "
                f"ratio {statistics.median(through) / statistics.median(direct):.2f}  gateway CPU added per request {cpu:.2f} ms"
            )
            if args.phases:
                _print_phases(rows)


if __name__ == "__main__":
    main()
