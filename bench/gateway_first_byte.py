"""When a streamed reply's first text reaches the agent through `agent-tui gateway`, next to directly.

    python bench/gateway_first_byte.py [--requests 10] [--pieces 12] [--gap 20] [--wire chat|gemini|anthropic|responses] [--tools 27] [--bare thread|async|both] [--processes] [--key]

A loopback upstream streams a reply in `--pieces` pieces of text `--gap` ms apart
(12 x 20 ms: over 220 ms), then, with `--call`, a tool call a rule releases. The
agent asks it directly, through the gateway's floor (a bare forwarding proxy of the same
parts, `bench/bare_proxy.py`, its client as `--bare` says) and through a headless gateway
(writing its transcript), in turns, and reads the stream to its end. Prints, for each, the
median time to the first byte of the body, to the first text and to the end: the text should
reach the agent through the gateway about as soon as directly (not once the whole reply is
read), and the end a little later; and the first byte's and the first text's latency over
direct of the bare proxy and the gateway, and the gateway's own part (over the bare proxy),
request by request. Every request starts a new conversation (a new run: its header, seal and
transcript before the upstream is asked). `--tools N`: the agent declares N tools, the first
the bench's own and the others shaped like a coding agent's (a long description, five described
parameters: about 1.3 KB of schema each; Claude Code declares 24-27).
`--key`: the gateway holds an upstream key (as with every real upstream), which it masks in
what the upstream sends: text goes early once no join of what came ends with the key's start.
`--processes`: the upstream, each bare proxy and the gateway (`agent-tui gateway --headless`)
each in a process of its own (`bench/server_processes.py`), and each one's CPU a request
printed (from the second request on).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from bench.bare_proxy import CLIENTS, BareProxy  # noqa: E402
from bench.gateway_latency import TOOLS  # noqa: E402
from bench.options import at_least  # noqa: E402
from bench.server_processes import Servers, serve, stopped_on_sigterm  # noqa: E402
from engine.core.events import RuleInfo  # noqa: E402
from engine.gateway import Gateway, GatewayServer, Upstream  # noqa: E402
from engine.model.config import Secret  # noqa: E402
from tests.support.loopback import Loopback  # noqa: E402


KEY = "sk-bench-upstream-" + "0123456789abcdef" * 6
"""The upstream key of `--key`: 114 characters, as long as a real Anthropic key."""


class SlowUpstream(Loopback):
    def __init__(self, wire: str, pieces: int, gap: float, call: bool) -> None:
        self.wire, self.pieces, self.gap, self.call = wire, pieces, gap, call
        super().__init__(Starlette(routes=[Route("/{path:path}", self._reply, methods=["POST"])]))

    async def _reply(self, request: Request) -> StreamingResponse:
        await request.body()
        return StreamingResponse(self._events(), media_type="text/event-stream")

    async def _events(self) -> AsyncIterator[bytes]:
        if self.wire in ("anthropic", "responses"):
            async for event in self._numbered():
                yield event
            return
        for n in range(self.pieces):
            if n:
                await asyncio.sleep(self.gap)
            last = n == self.pieces - 1 and not self.call
            yield self._chunk({"content": f"word{n} "}, [{"text": f"word{n} "}], last)
        if self.call:
            call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"key": "k"}'}}
            yield self._chunk({"tool_calls": [call]}, [{"functionCall": {"name": "lookup", "args": {"key": "k"}}}], True)
        if self.wire == "chat":
            yield b"data: [DONE]\n\n"

    async def _numbered(self) -> AsyncIterator[bytes]:
        """The pieces as one Anthropic message (a text block, then a tool use) or one response (a message item, then a call)."""
        number = iter(range(1000))

        def event(data: dict[str, Any]) -> bytes:
            if self.wire == "responses":
                data = {**data, "sequence_number": next(number)}
            return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

        anthropic = self.wire == "anthropic"
        if anthropic:
            start = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {"input_tokens": 3, "output_tokens": 0}}
            yield event({"type": "message_start", "message": start})
            yield event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        else:
            yield event({"type": "response.created", "response": {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}})
            yield event({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}})
        text = ""
        for n in range(self.pieces):
            if n:
                await asyncio.sleep(self.gap)
            text += f"word{n} "
            if anthropic:
                yield event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"word{n} "}})
            else:
                yield event({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": f"word{n} "})
        message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
        output = [message]
        if anthropic:
            yield event({"type": "content_block_stop", "index": 0})
        else:
            yield event({"type": "response.output_item.done", "output_index": 0, "item": message})
        if self.call and anthropic:
            yield event({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}})
            yield event({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"key": "k"}'}})
            yield event({"type": "content_block_stop", "index": 1})
        elif self.call:
            call = {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "lookup", "arguments": '{"key": "k"}'}
            yield event({"type": "response.output_item.added", "output_index": 1, "item": {**call, "arguments": ""}})
            yield event({"type": "response.output_item.done", "output_index": 1, "item": call})
            output.append(call)
        if anthropic:
            delta = {"stop_reason": "tool_use" if self.call else "end_turn", "stop_sequence": None}
            yield event({"type": "message_delta", "delta": delta, "usage": {"output_tokens": self.pieces}})
            yield event({"type": "message_stop"})
        else:
            usage = {"input_tokens": 3, "output_tokens": self.pieces, "total_tokens": 3 + self.pieces}
            yield event({"type": "response.completed", "response": {"id": "resp_1", "object": "response", "status": "completed", "model": "m", "output": output, "usage": usage}})

    def _chunk(self, delta: dict[str, Any], parts: list[dict[str, Any]], last: bool) -> bytes:
        if self.wire == "chat":
            finish = ("tool_calls" if self.call else "stop") if last else None
            chunk: dict[str, Any] = {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        else:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if last:
                candidate["finishReason"] = "STOP"
            chunk = {"candidates": [candidate]}
        return f"data: {json.dumps(chunk)}\n\n".encode()


def agent_tools(count: int) -> list[dict[str, Any]]:
    """`count` chat-completions tools: `lookup`, then tools of about 1.3 KB of schema each."""
    tools = list(TOOLS)
    for n in range(1, count):
        about = f"Tool {n} does one thing to the workspace. " + "It is described at length, with usage notes and caveats. " * 5
        properties = {
            f"param_{k}": {"type": ("string", "integer", "boolean", "array")[k % 4], "description": f"What parameter {k} means, said as an agent says it. " * 2}
            for k in range(5)
        }
        parameters = {"type": "object", "properties": properties, "required": ["param_0"], "additionalProperties": False}
        tools.append({"type": "function", "function": {"name": f"tool_{n}", "description": about, "parameters": parameters}})
    return tools


def _timed(client: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, float, float]:
    """Milliseconds to the stream's first line, to its first text and to its end."""
    started = time.perf_counter()
    line_came = first = None
    with client.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            raise SystemExit(f"request failed with {response.status_code}")
        for line in response.iter_lines():
            if line_came is None:
                line_came = time.perf_counter()
            if first is None and "word0" in line:
                first = time.perf_counter()
    end = time.perf_counter()
    assert line_came is not None and first is not None, "no text came"
    return (line_came - started) * 1000, (first - started) * 1000, (end - started) * 1000


@contextmanager
def _in_process(args: argparse.Namespace, folder: Path, bare: tuple[str, ...]) -> Iterator[tuple[list[tuple[str, str]], Servers | None]]:
    """The slow upstream, a bare proxy with each client of `bare` and a headless gateway whose
    rule releases every call (its transcript in `folder`), all in the bench's process: each
    way's name and base URL (direct, the proxies, the gateway)."""
    under = "/v1" if args.wire in ("chat", "responses") else ""
    with SlowUpstream(args.wire, args.pieces, args.gap / 1000, args.call) as upstream, ExitStack() as proxies:
        base = upstream.url + under
        key = Secret(KEY) if args.key else None
        gw = Gateway([Upstream("slow", base, wire=args.wire)], rules=[RuleInfo(tool="*", effect="allow")], headless=True, out=folder / "g.jsonl", key=key)
        server = GatewayServer(gw, "127.0.0.1", 0)
        server.start()
        try:
            ways = [("direct", base), *((f"bare proxy, {c}", proxies.enter_context(BareProxy(base, c)).url_for(base)) for c in bare), ("gateway", f"http://127.0.0.1:{server.port}" + under)]
            yield ways, None
        finally:
            gw.stop("the bench ended")
            server.close()


@contextmanager
def _processes(args: argparse.Namespace, folder: Path, bare: tuple[str, ...]) -> Iterator[tuple[list[tuple[str, str]], Servers | None]]:
    """`_in_process`'s servers each in a process of its own, the gateway as `agent-tui gateway --headless` (`bench/server_processes.py`)."""
    under = "/v1" if args.wire in ("chat", "responses") else ""
    serving = [__file__, "--serve-upstream", "--wire", args.wire, "--pieces", str(args.pieces), "--gap", str(args.gap), *(["--call"] if args.call else [])]
    prefix = "" if args.wire == "chat" else f"{args.wire}+"
    with Servers(folder, serving, bare, prefix + "{root}" + under, key=KEY if args.key else None) as servers:
        names = {"direct": "direct", **{f"bare {c}": f"bare proxy, {c}" for c in bare}, "through": "gateway"}
        yield [(names[way], servers.root(way) + under) for way in servers.children()], servers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=at_least(3), default=10)
    parser.add_argument("--pieces", type=at_least(1), default=12)
    parser.add_argument("--gap", type=float, default=20.0, help="milliseconds between pieces")
    parser.add_argument("--wire", choices=["chat", "gemini", "anthropic", "responses"], default="chat")
    parser.add_argument("--call", action="store_true", help="a tool call after the text (released by a rule)")
    parser.add_argument("--tools", type=at_least(1), default=1, help="tools the agent declares (the first is the one called)")
    parser.add_argument("--bare", choices=[*CLIENTS, "both"], default="thread", help="the bare proxy's upstream client (the floor); both: one proxy with each")
    parser.add_argument("--processes", action="store_true", help="the upstream, each bare proxy and the gateway (agent-tui gateway --headless) each in a process of its own")
    parser.add_argument("--key", action="store_true", help="the gateway holds an upstream key, which it masks in what the upstream sends")
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve(SlowUpstream(args.wire, args.pieces, args.gap / 1000, args.call))
        return
    bare = CLIENTS if args.bare == "both" else (args.bare,)
    cpu: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, stopped_on_sigterm(), (_processes if args.processes else _in_process)(args, Path(tmp), bare) as (ways, servers):
        got: dict[str, list[tuple[float, float, float]]] = {kind: [] for kind, _ in ways}
        chat_tools = agent_tools(args.tools)
        functions = [t["function"] for t in chat_tools]
        with httpx.Client(timeout=30, trust_env=False) as client:
            for n in range(args.requests):
                asked = [{"role": "user", "content": f"request {n}"}]
                if args.wire == "chat":
                    path = "/chat/completions"
                    body: dict[str, Any] = {"model": "m", "messages": asked, "tools": chat_tools, "stream": True}
                elif args.wire == "anthropic":
                    path = "/v1/messages"
                    tools = [{"name": f["name"], "description": f["description"], "input_schema": f["parameters"]} for f in functions]
                    body = {"model": "m", "max_tokens": 100, "messages": asked, "tools": tools, "stream": True}
                elif args.wire == "responses":
                    path = "/responses"
                    tools = [{"type": "function", "name": f["name"], "description": f["description"], "parameters": f["parameters"]} for f in functions]
                    body = {"model": "m", "input": asked, "tools": tools, "stream": True, "store": False}
                else:
                    path = "/v1beta/models/m:streamGenerateContent?alt=sse"
                    declarations = [{"name": f["name"], "description": f["description"], "parametersJsonSchema": f["parameters"]} for f in functions]
                    body = {"contents": [{"role": "user", "parts": [{"text": f"request {n}"}]}], "tools": [{"functionDeclarations": declarations}]}
                for kind, root in ways:
                    got[kind].append(_timed(client, root + path, body))
                if servers is not None and n == 0:  # the servers' CPU from the second request (the first loads what each serves with)
                    servers.mark()
        if servers is not None:
            cpu = dict(zip(got, servers.cpu_each(args.requests - 1).values()))
    spread = args.gap * (args.pieces - 1)
    called = ", then a call" if args.call else ""
    where = (", each server in its own process" if args.processes else "") + (", the gateway holding an upstream key" if args.key else "")
    print(f"{args.wire}, {args.pieces} pieces {args.gap:.0f} ms apart ({spread:.0f} ms of stream){called}, {args.tools} tools, {args.requests} requests{where}:")
    for kind, times in got.items():
        line, first, end = (statistics.median(t[k] for t in times) for k in range(3))
        used = ""
        if cpu:
            used = f"   its process's CPU {cpu[kind] / (len(got) if kind == 'direct' else 1):.2f} ms a request"
        print(f"  {kind:19} first byte p50 {line:7.2f} ms   first text p50 {first:7.2f} ms   end p50 {end:7.2f} ms{used}")

    def added(kind: str, over: str = "direct", at: int = 1) -> float:
        return statistics.median(b[at] - a[at] for a, b in zip(got[over], got[kind]))

    for at, what in ((0, "byte"), (1, "text")):
        for client in bare:
            floor = f"bare proxy, {client}"
            print(
                f"  first {what} added p50: {floor} {added(floor, at=at):.2f} ms, gateway {added('gateway', at=at):.2f} ms, "
                f"the gateway's own part {added('gateway', floor, at):.2f} ms"
            )
    for client in bare if cpu else ():
        print(f"  the gateway's process's CPU over the bare proxy's, {client}: {cpu['gateway'] - cpu[f'bare proxy, {client}']:.2f} ms a request")


if __name__ == "__main__":
    main()
