"""Latency `agent-tui gateway` adds to a model request, next to calling the upstream directly.

    python bench/gateway_latency.py [--requests 300] [--turns 20]

An agent loop of `--turns` requests per conversation (each request carries
the whole history and one more tool result) runs against the loopback fake
upstream twice per request, in the same run: once directly, once through a
headless gateway in passthrough (continue) mode whose rule allows every call,
writing its transcript. Whole and streamed replies. Prints the medians and
90th percentiles of both, the median added per request and the ratio; the
goal is at most 2 ms added. On a shared, loaded machine wall-clock figures
mostly measure waiting for a core (every thread hand-off costs a time
slice), so it also prints the CPU time the gateway spends on a request (the
thread that serves it, from the parsed request to the bytes sent back,
upstream client included): the added latency on an idle machine is that
plus one loopback round trip.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from engine.core.events import RuleInfo  # noqa: E402
from engine.gateway import Gateway, GatewayServer, Upstream  # noqa: E402
from tests.fake_openai import FakeOpenAI, call  # noqa: E402
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


def _timed(client: httpx.Client, url: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    if body.get("stream"):
        with client.stream("POST", url, json=body) as response:
            for _ in response.iter_bytes():
                pass
            status = response.status_code
    else:
        status = client.post(url, json=body).status_code
    elapsed = time.perf_counter() - started
    if status != 200:
        raise SystemExit(f"request failed with {status}")
    return elapsed * 1000


CPU_MS: list[float] = []


def _count_cpu() -> None:
    """Record the serving thread's CPU time per request in CPU_MS."""
    answer = GatewayServer._answer

    def timed(self: GatewayServer, *args: Any) -> Any:
        started = time.thread_time()
        try:
            return answer(self, *args)
        finally:
            CPU_MS.append((time.thread_time() - started) * 1000)

    GatewayServer._answer = timed  # type: ignore[method-assign]


def measure(requests: int, turns: int, stream: bool, folder: Path) -> tuple[list[float], list[float]]:
    direct: list[float] = []
    through: list[float] = []
    CPU_MS.clear()
    with FakeOpenAI() as fake:
        gw = Gateway(
            [Upstream("fake", fake.url)],
            rules=[RuleInfo(tool="*", effect="allow")],
            headless=True,
            out=folder / f"bench-{'stream' if stream else 'whole'}.jsonl",
        )
        server = GatewayServer(gw, "127.0.0.1", 0)
        server.start()
        client = httpx.Client(timeout=30, trust_env=False)
        try:
            messages: list[dict[str, Any]] = []
            for n in range(requests):
                if n % turns == 0:
                    messages = [{"role": "user", "content": f"Conversation {n // turns}: look up every key."}]
                call_id = f"call_{n}"
                fake.add(call("lookup", id=call_id, key=f"item-{n}"), call("lookup", id=call_id, key=f"item-{n}"))
                body = {"model": "m", "messages": messages, "tools": TOOLS, "stream": stream}
                direct.append(_timed(client, fake.url + "/chat/completions", body))
                through.append(_timed(client, server.url + "/chat/completions", body))
                messages = [
                    *messages,
                    {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"key": f"item-{n}"})}}]},
                    {"role": "tool", "tool_call_id": call_id, "content": f"value of item-{n} is {n * 7}"},
                ]
        finally:
            client.close()
            gw.stop("the benchmark ended")
            server.close()
    return direct, through


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=at_least(1), default=300)
    parser.add_argument("--turns", type=at_least(1), default=20, help="requests per conversation")
    args = parser.parse_args()
    _count_cpu()
    with tempfile.TemporaryDirectory() as tmp:
        for stream in (False, True):
            direct, through = measure(args.requests, args.turns, stream, Path(tmp))
            d, g = statistics.median(direct), statistics.median(through)
            p90 = lambda xs: statistics.quantiles(xs, n=10)[-1]  # noqa: E731
            added = statistics.median([b - a for a, b in zip(direct, through)])
            kind = "streamed" if stream else "whole"
            print(
                f"{kind:8} requests={len(direct)}  direct median {d:.2f} ms (p90 {p90(direct):.2f})  "
                f"gateway median {g:.2f} ms (p90 {p90(through):.2f})  added median {added:.2f} ms  ratio {g / d:.2f}  "
                f"gateway CPU per request median {statistics.median(CPU_MS):.2f} ms"
            )


if __name__ == "__main__":
    main()
