"""A gateway on 127.0.0.1 in front of the fake upstream, and a two-tool agent's world.

`Operator` plays the person at the cockpit from a thread: it waits until a
call is held and answers it the way the test says.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import openai

from engine.core.events import RuleInfo
from engine.gateway import Gateway, GatewayServer, Upstream

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


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Wait until `predicate()` holds (AssertionError naming `what` after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@contextmanager
def gateway(fake: Any, tmp_path: Path, wire: str = "chat", **options: Any) -> Iterator[tuple[Gateway, GatewayServer]]:
    """A gateway in front of `fake` (a fake upstream speaking `wire`) on 127.0.0.1."""
    options.setdefault("rules", [READ_RULE])
    options.setdefault("out", tmp_path / "gateway.jsonl")
    token = options.pop("token", None)
    max_body = options.pop("max_body", 1 << 20)
    gw = Gateway([Upstream("fake", fake.url, wire=wire)], **options)
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
