"""Memory a long-lived gateway holds after many requests.

    python bench/gateway_memory.py [--requests 1000 3000 5000] [--turns 1] [--top 0]

The loopback fake upstream answers every request; each conversation is
`--turns` requests long (a user message, the answer, the next user message...),
then the agent starts another, so every conversation's runs finish. The gateway
is driven as its server drives it (`Gateway.submit`), writing its transcripts.
Prints the Python heap (tracemalloc, after a full collection) once the given
numbers of requests were served, with its growth since the first mark: the
gateway lists only its newest runs (`KEPT_RUNS`) and counts the older (their
transcripts are on disk), so after the first 1,000 requests the heap should
stay flat (the goal: within 10 %). `--top N` prints the N places whose memory
grew most between the first mark and the last (what still grows per request).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.gateway import Gateway, Upstream  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, say  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{n}",
            "description": "A tool the agent declares with every request. " * 4,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
    for n in range(8)
]
SYSTEM = {"role": "system", "content": "You are a careful agent. " * 40}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, nargs="+", default=[1000, 3000, 5000])
    parser.add_argument("--turns", type=int, default=1, help="requests per conversation")
    parser.add_argument("--top", type=int, default=0, help="print the places whose memory grew most from the first mark to the last")
    args = parser.parse_args()
    marks = sorted(args.requests)
    with FakeOpenAI() as fake, tempfile.TemporaryDirectory() as folder:
        gw = Gateway([Upstream("fake", fake.url)], headless=True, out=Path(folder) / "g.jsonl")
        tracemalloc.start()
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        print(f"{'requests':>9} {'listed':>6} {'older':>6} {'heap MB':>8} {'vs first':>9}")
        served, conversation = 0, 0
        first: tuple[float, tracemalloc.Snapshot | None] | None = None
        messages: list[dict] = []
        try:
            while served < marks[-1]:
                if served % args.turns == 0:
                    conversation += 1
                    messages = [SYSTEM]
                messages = [*messages, {"role": "user", "content": f"conversation {conversation}, request {served}: " + "x" * 400}]
                fake.add(say(f"answer {served} " + "y" * 400))
                response = gw.submit({"model": "m", "messages": messages, "tools": TOOLS}).result(60)
                assert response.status == 200, response.body[:300]
                messages.append({"role": "assistant", "content": f"answer {served} " + "y" * 400})
                fake.requests.clear()
                served += 1
                if served in marks:
                    gc.collect()
                    heap = tracemalloc.get_traced_memory()[0] - base
                    snapshot = tracemalloc.take_snapshot() if args.top else None
                    if first is None:
                        first = (heap, snapshot)
                    growth = f"{(heap / first[0] - 1) * 100:+.1f} %"
                    print(f"{served:>9} {len(gw.runs):>6} {gw.older.count:>6} {heap / 1e6:>8.2f} {growth:>9}", flush=True)
            if args.top and first is not None and first[1] is not None and snapshot is not None:
                for stat in snapshot.compare_to(first[1], "lineno")[: args.top]:
                    print(f"  {stat.size_diff / 1e3:+9.1f} KB {stat.count_diff:+7d} blocks  {stat.traceback[0]}")
        finally:
            gw.stop("the bench ended")


if __name__ == "__main__":
    main()
