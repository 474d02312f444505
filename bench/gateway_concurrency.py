"""Eight agents at once through `agent-tui gateway`, next to the same eight calling the upstream directly.

    python bench/gateway_concurrency.py [--clients 8] [--requests 400] [--turns 10] [--latency 200] [--bare thread|async|both]

`--clients` threads each run agent loops against the loopback fake upstream
(each conversation `--turns` requests; each request carries the whole history
and one more tool result; every call released by a rule, nothing held), first
directly, then through the gateway's floor (a bare forwarding proxy of the same parts,
`bench/bare_proxy.py`, its client as `--bare` says), then through a headless gateway
writing its transcripts, `--requests` requests in all each time. The gateway (and the
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
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bench.bare_proxy import CLIENTS, BareProxy  # noqa: E402
from bench.gateway_latency import TOOLS, measure  # noqa: E402
from bench.options import at_least  # noqa: E402
from engine.core.events import RuleInfo  # noqa: E402
from engine.gateway import Gateway, GatewayServer, Upstream  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, Request, call  # noqa: E402


def _lookup(request: Request) -> Any:
    """A call with an id of its own in its conversation (one per request, so results match)."""
    n = len(request.messages)
    return call("lookup", id=f"call_{n}", key=f"item-{n}")


def _client_loop(url: str, client_number: int, requests: int, turns: int, stream: bool, failures: list[str]) -> None:
    with httpx.Client(timeout=60, trust_env=False) as client:
        messages: list[dict[str, Any]] = []
        for n in range(requests):
            if n % turns == 0:
                messages = [{"role": "user", "content": f"Client {client_number}, conversation {n // turns}: look up every key."}]
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


def _throughput(url: str, clients: int, requests: int, turns: int) -> tuple[float, list[str]]:
    """Requests per second of `clients` agents sending `requests` in all (half of them streamed)."""
    failures: list[str] = []
    each = requests // clients
    threads = [
        threading.Thread(target=_client_loop, args=(url, n, each, turns, n % 2 == 1, failures), daemon=True) for n in range(clients)
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


def _through_process(command: list[str], clients: int, requests: int, turns: int) -> tuple[float, list[str], dict[str, Any]]:
    """Throughput through a server in a child process (`command`: the gateway's `--serve` or
    `bench/bare_proxy.py`; its port on its first line, what it counted as JSON once stdin closes), and that."""
    child = subprocess.Popen([sys.executable, *command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    try:
        port = int(child.stdout.readline())
        through, failed = _throughput(f"http://127.0.0.1:{port}/v1", clients, requests, turns)
    finally:
        child.stdin.close()
    ended = json.loads(child.stdout.readline() or '{"runs": 0, "aborted": 0, "cpu": 0}')
    child.wait(30)
    return through, failed, ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-process", action="store_true", help="the gateway in the bench's own process (one interpreter lock for all)")
    parser.add_argument("--serve", metavar="UPSTREAM_URL", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--clients", type=at_least(1), default=8)
    parser.add_argument("--requests", type=at_least(8), default=400, help="requests in all, shared by the clients")
    parser.add_argument("--turns", type=at_least(1), default=10, help="requests per conversation")
    parser.add_argument("--latency", type=at_least(20), default=200, help="requests for the added-latency figures")
    parser.add_argument("--bare", choices=[*CLIENTS, "both"], default="thread", help="the bare proxy's upstream client (the floor); both: one proxy with each")
    args = parser.parse_args()
    bare = CLIENTS if args.bare == "both" else (args.bare,)
    if args.serve:
        _serve(args.serve, args.out)
        return
    where = "in the bench's process" if args.in_process else "in its own process"
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        fake.add(*[_lookup] * ((2 + len(bare)) * args.requests + 16))
        direct, failed_direct = _throughput(fake.url, args.clients, args.requests, args.turns)
        print(f"{args.clients} clients, {args.requests} requests: direct {direct:.0f} requests/s")
        failures = list(failed_direct)
        for client in bare:
            if args.in_process:
                with BareProxy(fake.url, client) as proxy:
                    through, failed = _throughput(proxy.url_for(fake.url), args.clients, args.requests, args.turns)
                cpu = None
            else:
                through, failed, ended = _through_process([str(Path(__file__).parent / "bare_proxy.py"), fake.url, "--client", client], args.clients, args.requests, args.turns)
                cpu = ended["cpu"]
            failures += failed
            print(f"  bare proxy, {client} ({where}) {through:.0f} requests/s, ratio {through / direct:.2f}{_cpu(cpu, args.requests)}; failed requests {len(failed)}")
        if args.in_process:
            gw = Gateway([Upstream("fake", fake.url)], rules=[RuleInfo(tool="*", effect="allow")], headless=True, out=Path(tmp) / "bench.jsonl")
            server = GatewayServer(gw, "127.0.0.1", 0)
            server.start()
            try:
                through, failed = _throughput(server.url, args.clients, args.requests, args.turns)
            finally:
                gw.stop("the benchmark ended")
                server.close()
            runs, aborted, cpu = len(gw.runs), _aborted(gw), None
        else:
            through, failed, ended = _through_process([__file__, "--serve", fake.url, "--out", str(Path(tmp) / "bench.jsonl")], args.clients, args.requests, args.turns)
            runs, aborted, cpu = ended["runs"], ended["aborted"], ended["cpu"]
        failures += failed
        print(
            f"  gateway ({where}) {through:.0f} requests/s, ratio {through / direct:.2f}{_cpu(cpu, args.requests)}; "
            f"failed requests {len(failed)}; runs {runs}, aborted by another conversation {aborted}"
        )
        for failure in failures[:5]:
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
