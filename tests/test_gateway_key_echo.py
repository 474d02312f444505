"""The upstream's key never reaches a file or the agent, whatever way the upstream echoes it.

The gateway sends its own key upstream; an upstream that echoes it back (in a
reply's text, split by a line break, or in an error body) must not put it in
the gateway's transcript or hand it to the agent, which has only its own token.
Every file and everything the agent received is searched for any 10-character
piece of the key.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

import json
from dataclasses import dataclass

from engine.model.config import Secret
from tests.support.fake_openai import Answer, FakeOpenAI, Raw, Reply, Status, call, say
from tests.support.gateway_harness import TOOLS, gateway

KEY = "sk-upstream-7c1e9a3f5b2d4e6081a9c3e7b5d1f2a4c6e8"
PIECES = {KEY[i : i + 10] for i in range(len(KEY) - 9)}
USER = [{"role": "user", "content": "Tidy the folder."}]


def _key(request) -> str:
    return request.headers["authorization"].removeprefix("Bearer ")


def _escaped(text: str) -> str:
    """`text` as JSON may write it: every character a \\u escape."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


@dataclass
class RawStatus(Reply):
    """An error status with a body written as given."""

    code: int
    body: str

    def send(self, handler, request) -> None:
        data = self.body.encode()
        handler.send_response(self.code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def _escaped_reply(request) -> Reply:
    """The key in the reply's text, written with \\u escapes, whole or as one streamed chunk."""
    content = f'"key {_escaped(_key(request))}"'
    if not request.body.get("stream"):
        return Raw('{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": '
                   f'{{"role": "assistant", "content": {content}}}, "finish_reason": "stop"}}]}}')
    chunk = f'{{"choices": [{{"index": 0, "delta": {{"role": "assistant", "content": {content}}}, "finish_reason": null}}]}}'
    end = '{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}'
    return Raw(f"data: {chunk}\n\ndata: {end}\n\ndata: [DONE]\n\n", "text/event-stream")


ECHOES = {
    "the reply's text": lambda r: say(f"Your key is {_key(r)}, keep it safe."),
    "the reply's text in pieces of 3": lambda r: Answer(content=f"Your key is {_key(r)}.", chunk_size=3),
    "a tool call's arguments": lambda r: call("read_file", path=_key(r)),
    "the reply's text with JSON escapes": _escaped_reply,
    "an error body with JSON escapes": lambda r: RawStatus(400, f'{{"error": {{"message": "bad key {_escaped(_key(r))}"}}}}'),
    "the reply's text split by a newline": lambda r: say(f"Key: {_key(r)[:20]}\n{_key(r)[20:]}"),
    "an error body": lambda r: Status(400, "x" * 280 + " Authorization: " + r.headers["authorization"]),
    "an error body split by a newline": lambda r: Status(400, f"bad key {_key(r)[:15]}\n{_key(r)[15:]}"),
}


def _joined(chunks) -> str:
    """What the agent's client makes of the streamed pieces: each text and arguments joined."""
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    arguments = "".join(
        call.function.arguments or "" for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or [] if call.function
    )
    return f" {content} {arguments}"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("echo", list(ECHOES))
def test_an_echoed_upstream_key_reaches_no_file_and_not_the_agent(tmp_path: Path, echo: str, stream: bool) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, key=Secret(KEY)) as (_gw, server):
        fake.add(ECHOES[echo])
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0)
        try:
            if stream:
                chunks = list(client.chat.completions.create(model="m", messages=USER, tools=TOOLS, stream=True))
                got = "".join(c.model_dump_json() for c in chunks) + _joined(chunks)
            else:
                got = client.chat.completions.create(model="m", messages=USER, tools=TOOLS).model_dump_json()
        except openai.APIStatusError as exc:
            got = f"{exc} {exc.response.text} {json.dumps(exc.body)}"
        assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert sorted(p for p in PIECES if p in got) == [], f"the agent received the key ({echo})"
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert sorted(p for p in PIECES if p in path.read_text(errors="replace")) == [], f"the key is in {path}"
    assert "***" in got + "".join(p.read_text(errors="replace") for p in files), "the echo never arrived"
