"""Real clients through `agent-tui gateway`: the openai package and the OpenAI Agents SDK.

A two-tool agent (read_file, delete_file) talks to the loopback fake upstream
through the gateway. A rule lets read_* through; every delete is held for the
operator. Approved, the agent's delete runs; rejected, it never runs (the file
is still there), the upstream reads the rejection and the agent finishes with
the upstream's second answer.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from engine.core.answers import Answer
from engine.stored.transcript import read_transcript
from tests.support.fake_openai import FakeOpenAI, call, say
from tests.support.gateway_harness import (
    TOOLS,
    Files,
    Operator,
    _streamed,
    agent_loop,
    gateway,
)


def _script(fake: FakeOpenAI) -> None:
    fake.add(
        call("read_file", path="notes.txt", id="call_read"),
        call("delete_file", path="notes.txt", id="call_delete"),
        say("All done."),
    )


def _events(path: Path) -> list[Any]:
    return read_transcript(path).events


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_sync_approved_delete_runs(tmp_path: Path, stream: bool) -> None:
    files = Files(tmp_path)
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        _script(fake)
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        client = openai.OpenAI(base_url=server.url, api_key="the-agents-own-key", max_retries=0)
        answer, seen = agent_loop(client, files, stream=stream)
        operator.join()
        assert answer == "All done."
        assert seen == ["read_file", "delete_file"]
        assert operator.seen == ["delete_file"]  # the read passed by the rule, only the delete was held
        assert not files.notes_exist
        assert all("authorization" not in r.headers for r in fake.requests)
    events = _events(tmp_path / "gateway.jsonl")
    kinds = [e.type for e in events]
    assert kinds.count("approval_requested") == 1
    observed = [e for e in events if e.type == "observation"]
    assert [(o.tool, o.text, o.executed) for o in observed] == [
        ("read_file", "keep me", True),
        ("delete_file", "deleted notes.txt", True),
    ]
    assert events[-1].type == "run_ended" and events[-1].answer == "All done."


def test_openai_sync_rejected_delete_never_runs(tmp_path: Path) -> None:
    files = Files(tmp_path)
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(
            call("read_file", path="notes.txt", id="call_read"),
            call("delete_file", path="notes.txt", id="call_delete"),
            say("I left notes.txt in place."),
        )
        operator = Operator(gw, lambda g: g.answer(Answer.reject("notes.txt is still needed")))
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        answer, seen = agent_loop(client, files)
        operator.join()
        assert files.notes_exist
        assert seen == ["read_file"]  # the agent never saw the delete
        assert answer == "I left notes.txt in place."
        third = fake.requests[2].messages
        assert third[-2]["tool_calls"][0]["function"]["name"] == "delete_file"
        assert third[-1] == {"role": "tool", "tool_call_id": "call_delete", "content": "REJECTED by the operator: notes.txt is still needed"}
    events = _events(tmp_path / "gateway.jsonl")
    decided = [e for e in events if e.type == "approval_decided"]
    assert [(d.choice, d.reason) for d in decided] == [("reject", "notes.txt is still needed")]
    assert [e.step for e in events if e.type == "decision"] == [1, 2, 3]


def test_openai_async_client(tmp_path: Path) -> None:
    files = Files(tmp_path)

    async def main(url: str) -> str:
        client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Tidy the folder."}]
        async with client:
            while True:
                message = (await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)).choices[0].message
                if not message.tool_calls:
                    return message.content or ""
                messages.append(message.model_dump(exclude_none=True))
                for c in message.tool_calls:
                    result = files.run(c.function.name, **json.loads(c.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": c.id, "content": result})

    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        _script(fake)
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        assert asyncio.run(main(server.url)) == "All done."
        operator.join()
    assert not files.notes_exist


def test_held_stream_with_edited_arguments_is_a_valid_sse_stream(tmp_path: Path) -> None:
    """The edit changes the reply, so the gateway rebuilds the stream; the client parses it."""
    files = Files(tmp_path)
    (tmp_path / "old.txt").write_text("old")
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(call("delete_file", content="Removing it.", path="notes.txt", id="call_d"), say("Done."))
        operator = Operator(gw, lambda g: g.answer(Answer.edit({"path": "old.txt"})))
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        messages = [{"role": "user", "content": "remove"}]
        content, calls = _streamed(client, messages)
        operator.join()
        assert content == "Removing it."
        assert calls == [("call_d", "delete_file", '{"path": "old.txt"}')]
        with client.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True) as again:
            assert [c.choices[0].delta.tool_calls[0].id for c in again if c.choices and c.choices[0].delta.tool_calls] == ["call_d"]
    assert files.notes_exist


def test_edit_checked_against_the_requests_schema(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="call_d"))
        problems: list[str] = []

        def bad_then_good(g) -> None:
            for args in ({"path": 3}, {"file": "x"}):
                try:
                    g.answer(Answer.edit(args))
                except ValueError as exc:
                    problems.append(str(exc))
            g.answer(Answer.edit({"path": "other.txt"}))

        operator = Operator(gw, bad_then_good)
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], tools=TOOLS)
        operator.join()
        assert json.loads(reply.choices[0].message.tool_calls[0].function.arguments) == {"path": "other.txt"}
        assert "argument 'path' must be string, not integer" in problems[0]
        assert "missing argument 'path'" in problems[1] and "unknown argument 'file'" in problems[1]


def _agents_world(tmp_path: Path, url: str):
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    files = Files(tmp_path)

    @function_tool
    def read_file(path: str) -> str:
        """Read a file of the folder."""
        return files.run("read_file", path)

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file of the folder."""
        return files.run("delete_file", path)

    client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
    model = OpenAIChatCompletionsModel(model="agent-model", openai_client=client)
    return files, client, Agent(name="tidy", instructions="Tidy the folder.", tools=[read_file, delete_file], model=model)


def _run_agent(client: openai.AsyncOpenAI, agent: Any, streamed: bool = False) -> Any:
    """Run the agent to its end, then close its client in the same event loop."""
    from agents import Runner

    async def main() -> Any:
        try:
            if not streamed:
                return (await Runner.run(agent, "Tidy the folder.")).final_output
            result = Runner.run_streamed(agent, "Tidy the folder.")
            async for _ in result.stream_events():
                pass
            return result.final_output
        finally:
            await client.close()

    return asyncio.run(main())


@pytest.mark.parametrize("choice", ["approve", "reject"])
def test_openai_agents_sdk(tmp_path: Path, choice: str) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(
            call("read_file", path="notes.txt", id="call_read"),
            call("delete_file", path="notes.txt", id="call_delete"),
            say("Deleted." if choice == "approve" else "Kept notes.txt as asked."),
        )
        files, client, agent = _agents_world(tmp_path, server.url)
        answer = (lambda g: g.answer(Answer.approve())) if choice == "approve" else (lambda g: g.answer(Answer.reject("keep it")))
        operator = Operator(gw, answer)
        final_output = _run_agent(client, agent)
        operator.join()
        assert operator.seen == ["delete_file"]
        if choice == "approve":
            assert final_output == "Deleted."
            assert not files.notes_exist
        else:
            assert final_output == "Kept notes.txt as asked."
            assert files.notes_exist
            assert fake.requests[2].messages[-1]["content"] == "REJECTED by the operator: keep it"


def test_openai_agents_sdk_streamed(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        _script(fake)
        files, client, agent = _agents_world(tmp_path, server.url)
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        assert _run_agent(client, agent, streamed=True) == "All done."
        operator.join()
        assert not files.notes_exist
        assert all(r.body.get("stream") for r in fake.requests)
