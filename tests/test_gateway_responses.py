"""The gateway's OpenAI Responses wire (`POST /v1/responses`) with the openai client and
openai-agents' default model (`OpenAIResponsesModel`), in front of tests/support/fake_responses.py.

Released unchanged, the upstream's bytes reach the agent as they came; edited, a rebuilt
response the client parses; rejected, the reason goes upstream as a `function_call_output`
and the model is asked again, and the call never reaches the agent. An upstream that echoes
its key (in a reply, an error body, a header, a stream in pieces) hands it to no one.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import httpx
import openai
import pytest

from engine.core.answers import Answer
from engine.gateway import Gateway, GatewayServer
from engine.model.config import Secret
from tests.support import gateway_harness as harness
from tests.support.fake_responses import FakeResponses, Turn, function_outputs
from tests.support.gateway_harness import Files, Operator, assert_key_nowhere

DELETE = Turn(text="Deleting the notes.", calls=[("delete_file", {"path": "notes.txt"})])
DONE = Turn(text="All done.")
TOOLS = [{"type": "function", "name": n, "description": n, "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}} for n in ("read_file", "delete_file")]
KEY = "sk-upstream-3f9a1c7e5b2d4a6c8e0f1a3c5e7b9d1f"


@contextmanager
def gateway(turns: list[Turn], tmp_path: Path, **options: Any) -> Iterator[tuple[FakeResponses, Gateway, GatewayServer]]:
    with FakeResponses(turns) as fake, harness.gateway(fake, tmp_path, "responses", url=fake.url + "/v1", **options) as (gw, server):
        yield fake, gw, server


def agent_loop(client: openai.OpenAI, files: Files, stream: bool) -> str:
    """The plainest Responses agent: the whole input every turn, as Codex CLI sends it."""
    items: list[Any] = [{"role": "user", "content": "Tidy the folder."}]
    for _ in range(6):
        if stream:
            with client.responses.stream(model="m", input=items, tools=TOOLS, store=False) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(model="m", input=items, tools=TOOLS, store=False)
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            return response.output_text
        items += [o.model_dump(exclude_none=True) for o in response.output]
        for c in calls:
            items.append({"type": "function_call_output", "call_id": c.call_id, "output": files.run(c.name, **json.loads(c.arguments))})
    raise AssertionError("the agent did not finish")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("answer", ["approve", "reject", "edit"])
def test_a_held_call_on_the_responses_wire(tmp_path: Path, stream: bool, answer: str) -> None:
    (tmp_path / "other.txt").write_text("x")
    act = {"approve": lambda g: g.answer(Answer.approve()), "reject": lambda g: g.answer(Answer.reject("keep it")), "edit": lambda g: g.answer(Answer.edit({"path": "other.txt"}))}[answer]
    with gateway([DELETE, DONE], tmp_path) as (fake, gw, server):
        files = Files(tmp_path)
        operator = Operator(gw, act)
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0)
        # streamed, the text before a refused call went early: the answer asked again follows it in the same response
        assert agent_loop(client, files, stream) == ("Deleting the notes.All done." if stream and answer == "reject" else "All done.")
        operator.join()
    assert operator.seen == ["delete_file"]
    assert files.notes_exist == (answer != "approve")
    assert (tmp_path / "other.txt").exists() == (answer != "edit")
    last = fake.requests[-1][2]
    assert last["store"] is False and "previous_response_id" not in last
    (output,) = function_outputs(last)
    if answer == "reject":
        assert output["output"] == "REJECTED by the operator: keep it"
        assert len(fake.requests) == 2  # asked again by the gateway; the agent never saw the call


def test_a_released_stream_reaches_the_agent_byte_for_byte(tmp_path: Path) -> None:
    with gateway([Turn(text="Reading.", calls=[("read_file", {"path": "notes.txt"})])], tmp_path) as (fake, gw, server):
        body = {"model": "m", "input": "Read the notes.", "tools": TOOLS, "stream": True, "store": False}
        got = httpx.post(f"{server.url}/responses", json=body, timeout=30)
        direct = httpx.post(f"{fake.url}/v1/responses", json=body, timeout=30)
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/event-stream")
    assert got.content == direct.content.replace(b"resp_2", b"resp_1").replace(b"msg_2", b"msg_1").replace(b"fc_2", b"fc_1").replace(b"call_2", b"call_1")


def test_openai_agents_default_responses_model(tmp_path: Path) -> None:
    from agents import (
        Agent,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    with gateway([DELETE, DONE], tmp_path) as (fake, gw, server):
        files = Files(tmp_path)

        @function_tool
        def delete_file(path: str) -> str:
            """Delete a file of the folder."""
            return files.run("delete_file", path)

        client = openai.AsyncOpenAI(base_url=server.url, api_key="k", max_retries=0)
        agent = Agent(name="tidy", instructions="Tidy the folder.", tools=[delete_file], model=OpenAIResponsesModel(model="m", openai_client=client))
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep it")))

        async def main() -> Any:
            try:
                return (await Runner.run(agent, "Tidy the folder.")).final_output
            finally:
                await client.close()

        assert asyncio.run(main()) == "All done."
        operator.join()
    assert files.notes_exist and operator.seen == ["delete_file"]
    assert function_outputs(fake.requests[-1][2])[0]["output"] == "REJECTED by the operator: keep it"


def test_a_request_the_gateway_cannot_serve_gets_openais_error_body(tmp_path: Path) -> None:
    with gateway([DONE], tmp_path) as (fake, gw, server):
        kept = httpx.post(f"{server.url}/responses", json={"model": "m", "input": "hi", "previous_response_id": "resp_9"}, timeout=30)
        unknown = httpx.post(f"{server.url}/responses/resp_1/cancel", json={}, timeout=30)
    assert kept.status_code == 400 and "previous_response_id" in kept.json()["error"]["message"]
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "invalid_request_error"
    assert fake.requests == []


ECHOES = {
    "the reply's text": [Turn(text="Your key is {key}.")],
    "the reply's text in pieces of 3": [Turn(text="Your key is {key}.", chunk_size=3)],
    "a call's arguments in pieces of 4": [Turn(calls=[("read_file", {"path": "{key}"})], chunk_size=4), DONE],
    "an error body": [Turn(text="bad key {key}", status=400)],
    "an error's header": [Turn(text="slow down", status=429, headers={"x-ratelimit-remaining-requests": "{key}"})],
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("echo", list(ECHOES))
def test_an_echoed_upstream_key_reaches_no_file_and_not_the_agent(tmp_path: Path, echo: str, stream: bool) -> None:
    with gateway(ECHOES[echo], tmp_path, key=Secret(KEY)) as (fake, gw, server):
        body = {"model": "m", "input": "Read the notes.", "tools": TOOLS, "stream": stream, "store": False}
        got = httpx.post(f"{server.url}/responses", json=body, timeout=30)
        seen = f"{got.headers} {got.text}"
        if stream and got.status_code == 200:  # what a client joins from the pieces
            events = [json.loads(line[5:]) for line in got.text.splitlines() if line.startswith("data:")]
            seen += "".join(e.get("delta", "") for e in events if isinstance(e.get("delta"), str))
        assert fake.requests[0][1]["authorization"] == f"Bearer {KEY}"
    assert_key_nowhere(KEY, seen, tmp_path, echo)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_partly_released_reply_is_rebuilt_and_the_refused_call_goes_upstream_after_the_results(tmp_path: Path, stream: bool) -> None:
    both = Turn(text="Reading, then deleting.", calls=[("read_file", {"path": "notes.txt"}), ("delete_file", {"path": "notes.txt"})])
    with gateway([both, DONE, DONE], tmp_path) as (fake, gw, server):
        files = Files(tmp_path)
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep it")))
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0)
        assert agent_loop(client, files, stream) == "All done."
        operator.join()
    assert files.notes_exist and operator.seen == ["delete_file"]
    last = fake.requests[-1][2]["input"]
    calls = [(i["call_id"], i["name"]) for i in last if i.get("type") == "function_call"]
    outputs = {i["call_id"]: i["output"] for i in last if i.get("type") == "function_call_output"}
    assert calls == [("call_1_0", "read_file"), ("call_1_1", "delete_file")]
    assert outputs == {"call_1_0": "keep me", "call_1_1": "REJECTED by the operator: keep it"}


def test_released_calls_sharing_an_id_reach_the_agent_with_distinct_ids_and_keep_both_results(tmp_path: Path) -> None:
    from engine.core.events import Observed

    twins = Turn(calls=[("read_file", {"path": "a"}), ("read_file", {"path": "b"})], call_ids=("c1", "c1"))
    with gateway([twins, DONE, DONE], tmp_path) as (fake, gw, server):
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0)
        items: list[Any] = [{"role": "user", "content": "Read both."}]
        response = client.responses.create(model="m", input=items, tools=TOOLS, store=False)
        ids = [o.call_id for o in response.output if o.type == "function_call"]
        assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == "c1"
        items += [o.model_dump(exclude_none=True) for o in response.output]
        items += [{"type": "function_call_output", "call_id": o.call_id, "output": f"text of {json.loads(o.arguments)['path']}"} for o in response.output]
        assert client.responses.create(model="m", input=items, tools=TOOLS, store=False).output_text == "All done."
        observed = {e.index: e.text for e in gw.runs[0].engine.events if isinstance(e, Observed) and e.executed}
    assert observed == {0: "text of a", 1: "text of b"}
    assert [o["call_id"] for o in function_outputs(fake.requests[-1][2])] == ids


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_retry_after_release_gets_the_same_response_and_the_call_runs_once(tmp_path: Path, stream: bool) -> None:
    with gateway([DELETE, DONE], tmp_path) as (fake, gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        body = {"model": "m", "input": "Tidy the folder.", "tools": TOOLS, "stream": stream, "store": False}
        first = httpx.post(f"{server.url}/responses", json=body, timeout=30)
        operator.join()
        again = httpx.post(f"{server.url}/responses", json=body, timeout=30)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content and b"delete_file" in first.content
    assert len(fake.requests) == 1 and operator.seen == ["delete_file"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_agent_on_a_chat_completions_upstream(tmp_path: Path, stream: bool) -> None:
    from tests.support.fake_openai import FakeOpenAI, call, say

    with FakeOpenAI() as fake, harness.gateway(fake, tmp_path) as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="call_del"), say("Kept it."))
        files = Files(tmp_path)
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep it")))
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0)
        assert agent_loop(client, files, stream) == "Kept it."
        operator.join()
    assert files.notes_exist
    second = fake.requests[-1].messages
    assert second[-1] == {"role": "tool", "tool_call_id": "call_del", "content": "REJECTED by the operator: keep it"}
