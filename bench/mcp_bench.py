"""MCP (stdio) tool-call overhead next to the SDK's own client and a direct call, and server start time.

    python bench/mcp_bench.py [--calls 300] [--starts 3]

Starts bench/mcp_echo_server.py (the official `mcp` SDK's FastMCP) the way a
run does (`McpHub`: the guard, stdio, initialize, tools/list), then times
`word_count` called directly, through `McpHub.call`, through the engine's
`execute` on the tool `hub_tools` made of it, and one step of a headless run
whose policy calls it (the decision, the call and both events), in the same
run. Its floor is the SDK's own client: `stdio_client` and `ClientSession`
on the same server with no guard and no thread, awaiting `call_tool` in a
loop (goal: a run's step <= 1.2x that call), and the same request sent
without `call_tool`'s check of the structured content (the SDK builds a
validator for the output schema at every call; a run builds one per schema),
the floor of the run's own hops. The SDK's calls and the run's steps are timed
in turns, one of each at a time, so the machine's load falls on all alike:
on the main thread (a headless run) and again on a worker thread, both the
SDK's loop and the run's steps (the cockpit steps there).
Start time is set next to the floor of any Python server: an interpreter
importing the SDK and exiting.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from engine import Budget, Decision, Engine, Header, ScriptedPolicy  # noqa: E402
from engine.core.tools import Tool, execute  # noqa: E402
from engine.mcp import McpHub, hub_tools  # noqa: E402
from engine.mcp.servers import McpServerConfig  # noqa: E402
from mcp_echo_server import word_count  # noqa: E402
from bench.options import at_least  # noqa: E402

SERVER = McpServerConfig(name="bench", command=sys.executable, args=(str(ROOT / "bench" / "mcp_echo_server.py"),), timeout=30, trusted=True)
TEXT = "the quick brown fox jumps over the lazy dog " * 4


def time_start(logs: Path, starts: int) -> tuple[list[float], list[float]]:
    """Seconds to a ready hub (process, initialize, tools/list), and to a stopped one."""
    up, down = [], []
    for _ in range(starts):
        hub = McpHub([SERVER], logs)
        t0 = time.perf_counter()
        hub.start()
        up.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hub.close()
        down.append(time.perf_counter() - t0)
    return up, down


def time_bare_python(starts: int) -> list[float]:
    """Seconds for an interpreter to import the SDK's server and exit: the floor of a Python server's start."""
    out = []
    for _ in range(starts):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import mcp.server.fastmcp"], check=True)
        out.append(time.perf_counter() - t0)
    return out


def per_call(fn: Callable[[], object], calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


class SdkClient:
    """The SDK's own client on a server it starts itself (`stdio_client`, `ClientSession`; no
    guard, no thread): each call is awaited on an event loop the caller runs for that call
    alone, the least a call from Python costs. A task holds the session (the SDK's task groups
    are entered and left by one task); its readers run while a call runs the loop."""

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self.ready: asyncio.Future[Any] = self.loop.create_future()
        self.stop = asyncio.Event()
        self.holder = self.loop.create_task(self._hold())
        self.session = self.loop.run_until_complete(self.ready)

    async def _hold(self) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=SERVER.command or "", args=list(SERVER.args))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            self.ready.set_result(session)
            await self.stop.wait()

    def call(self) -> str:
        result = self.loop.run_until_complete(self.session.call_tool("word_count", {"text": TEXT}))
        return result.content[0].text

    def call_unchecked(self) -> str:
        """The same request without `call_tool`'s check of the structured content (which builds
        a validator for the tool's output schema at every call; a run's builds one per schema)."""
        from mcp import types

        request = types.ClientRequest(types.CallToolRequest(params=types.CallToolRequestParams(name="word_count", arguments={"text": TEXT})))
        result = self.loop.run_until_complete(self.session.send_request(request, types.CallToolResult))
        return result.content[0].text

    def close(self) -> None:
        self.stop.set()
        self.loop.run_until_complete(self.holder)
        self.loop.close()


def sdk_and_run_steps(tool: Tool, steps: int) -> tuple[list[float], list[float], list[float]]:
    """Seconds of each SDK call (`SdkClient.call`), of the same call without its check of the
    structured content (`call_unchecked`) and of each step of a headless run (in memory) whose
    policy calls `tool` every step, taken in turns, one of each at a time, so that the
    machine's load falls on all alike."""
    header = Header(scenario="bench", task="t", task_text="Count the words.", policy="counter",
                    budget=Budget(max_steps=steps), repetition_threshold=None, tools=[tool.info()])
    policy = ScriptedPolicy("counter", lambda view: Decision.act(f"Step {view.step}.", tool.name, text=TEXT))
    engine = Engine(header, [tool], policy)
    client = SdkClient()
    expected = word_count(TEXT)
    sdk: list[float] = []
    unchecked: list[float] = []
    run: list[float] = []
    try:
        for _ in range(steps):
            t0 = time.perf_counter()
            text = client.call()
            t1 = time.perf_counter()
            bare = client.call_unchecked()
            t2 = time.perf_counter()
            engine.step()
            t3 = time.perf_counter()
            sdk.append(t1 - t0)
            unchecked.append(t2 - t1)
            run.append(t3 - t2)
            assert text == bare == expected
    finally:
        client.close()
    assert engine.state.tool_calls.get(tool.name) == steps, engine.state.ended
    return sdk, unchecked, run


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:9.3f} ms  mean {statistics.fmean(values) * 1000:9.3f} ms"


def ratio(values: list[float], floor: list[float]) -> str:
    return f"{statistics.median(values) / statistics.median(floor):.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=at_least(1), default=300)
    parser.add_argument("--starts", type=at_least(1), default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        bare = time_bare_python(args.starts)
        up, down = time_start(logs, args.starts)
        hub = McpHub([SERVER], logs)
        hub.start()
        try:
            tool = {t.name: t for t in hub_tools(hub)}["word_count"]
            expected = word_count(TEXT)
            assert hub.call("bench", "word_count", {"text": TEXT}).content[0].text == expected
            assert execute(tool, {"text": TEXT}).text == expected
            direct = per_call(lambda: word_count(TEXT), args.calls)
            via_hub = per_call(lambda: hub.call("bench", "word_count", {"text": TEXT}), args.calls)
            via_engine = per_call(lambda: execute(tool, {"text": TEXT}), args.calls)
            via_sdk, via_unchecked, via_run = sdk_and_run_steps(tool, args.calls)
            on_worker: list[tuple[list[float], list[float], list[float]]] = []
            worker = threading.Thread(target=lambda: on_worker.append(sdk_and_run_steps(tool, args.calls)), name="engine-worker")
            worker.start()
            worker.join()
            worker_sdk, worker_unchecked, worker_run = on_worker[0]
        finally:
            hub.close()
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"load average at the end: {load}")
    print(f"server start (guard + stdio + initialize + tools/list), {args.starts} starts: {ms(up)}")
    print(f"  python -c 'import mcp.server.fastmcp' alone:                   {ms(bare)}")
    print(f"server stop (close stdin, wait, kill what is left):             {ms(down)}")
    print(f"{args.calls} calls of word_count")
    print(f"  direct Python call:        {ms(direct)}")
    print(f"  McpHub.call (stdio):       {ms(via_hub)}")
    print(f"  engine execute (stdio):    {ms(via_engine)}")
    print(f"{args.calls} SDK calls, {args.calls} without its output check and {args.calls} run steps, one of each in turns")
    print(f"  SDK ClientSession.call_tool (stdio, no guard, no thread): {ms(via_sdk)}")
    print(f"  the same request without call_tool's output check:       {ms(via_unchecked)}")
    print(f"  a headless run's step calling it (McpHub, in memory):     {ms(via_run)}")
    print(f"  step / SDK call: {ratio(via_run, via_sdk)} (goal <= 1.2x); step / unchecked: {ratio(via_run, via_unchecked)}")
    print(f"the same on a worker thread (the cockpit's), {args.calls} of each in turns")
    print(f"  SDK ClientSession.call_tool:                              {ms(worker_sdk)}")
    print(f"  the same request without call_tool's output check:       {ms(worker_unchecked)}")
    print(f"  a run's step calling it:                                  {ms(worker_run)}")
    print(f"  step / SDK call: {ratio(worker_run, worker_sdk)} (goal <= 1.2x); step / unchecked: {ratio(worker_run, worker_unchecked)}")
    d = statistics.median(direct)
    print(
        f"overhead per call: hub {(statistics.median(via_hub) - d) * 1000:.3f} ms, "
        f"engine {(statistics.median(via_engine) - d) * 1000:.3f} ms; "
        f"ratio hub/direct {statistics.median(via_hub) / d:,.0f}x"
    )


if __name__ == "__main__":
    main()
