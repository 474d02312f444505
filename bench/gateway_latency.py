"""Latency `agent-tui gateway` adds to a released model turn, next to calling the upstream directly.

    python bench/gateway_latency.py [--requests 300] [--turns 20]

An agent loop of `--turns` requests per conversation (each request carries
the whole history and one more tool result) runs against the loopback fake
upstream twice per request, in the same run: once directly, once through a
headless gateway in passthrough (continue) mode whose rule allows every call,
writing its transcript; one reused `httpx.Client` for both. Whole and
streamed replies. Prints, for each, the median and 95th percentile of both,
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
from tests.support.fake_openai import FakeOpenAI, call  # noqa: E402
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


def _timed(client: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, float]:
    """Wall-clock and process CPU milliseconds of one request, its body read to the end."""
    started, cpu = time.perf_counter(), time.process_time()
    if body.get("stream"):
        with client.stream("POST", url, json=body) as response:
            for _ in response.iter_bytes():
                pass
            status = response.status_code
    else:
        status = client.post(url, json=body).status_code
    elapsed, cpu_used = time.perf_counter() - started, time.process_time() - cpu
    if status != 200:
        raise SystemExit(f"request failed with {status}")
    return elapsed * 1000, cpu_used * 1000


def measure(requests: int, turns: int, stream: bool, folder: Path) -> dict[str, list[float]]:
    got: dict[str, list[float]] = {"direct": [], "through": [], "direct_cpu": [], "through_cpu": []}
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
                for kind, url in (("direct", fake.url), ("through", server.url)):
                    wall, cpu = _timed(client, url + "/chat/completions", body)
                    got[kind].append(wall)
                    got[f"{kind}_cpu"].append(cpu)
                messages = [
                    *messages,
                    {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"key": f"item-{n}"})}}]},
                    {"role": "tool", "tool_call_id": call_id, "content": f"value of item-{n} is {n * 7}"},
                ]
        finally:
            client.close()
            gw.stop("the benchmark ended")
            server.close()
    return got


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=at_least(20), default=300)
    parser.add_argument("--turns", type=at_least(1), default=20, help="requests per conversation")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for stream in (False, True):
            got = measure(args.requests, args.turns, stream, Path(tmp))
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


if __name__ == "__main__":
    main()
