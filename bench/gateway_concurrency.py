"""Eight agents at once through `agent-tui gateway`, next to the same eight calling the upstream directly.

    python bench/gateway_concurrency.py [--clients 8] [--requests 400] [--turns 10] [--latency 200] [--bare thread|async|both]

`--clients` threads each run agent loops against the loopback fake upstream
(each conversation `--turns` requests; each request carries the whole history
and one more tool result; every call released by a rule, nothing held), directly, through
the gateway's floor (a bare forwarding proxy of the same parts, `bench/bare_proxy.py`, its
client as `--bare` says) and through a headless gateway writing its transcripts, each in
turn for `--rounds` rounds (so a change in the machine's load falls on every way alike),
`--requests` requests in all each way and round; a way's throughput is its requests over
its time in all the rounds. The gateway (and the
bare proxy) runs in a process of its own, as it does
in use (`agent-tui gateway` beside the agents and the model server): in the
bench's own process it would share one interpreter lock with the eight clients
and the fake upstream, and the figure would measure that lock (`--in-process`
measures it so). Prints the throughput of each (requests per second)
and its ratio to direct, the gateway's runs and how many were aborted, the CPU time
the proxy's and the gateway's process spend a request (what eight agents on shared cores
feel most), and, from
`bench/gateway_latency.py` (one client, `--latency` requests), the latency the
bare proxy and the gateway add to a released turn at the median, whole and streamed.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bench.bare_proxy import CLIENTS, BareProxy  # noqa: E402
from bench.gateway_latency import TOOLS, measure  # noqa: E402
from bench.options import at_least  # noqa: E402
from bench.server_processes import Child  # noqa: E402
from engine.core.events import RuleInfo  # noqa: E402
from engine.gateway import Gateway, GatewayServer, Upstream  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, Request, call  # noqa: E402


def _lookup(request: Request) -> Any:
    """A call with an id of its own in its conversation (one per request, so results match)."""
    n = len(request.messages)
    return call("lookup", id=f"call_{n}", key=f"item-{n}")


def _client_loop(url: str, client_number: int, requests: int, turns: int, stream: bool, failures: list[str], tag: str = "") -> None:
    with httpx.Client(timeout=60, trust_env=False) as client:
        messages: list[dict[str, Any]] = []
        for n in range(requests):
            if n % turns == 0:
                messages = [{"role": "user", "content": f"Client {client_number}{tag}, conversation {n // turns}: look up every key."}]
            body = {"model": "m", "messages": messages, "tools": TOOLS, "stream": stream}
            if stream:
                with client.stream("POST", url + "/chat/completions", json=body) as response:
                    for _ in response.iter_bytes():
                        pass
                    status = response.status_code
            else:
                status = client.post(url + "/chat/completions", json=body).status_code
            if status != 200:
                failures.append(f"client {client_number}: status {status}")
                return
            call_id = f"call_{len(messages)}"
            arguments = json.dumps({"key": f"item-{len(messages)}"})
            messages = [
                *messages,
                {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": call_id, "content": f"value {n}"},
            ]


def _throughput(url: str, clients: int, requests: int, turns: int, tag: str = "") -> tuple[float, list[str]]:
    """Requests per second of `clients` agents sending `requests` in all (half of them streamed);
    `tag` in their conversations' first words (a round's own conversations)."""
    failures: list[str] = []
    each = requests // clients
    threads = [
        threading.Thread(target=_client_loop, args=(url, n, each, turns, n % 2 == 1, failures, tag), daemon=True) for n in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    return each * clients / (time.perf_counter() - started), failures


def _serve(upstream_url: str, out: Path) -> None:
    """The gateway of the bench in this process (`--serve`): its port on stdout, then serve until
    stdin closes; then its runs, how many were aborted by another conversation and the CPU
    seconds it used while serving, as JSON."""
    gw = Gateway([Upstream("fake", upstream_url)], rules=[RuleInfo(tool="*", effect="allow")], headless=True, out=out)
    server = GatewayServer(gw, "127.0.0.1", 0)
    server.start()
    print(server.port, flush=True)
    cpu = time.process_time()
    try:
        sys.stdin.read()
    finally:
        cpu = time.process_time() - cpu
        gw.stop("the benchmark ended")
        server.close()
    print(json.dumps({"runs": len(gw.runs), "aborted": _aborted(gw), "cpu": cpu}), flush=True)


def _aborted(gw: Gateway) -> int:
    return sum(1 for r in gw.runs if r.ended is not None and r.ended.outcome == "aborted" and r.ended.reason != "the benchmark ended")


@contextmanager
def _child(command: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """A server in a child process (`command`: the gateway's `--serve` or `bench/bare_proxy.py`;
    its port on a line of its own, what it counted as JSON on its last line once stdin closes):
    its URL, and what it counted (filled once the block ends)."""
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stops:
        child = Child(Path(command[0]).stem, [sys.executable, *command], Path(folder) / "said.log", re.compile(r"^(\d+)$", re.M), stops=stops)
        ended: dict[str, Any] = {}
        try:
            yield f"http://127.0.0.1:{child.port}/v1", ended
        finally:
            stops.close()
            last = (child.log.read_text(errors="replace").strip().splitlines() or [""])[-1]
            ended.update(json.loads(last) if last.startswith("{") else {"runs": 0, "aborted": 0, "cpu": 0})


@contextmanager
def _in_process(upstream_url: str, out: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """The gateway of `_serve` in the bench's own process: its URL, and its runs and aborted runs once the block ends."""
    gw = Gateway([Upstream("fake", upstream_url)], rules=[RuleInfo(tool="*", effect="allow")], headless=True, out=out)
    server = GatewayServer(gw, "127.0.0.1", 0)
    server.start()
    ended: dict[str, Any] = {}
    try:
        yield server.url, ended
    finally:
        gw.stop("the benchmark ended")
        server.close()
        ended.update(runs=len(gw.runs), aborted=_aborted(gw))


@contextmanager
def _bare_in_process(upstream_url: str, client: str) -> Iterator[tuple[str, dict[str, Any]]]:
    with BareProxy(upstream_url, client) as proxy:
        yield proxy.url_for(upstream_url), {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-process", action="store_true", help="the gateway in the bench's own process (one interpreter lock for all)")
    parser.add_argument("--serve", metavar="UPSTREAM_URL", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--clients", type=at_least(1), default=8)
    parser.add_argument("--requests", type=at_least(8), default=400, help="requests in all each way and round, shared by the clients")
    parser.add_argument("--rounds", type=at_least(1), default=3, help="rounds of every way in turn (direct, the bare proxy, the gateway)")
    parser.add_argument("--turns", type=at_least(1), default=10, help="requests per conversation")
    parser.add_argument("--latency", type=at_least(20), default=200, help="requests for the added-latency figures")
    parser.add_argument("--bare", choices=[*CLIENTS, "both"], default="thread", help="the bare proxy's upstream client (the floor); both: one proxy with each")
    args = parser.parse_args()
    bare = CLIENTS if args.bare == "both" else (args.bare,)
    if args.serve:
        _serve(args.serve, args.out)
        return
    where = "in the bench's process" if args.in_process else "in its own process"
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake, ExitStack() as servers:
        out = Path(tmp) / "bench.jsonl"
        fake.add(*[_lookup] * ((2 + len(bare)) * args.requests * args.rounds + 16))
        ways: dict[str, tuple[str, dict[str, Any]]] = {"direct": (fake.url, {})}
        for client in bare:
            proxy = _bare_in_process(fake.url, client) if args.in_process else _child([str(Path(__file__).parent / "bare_proxy.py"), fake.url, "--client", client])
            ways[f"bare proxy, {client}"] = servers.enter_context(proxy)
        ways["gateway"] = servers.enter_context(_in_process(fake.url, out) if args.in_process else _child([__file__, "--serve", fake.url, "--out", str(out)]))
        took = dict.fromkeys(ways, 0.0)
        failures: dict[str, list[str]] = {kind: [] for kind in ways}
        each = args.requests // args.clients * args.clients
        for round_number in range(args.rounds):  # each way in turn, so the machine's load changes them alike
            for kind, (url, _) in ways.items():
                rate, failed = _throughput(url, args.clients, args.requests, args.turns, f" (round {round_number})")
                took[kind] += each / rate
                failures[kind] += failed
        servers.close()
        rates = {kind: each * args.rounds / seconds for kind, seconds in took.items()}
        direct = rates["direct"]
        print(f"{args.clients} clients, {args.requests} requests, {args.rounds} rounds: direct {direct:.0f} requests/s")
        for kind, (_, ended) in ways.items():
            if kind == "direct":
                continue
            cpu = _cpu(ended.get("cpu"), each * args.rounds)
            runs = f"; runs {ended['runs']}, aborted by another conversation {ended['aborted']}" if kind == "gateway" else ""
            if kind == "gateway":
                runs += "".join(f"; {rates[kind] / rates[f'bare proxy, {c}']:.2f}x the bare proxy's ({c})" for c in bare)
            print(f"  {kind} ({where}) {rates[kind]:.0f} requests/s, ratio {rates[kind] / direct:.2f}{cpu}; failed requests {len(failures[kind])}{runs}")
        for failure in [f for kind in ways for f in failures[kind]][:5]:
            print(f"  {failure}")
        for stream in (False, True):
            got = measure(args.latency, args.turns, stream, Path(tmp), bare)
            floors = ", ".join(f"bare proxy, {c} p50 {statistics.median(got[f'bare {c}']):.2f} ms (added {_added(got, f'bare {c}'):.2f})" for c in bare)
            print(
                f"{'streamed' if stream else 'whole':8} released turn: direct p50 {statistics.median(got['direct']):.2f} ms, {floors}, "
                f"gateway p50 {statistics.median(got['through']):.2f} ms, added p50 {_added(got, 'through'):.2f} ms"
            )


def _cpu(seconds: float | None, requests: int) -> str:
    return f"; its CPU {seconds * 1000 / requests:.2f} ms a request" if seconds is not None else ""


def _added(got: dict[str, list[float]], kind: str) -> float:
    return statistics.median(b - a for a, b in zip(got["direct"], got[kind]))

if __name__ == "__main__":
    main()
