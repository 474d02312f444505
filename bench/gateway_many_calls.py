"""Time the gateway takes over one reply with many tool calls, and over the agent's results.

    python bench/gateway_many_calls.py [--calls 2500 10000 20000] [--stream] [--key] [--profile]

For each count, the loopback fake upstream answers one request with that many
`read_file` calls (a rule allows them all, so every call is released), then the
agent sends every result back and the upstream answers. The gateway is driven
as its server drives it (`Gateway.submit`), with its transcript written, so the
figures are the gateway's own work with its lock held: reading the reply, the
engine's decisions, the response, then delivering the results. Prints seconds
per phase; the work should grow linearly with the count. `--profile` prints
the top of a cProfile of the largest count.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.core.events import RuleInfo  # noqa: E402
from engine.gateway import Gateway, Upstream  # noqa: E402
from engine.model.config import Secret  # noqa: E402
from tests.support.fake_openai import Answer, FakeOpenAI, say  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    }
]
USER = [{"role": "user", "content": "Read every file."}]


def one(fake: FakeOpenAI, calls: int, stream: bool, folder: Path, key: bool = False) -> tuple[float, float, int]:
    """Seconds for the reply with `calls` calls, seconds for the results turn, response bytes."""
    specs = [{"id": f"call_{n}", "name": "read_file", "arguments": json.dumps({"path": f"f{n}.txt"})} for n in range(calls)]
    fake.add(Answer(tool_calls=specs, chunk_size=1000), say("done"))
    gw = Gateway([Upstream("fake", fake.url)], rules=[RuleInfo(tool="read_*", effect="allow", source="bench")], headless=True, out=folder / f"many-{calls}-{time.monotonic_ns()}.jsonl",
                 key=Secret("sk-bench-0123456789abcdef0123456789abcdef") if key else None)
    try:
        body = {"model": "m", "messages": USER, "tools": TOOLS, "stream": stream}
        start = time.perf_counter()
        response = gw.submit(body).result(600)
        first = time.perf_counter() - start
        assert response.status == 200, response.body[:300]
        if stream:
            ids = [f"call_{n}" for n in range(calls)]
            message = {"role": "assistant", "content": None, "tool_calls": [{"id": i, "type": "function", "function": {"name": "read_file", "arguments": "{}"}} for i in ids]}
        else:
            message = json.loads(response.body)["choices"][0]["message"]
        results = [{"role": "tool", "tool_call_id": c["id"], "content": f"text {n}"} for n, c in enumerate(message["tool_calls"])]
        body = {"model": "m", "messages": [*USER, message, *results], "tools": TOOLS, "stream": stream}
        start = time.perf_counter()
        second_response = gw.submit(body).result(600)
        second = time.perf_counter() - start
        assert second_response.status == 200, second_response.body[:300]
        return first, second, len(response.body)
    finally:
        gw.stop("the bench ended")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[2500, 10000, 20000])
    parser.add_argument("--stream", action="store_true", help="streamed replies (server-sent events)")
    parser.add_argument("--key", action="store_true", help="with an upstream key, so every reply is searched for its echo")
    parser.add_argument("--profile", action="store_true", help="cProfile the largest count")
    args = parser.parse_args()
    with FakeOpenAI() as fake, tempfile.TemporaryDirectory() as folder:
        print(f"{'calls':>7} {'reply MB':>9} {'reply s':>8} {'results s':>10} {'us/call':>8}")
        for calls in args.calls:
            first, second, size = one(fake, calls, args.stream, Path(folder), args.key)
            print(f"{calls:>7} {size / 1e6:>9.2f} {first:>8.2f} {second:>10.2f} {(first + second) / calls * 1e6:>8.0f}", flush=True)
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(one, fake, max(args.calls), args.stream, Path(folder), args.key)
            pstats.Stats(profile).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
