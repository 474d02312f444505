"""The gateway on the Anthropic Messages wire: an agent speaking Messages (as Claude Code does),
upstreams speaking Messages (tests/support/fake_anthropic.py) or chat completions, HEAD and odd routes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.core.answers import Answer
from engine.core.events import Observed
from engine.gateway import GatewayServer
from engine.model.config import Secret
from engine.wires import anthropic
from tests.support import gateway_harness as harness
from tests.support.fake_anthropic import FakeAnthropic, Turn
from tests.support.fake_openai import FakeOpenAI, call
from tests.support.gateway_harness import Operator

KEY = "sk-ant-upstream-key-0123456789abcdef"
BASH = {"command": "rm -rf build", "description": "Remove the build folder"}
TOOLS = [{"name": "Bash", "description": "Run a shell command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"}}, "required": ["command"]}}]
HEADERS = {"anthropic-version": "2023-06-01", "anthropic-beta": "fine-grained-tool-streaming-2025-05-14", "x-api-key": "agent-key"}


def request(stream: bool, messages: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-fake", "max_tokens": 64000, "stream": stream, "tools": TOOLS,
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "messages": messages or [{"role": "user", "content": [{"type": "text", "text": "clean the build"}]}],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    body.update(extra)
    return body


def gateway(fake: Any, tmp_path: Path, wire: str = "anthropic", **options: Any) -> Any:
    return harness.gateway(fake, tmp_path, wire, rules=[], **options)


def root(server: GatewayServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def post(server: GatewayServer, body: dict[str, Any], path: str = "/v1/messages?beta=true") -> httpx.Response:
    return httpx.post(root(server) + path, json=body, headers=HEADERS, timeout=30)


def message_of(response: httpx.Response) -> dict[str, Any]:
    """The Messages reply, read back from a whole body or from its events."""
    if response.headers["content-type"].startswith("text/event-stream"):
        reader = anthropic.StreamReader(lambda _: None)
        for line in response.text.splitlines():
            reader.feed(line)
        assert reader.complete
        assert reader.reply.message is not None
        return reader.reply.message
    return response.json()


def test_head_and_get_of_the_root_answer_with_headers_and_no_body(tmp_path: Path) -> None:
    with FakeAnthropic([Turn(text="hi")]) as fake, gateway(fake, tmp_path, token="gw-token") as (_, server):
        with httpx.Client(base_url=root(server), timeout=10) as client:
            refused = client.head("/")  # Claude Code's first request, without the gateway's token
            assert refused.status_code == 401 and refused.content == b""
            allowed = client.head("/", headers={"x-api-key": "gw-token"})
            assert allowed.status_code == 200 and allowed.content == b""
            models = client.head("/v1/models", headers={"authorization": "Bearer gw-token"})
            assert models.status_code == 200 and models.content == b"" and int(models.headers["content-length"]) > 0
            got = client.get("/", headers={"x-api-key": "gw-token"})
            assert got.status_code == 200 and got.content == b""


def test_an_unknown_route_is_a_404_in_the_anthropic_error_shape(tmp_path: Path) -> None:
    with FakeAnthropic([Turn(text="hi")]) as fake, gateway(fake, tmp_path) as (_, server):
        response = post(server, {}, "/v1/messages/batches")
        assert response.status_code == 404
        assert response.json()["type"] == "error" and response.json()["error"]["type"] == "not_found_error"
        bad = post(server, {"messages": "no"})
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"


def test_count_tokens_is_passed_through_to_the_upstream_with_the_key(tmp_path: Path) -> None:
    with FakeAnthropic([Turn(text="hi")]) as fake, gateway(fake, tmp_path, key=Secret(KEY)) as (_, server):
        response = post(server, {"model": "claude-fake", "messages": [{"role": "user", "content": "hi"}]}, "/v1/messages/count_tokens?beta=true")
        assert response.json() == {"input_tokens": 120}
        path, headers, body = fake.requests[-1]
        assert path == "/v1/messages/count_tokens" and headers["x-api-key"] == KEY and body["messages"][0]["content"] == "hi"
        assert headers["anthropic-beta"] == HEADERS["anthropic-beta"]


@pytest.mark.parametrize("stream", [True, False])
def test_an_approved_call_goes_to_the_agent_as_the_upstream_sent_it(tmp_path: Path, stream: bool) -> None:
    turns = [Turn(text="Removing it.", tool_uses=[("Bash", BASH)], thinking="The user wants it gone.")]
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path, key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        response = post(server, request(stream))
        operator.join()
        assert response.status_code == 200
        assert response.content == gw.engine.policy.last_reply.raw  # byte for byte
        _, headers, sent = fake.requests[0]
        assert headers["x-api-key"] == KEY and headers["anthropic-beta"] == HEADERS["anthropic-beta"]
        assert sent["system"] == request(stream)["system"] and sent["thinking"] == request(stream)["thinking"]  # as the agent wrote them
        assert [b["type"] for b in message_of(response)["content"]] == ["thinking", "text", "tool_use"]


@pytest.mark.parametrize("stream", [True, False])
def test_an_edited_call_is_rebuilt_with_the_thinking_and_its_signature_kept(tmp_path: Path, stream: bool) -> None:
    turns = [Turn(text="Removing it.", tool_uses=[("Bash", BASH)], thinking="The user wants it gone.")]
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.edit({**BASH, "command": "rm -rf build/tmp"})))
        response = post(server, request(stream))
        operator.join()
        message = message_of(response)
        thinking, text, use = message["content"]
        assert thinking == {"type": "thinking", "thinking": "The user wants it gone.", "signature": "sig-0001"}
        assert text["text"] == "Removing it."
        assert use["type"] == "tool_use" and use["id"] == "toolu_fake0100" and use["input"]["command"] == "rm -rf build/tmp"
        assert message["stop_reason"] == "tool_use" and message["id"] == "msg_fake0001"


def test_a_rejected_call_goes_back_upstream_as_an_error_tool_result_and_the_agent_never_sees_it(tmp_path: Path) -> None:
    turns = [Turn(text="Removing it.", tool_uses=[("Bash", BASH)]), Turn(text="Understood, I will leave it.")]
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep the build folder")))
        response = post(server, request(True))
        operator.join()
        message = message_of(response)
        # the text before the call went as it came; the answer asked again follows it in the same message
        assert [(b["type"], b["text"]) for b in message["content"]] == [("text", "Removing it."), ("text", "Understood, I will leave it.")]
        _, _, asked_again = fake.requests[1]
        use, result = asked_again["messages"][-2], asked_again["messages"][-1]
        assert use["role"] == "assistant" and use["content"][-1]["type"] == "tool_use" and use["content"][-1]["input"] == BASH
        block = result["content"][0]
        assert block["type"] == "tool_result" and block["tool_use_id"] == use["content"][-1]["id"] and block["is_error"] is True
        assert "keep the build folder" in block["content"]
        assert asked_again["system"] == request(True)["system"]


@pytest.mark.parametrize("stream", [True, False])
def test_a_key_the_upstream_echoes_reaches_neither_the_agent_nor_the_transcript(tmp_path: Path, stream: bool) -> None:
    turns = [Turn(text=f"Your key is {KEY}, noted.", tool_uses=[("Bash", {"command": f"echo {KEY}"})])]
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path, key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        response = post(server, request(stream))
        operator.join()
        assert KEY not in response.text and KEY[6:20] not in response.text  # the stream splits it over deltas
        message = message_of(response)
        assert "***" in message["content"][0]["text"] and "***" in message["content"][1]["input"]["command"]
        assert KEY not in (tmp_path / "gateway.jsonl").read_text()


def test_an_upstream_error_reaches_the_agent_in_its_shape_with_the_key_masked(tmp_path: Path) -> None:
    turns = [Turn(text=f"slow down, {KEY}", status=429, headers={"retry-after": "3", "x-ratelimit-note": KEY})]
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path, key=Secret(KEY)) as (_, server):
        response = post(server, request(False))
        assert response.status_code == 429 and response.headers["retry-after"] == "3"
        assert response.json()["type"] == "error" and KEY not in response.text and KEY not in response.headers["x-ratelimit-note"]


def test_a_messages_agent_on_a_chat_completions_upstream_is_translated_and_told_what_cannot_be(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, wire="chat") as (gw, server):
        fake.add(call("Bash", content="Removing it.", id="call_1", **BASH))
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        response = post(server, request(True))
        operator.join()
        message = message_of(response)
        assert [b["type"] for b in message["content"]] == ["text", "tool_use"]
        assert message["content"][1] == {"type": "tool_use", "id": "call_1", "name": "Bash", "input": BASH}
        sent = fake.requests[0].body
        assert sent["messages"][0] == {"role": "system", "content": "You are Claude Code."}
        assert sent["tools"][0]["function"]["name"] == "Bash" and "thinking" not in sent and "_agent_tui_original" not in json.dumps(sent)
        notes = [e.text for e in gw.engine.events if isinstance(e, Observed) and e.index == -1]
        said = [n for n in notes if "no counterpart" in n]
        assert len(said) == 2 and any("'thinking'" in n for n in said) and any("cache_control" in n for n in said)


@pytest.mark.parametrize("stream", [True, False])
def test_a_chat_completions_agent_on_a_messages_upstream_gets_a_chat_completion(tmp_path: Path, stream: bool) -> None:
    turns = [Turn(text="Removing it.", tool_uses=[("Bash", BASH)], thinking="gone"), Turn(text="Left it.")]
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path, key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        client = harness.agent_client(server)
        tools = [{"type": "function", "function": {"name": "Bash", "parameters": TOOLS[0]["input_schema"]}}]
        messages: list[Any] = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "clean the build"}]
        if stream:
            chunks = list(client.chat.completions.create(model="m", messages=messages, tools=tools, stream=True, logprobs=True))
            calls = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls]
            arguments, call_id = calls[0].function.arguments, calls[0].id
        else:
            reply = client.chat.completions.create(model="m", messages=messages, tools=tools, logprobs=True)
            arguments, call_id = reply.choices[0].message.tool_calls[0].function.arguments, reply.choices[0].message.tool_calls[0].id
        operator.join()
        assert json.loads(arguments) == BASH and call_id == "toolu_fake0100"
        path, headers, sent = fake.requests[0]
        assert path == "/v1/messages" and headers["x-api-key"] == KEY and sent["system"] == "be brief"
        assert sent["tools"][0]["input_schema"] == TOOLS[0]["input_schema"] and sent["max_tokens"] == anthropic.DEFAULT_MAX_TOKENS
        notes = [e.text for e in gw.engine.events if isinstance(e, Observed) and e.index == -1]
        assert [n for n in notes if "no counterpart" in n] == ["not sent to the upstream (anthropic wire: no counterpart): 'logprobs'"]


def test_a_retry_of_a_released_request_gets_the_same_reply_and_asks_nothing_again(tmp_path: Path) -> None:
    turns = [Turn(text="Removing it.", tool_uses=[("Bash", BASH)])]
    with FakeAnthropic(turns) as fake, gateway(fake, tmp_path) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        first = post(server, request(True))
        operator.join()
        again = post(server, request(True))
        assert again.status_code == 200 and again.content == first.content
        assert len(_main(fake)) == 1 and list(gw.engine.released) == [0]
        assert len([e for e in gw.engine.events if e.type == "decision"]) == 1


def _main(fake: FakeAnthropic) -> list[dict[str, Any]]:
    return [body for path, _, body in fake.requests if path == "/v1/messages"]


def test_an_upstream_flag_names_its_wire() -> None:
    from tui.cli.gateway import _upstreams
    from tui.exits import UsageError

    claude, chat_server = _upstreams(["anthropic+https://api.anthropic.com#claude-x", "local=http://127.0.0.1:9/v1"], None)
    assert (claude.name, claude.url, claude.model, claude.wire) == ("api.anthropic.com", "https://api.anthropic.com", "claude-x", "anthropic")
    assert (chat_server.name, chat_server.wire) == ("local", "chat")
    with pytest.raises(UsageError, match="no wire 'grpc'"):
        _upstreams(["grpc+http://127.0.0.1:9"], None)


def test_count_tokens_without_a_messages_upstream_is_a_404_in_the_messages_shape(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, wire="chat") as (_, server):
        response = post(server, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, "/v1/messages/count_tokens")
        assert response.status_code == 404 and response.json()["error"]["type"] == "not_found_error"
        assert "no anthropic upstream" in response.json()["error"]["message"] and fake.requests == []
