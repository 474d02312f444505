"""Holes found attacking the gateway: each test names the promise it keeps."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from engine.model.config import Secret
from engine.model.keymask import KeyMask
from tests.fake_openai import FakeOpenAI, Raw
from tests.gateway_harness import TOOLS, gateway

KEY = "sk-upstream-7c1e9a3f5b2d4e6081a9c3e7b5d1f2a4c6e8"
USER = [{"role": "user", "content": "Tidy the folder."}]


def _client(server, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, **kw)


def _wait(predicate, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


# -- a key split across stream choices -------------------------------------------


def _sse(*chunks: dict[str, Any]) -> Raw:
    lines = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return Raw(lines + "data: [DONE]\n\n", "text/event-stream")


def _choice(index: int, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": None}


HALF = len(KEY) // 2
SPLITS = {
    "content under choice 0 and choice 1 of one chunk": lambda: _sse(
        {"choices": [_choice(0, role="assistant", content=KEY[:HALF]), _choice(1, content=KEY[HALF:])]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ),
    "content under choice 0 then choice 1 in two chunks": lambda: _sse(
        {"choices": [_choice(0, role="assistant", content=KEY[:HALF])]},
        {"choices": [_choice(1, content=KEY[HALF:])]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ),
    "choice 1's piece first, choice 0's next (a client reading choices[0])": lambda: _sse(
        {"choices": [_choice(1, content=KEY[:HALF])]},
        {"choices": [_choice(0, role="assistant", content=KEY[HALF:])]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ),
    "content between a call's argument pieces": lambda: _sse(
        {"choices": [_choice(0, role="assistant", content="Reading.")]},
        {"choices": [_choice(0, tool_calls=[{"index": 0, "id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "'}}])]},
        {"choices": [_choice(0, content=KEY[:HALF])]},
        {"choices": [_choice(0, tool_calls=[{"index": 0, "function": {"arguments": KEY[HALF:] + '"}'}}])]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ),
    "the argument pieces of two calls interleaved": lambda: _sse(
        {"choices": [_choice(0, role="assistant", tool_calls=[{"index": 1, "id": "c2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "'}}])]},
        {"choices": [_choice(0, tool_calls=[{"index": 0, "id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "' + KEY[:HALF]}}])]},
        {"choices": [_choice(0, tool_calls=[{"index": 1, "function": {"arguments": KEY[HALF:] + '"}'}}])]},
        {"choices": [_choice(0, tool_calls=[{"index": 0, "function": {"arguments": '"}'}}])]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ),
}


def _joins(chunks: list[Any]) -> str:
    """Every way a client may join a stream: choice 0's text, all choices' text, text then arguments."""
    first = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    every = "".join(ch.delta.content or "" for c in chunks for ch in c.choices)
    arguments = "".join(
        call.function.arguments or "" for c in chunks for ch in c.choices for call in ch.delta.tool_calls or [] if call.function
    )
    pieces = "".join(
        part
        for c in chunks
        for ch in c.choices
        for part in [ch.delta.content or "", *((call.function.arguments or "") for call in ch.delta.tool_calls or [] if call.function)]
    )
    return " | ".join([first, every, every + arguments, arguments, pieces])


@pytest.mark.parametrize("split", list(SPLITS))
def test_a_key_split_across_stream_choices_never_reaches_the_agent(tmp_path: Path, split: str) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, key=Secret(KEY), approve="all") as (_gw, server):
        fake.add(SPLITS[split]())
        raw = httpx.post(
            server.url + "/chat/completions",
            json={"model": "m", "messages": USER, "tools": TOOLS, "stream": True},
            timeout=30,
        ).text
        data = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]
        from openai.types.chat import ChatCompletionChunk

        chunks = [ChatCompletionChunk.model_validate({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", **d}) for d in data]
    assert chunks, "the agent got no stream"
    assert KeyMask(KEY).matches(raw + " | " + _joins(chunks)) == [], f"the agent can rebuild the key ({split})"
