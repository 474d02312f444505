"""A gateway on 127.0.0.1 in front of the fake upstream, and a two-tool agent's world.

`Operator` plays the person at the cockpit from a thread: it waits until a
call is held and answers it the way the test says.
"""


from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import openai
from engine.core.events import RuleInfo
from engine.gateway import Gateway, GatewayServer, Upstream

from tests.support.fake_openai import FakeOpenAI

READ_RULE = RuleInfo(tool="read_*", effect="allow", source="test")


def function(name: str, description: str = "") -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    }


TOOLS = [function("read_file", "Read a file"), function("delete_file", "Delete a file")]


class Files:
    """The agent's two tools acting on a folder: the delete's side effect is the proof."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "notes.txt").write_text("keep me")

    def run(self, name: str, path: str) -> str:
        target = self.folder / path
        if name == "read_file":
            return target.read_text()
        if name == "delete_file":
            target.unlink()
            return f"deleted {path}"
        raise ValueError(name)

    @property
    def notes_exist(self) -> bool:
        return (self.folder / "notes.txt").exists()


def agent_client(server: GatewayServer, **kw: Any) -> openai.OpenAI:
    """The agent's openai client for `server`, without retries."""
    return openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, **kw)




@contextmanager
def gateway(
    fake: Any, tmp_path: Path, wire: str = "chat", url: str | None = None, model: str | None = None, **options: Any
) -> Iterator[tuple[Gateway, GatewayServer]]:
    """A gateway in front of `fake` (a fake upstream speaking `wire`, at `url` when not its own, asked for
    `model` when given) on 127.0.0.1."""
    options.setdefault("rules", [READ_RULE])
    options.setdefault("out", tmp_path / "gateway.jsonl")
    token = options.pop("token", None)
    max_body = options.pop("max_body", 1 << 20)
    gw = Gateway([Upstream("fake", url or fake.url, model=model, wire=wire)], **options)
    server = GatewayServer(gw, "127.0.0.1", 0, token=token, max_body=max_body)
    server.start()
    try:
        yield gw, server
    finally:
        gw.stop("the test ended")
        server.close()


class Operator:
    """Answers held calls from a thread: `answers` are callables taking the gateway."""

    def __init__(self, gw: Gateway, *answers: Callable[[Gateway], None]) -> None:
        self.gw = gw
        self.answers = list(answers)
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 30
        while self.answers and time.monotonic() < deadline:
            engine = self.gw.engine
            if engine is not None and engine.status == "awaiting_approval":
                self.seen.append(engine.state.pending.tool)
                self.answers.pop(0)(self.gw)
            time.sleep(0.01)

    def join(self) -> None:
        self.thread.join(30)


AGENT_TUI = [sys.executable, "-m", "tui.cli"]


def start_headless_gateway(fake: FakeOpenAI, tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ntool = "read_*"\neffect = "allow"\n')
    proc = subprocess.Popen(
        [*AGENT_TUI, "gateway", "--headless", "--upstream", fake.url, "--listen", "127.0.0.1:0", "--rules", str(rules), "--out", str(tmp_path / "gw.jsonl"), *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    line = proc.stderr.readline()
    assert "listening on" in line, line + proc.stderr.read()
    return proc, line.split("listening on ")[1].split(" ")[0]


def stop_gateway(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def agent_loop(client: openai.OpenAI, files: Files, *, stream: bool = False) -> tuple[str, list[str]]:
    """The plainest agent: ask, run the calls it gets, until a reply without calls."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Tidy the folder."}]
    seen: list[str] = []
    for _ in range(10):
        if stream:
            content, calls = _streamed(client, messages)
        else:
            message = client.chat.completions.create(model="agent-model", messages=messages, tools=TOOLS).choices[0].message
            content = message.content
            calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
        if not calls:
            return content or "", seen
        messages.append(
            {
                "role": "assistant",
                "content": content,
                "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls],
            }
        )
        for call_id, name, arguments in calls:
            seen.append(name)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": files.run(name, **json.loads(arguments))})
    raise AssertionError("the agent did not finish")


def _streamed(client: openai.OpenAI, messages: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str, str]]]:
    content, calls = "", {}
    with client.chat.completions.create(model="agent-model", messages=messages, tools=TOOLS, stream=True) as stream:
        for chunk in stream:
            for choice in chunk.choices:
                content += choice.delta.content or ""
                for c in choice.delta.tool_calls or []:
                    slot = calls.setdefault(c.index, ["", "", ""])
                    slot[0] = c.id or slot[0]
                    slot[1] += (c.function.name or "") if c.function else ""
                    slot[2] += (c.function.arguments or "") if c.function else ""
    return content, [tuple(v) for _, v in sorted(calls.items())]


def assert_key_nowhere(key: str, seen: str, folder: Path, echo: str) -> None:
    """No 10-character piece of `key` in what the agent `seen` nor in a file under `folder`, and the
    masked echo (`***`) somewhere: the upstream did echo it."""
    pieces = {key[i : i + 10] for i in range(len(key) - 9)}
    assert sorted(p for p in pieces if p in seen) == [], f"the agent received the key ({echo})"
    files = [p for p in folder.rglob("*") if p.is_file()]
    for path in files:
        assert sorted(p for p in pieces if p in path.read_text(errors="replace")) == [], f"the key is in {path}"
    assert "***" in seen + "".join(p.read_text(errors="replace") for p in files), "the echo never arrived"
