"""The gateway under attack: each test names the promise it keeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from engine.core.answers import Answer
from engine.model.config import Secret
from engine.model.keymask import KeyMask
from tests.support.fake_openai import FakeOpenAI, Raw
from tests.support.gateway_harness import TOOLS, agent_client, gateway
from tests.support.waiting import wait_for

KEY = "sk-upstream-7c1e9a3f5b2d4e6081a9c3e7b5d1f2a4c6e8"
USER = [{"role": "user", "content": "Tidy the folder."}]


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


# -- malformed requests -----------------------------------------------------------


def _tool(parameters: Any) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": "read_file", "parameters": parameters}}]


CALLED = [*USER, {"role": "assistant", "content": None}]
MALFORMED = {
    "a role that is a list": ({"messages": [{"role": [], "content": "x"}]}, "messages[0]"),
    "tool_calls that is a number": ({"messages": [*USER, {"role": "assistant", "content": None, "tool_calls": 5}]}, "messages[1].tool_calls"),
    "a call whose function is a list": (
        {"messages": [*USER, {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": [1]}]}]},
        "messages[1].tool_calls[0].function",
    ),
    "a call that is a number": ({"messages": [*USER, {"role": "assistant", "tool_calls": [7]}]}, "messages[1].tool_calls[0]"),
    "a call's name that is a number": (
        {"messages": [*USER, {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": 3, "arguments": "{}"}}]}]},
        "messages[1].tool_calls[0].function.name",
    ),
    "a tool_call_id that is a list": ({"messages": [{"role": "tool", "tool_call_id": [], "content": "x"}]}, "messages[0]"),
    "content that is a number": ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    "stream_options that is a number": ({"messages": USER, "stream_options": 5}, "stream_options"),
    "a schema whose required is a number": (
        {"messages": USER, "tools": _tool({"type": "object", "properties": {"path": {"type": "string"}}, "required": 5})},
        "parameters.required",
    ),
    "a schema whose required holds a list": (
        {"messages": USER, "tools": _tool({"type": "object", "properties": {"path": {"type": "string"}}, "required": [[1]]})},
        "parameters.required",
    ),
    "a property whose type is a number": (
        {"messages": USER, "tools": _tool({"type": "object", "properties": {"path": {"type": 5}}})},
        "parameters.properties.path.type",
    ),
    "a schema whose properties is a list": ({"messages": USER, "tools": _tool({"type": "object", "properties": [1]})}, "parameters.properties"),
    "a schema whose type is a number": ({"messages": USER, "tools": _tool({"type": 5})}, "parameters.type"),
    "a nested item whose type is a number": (
        {"messages": USER, "tools": _tool({"type": "object", "properties": {"p": {"type": "array", "items": {"type": 1}}}})},
        "parameters.properties.p.items.type",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_request_gets_a_400_naming_the_field(tmp_path: Path, case: str) -> None:
    body, field = MALFORMED[case]
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        response = httpx.post(server.url + "/chat/completions", json={"model": "m", **body}, timeout=30)
        assert response.status_code == 400, response.text
        message = response.json()["error"]["message"]
        assert field in message, message
        assert fake.requests == [] and gw.runs == []
        again = httpx.post(server.url + "/chat/completions", json={"model": "m", **body}, timeout=30)
        assert again.status_code == 400  # the connection and the gateway still serve


def _requests():
    from hypothesis import strategies as st

    anything = st.recursive(
        st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=6,
    )

    def either(good):
        return st.one_of(good, anything)

    schema = st.recursive(
        st.fixed_dictionaries({}, optional={"type": either(st.sampled_from(["string", "integer", "object", "array"])), "enum": anything}),
        lambda inner: st.fixed_dictionaries(
            {"type": either(st.just("object"))},
            optional={
                "properties": either(st.dictionaries(st.sampled_from(["path", "n", "x"]), either(inner), max_size=3)),
                "required": either(st.lists(st.sampled_from(["path", "n"]), max_size=2)),
                "items": either(inner),
                "additionalProperties": either(st.booleans()),
                "anyOf": either(st.lists(inner, max_size=2)),
            },
        ),
        max_leaves=5,
    )
    function = st.fixed_dictionaries({"name": either(st.sampled_from(["read_file", "delete_file"]))}, optional={"parameters": either(schema), "description": anything})
    tool = either(st.fixed_dictionaries({"type": st.just("function"), "function": either(function)}))
    call = either(
        st.fixed_dictionaries(
            {"id": either(st.sampled_from(["c1", "c2"])), "type": st.just("function"), "function": either(st.fixed_dictionaries({"name": either(st.just("read_file")), "arguments": either(st.just('{"path": "a"}'))}))}
        )
    )
    message = either(
        st.fixed_dictionaries(
            {"role": either(st.sampled_from(["system", "user", "assistant", "tool"]))},
            optional={"content": either(st.text(max_size=5)), "tool_calls": either(st.lists(call, max_size=2)), "tool_call_id": either(st.sampled_from(["c1", "c2"]))},
        )
    )
    return either(
        st.fixed_dictionaries(
            {"messages": either(st.lists(message, min_size=1, max_size=4))},
            optional={
                "tools": either(st.lists(tool, max_size=2)),
                "stream": either(st.booleans()),
                "stream_options": either(st.fixed_dictionaries({"include_usage": either(st.booleans())})),
                "n": anything,
                "model": anything,
            },
        )
    )


def test_any_request_body_gets_an_answer_or_a_4xx_error() -> None:
    from hypothesis import HealthCheck, given, settings

    from engine.gateway import Gateway, Upstream
    from tests.support.fake_openai import say

    with FakeOpenAI() as fake:
        gw = Gateway([Upstream("fake", fake.url)], save=False, approve="all", headless=True)

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(_requests())
        def one(body: Any) -> None:
            fake.add(*[say("ok")] * 10)
            response = gw.submit(body).result(30)
            assert response.status == 200 or 400 <= response.status < 500, (response.status, response.body[:300])
            if response.status != 200:
                assert "message" in json.loads(response.body)["error"]

        try:
            one()
        finally:
            gw.stop("the test ended")


# -- the turn after an operator's abort ---------------------------------------------


def test_the_turn_after_an_abort_that_followed_a_released_call_gets_an_answer(tmp_path: Path) -> None:
    """A rule released a read, the operator aborted at the delete: the agent is told the run
    ended, now and on its next turn, and the read is recorded as never reaching it."""
    from engine.core.events import Observed
    from tests.support.fake_openai import calls, say
    from tests.support.gateway_harness import Operator

    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(calls(("read_file", '{"path": "a"}'), ("delete_file", '{"path": "notes.txt"}')), say("new"))
        operator = Operator(gw, lambda g: g.abort())
        client = agent_client(server, timeout=30)
        with pytest.raises(openai.BadRequestError) as first:
            client.chat.completions.create(model="m", messages=USER, tools=TOOLS)
        operator.join()
        assert "aborted" in first.value.message
        later = [*USER, {"role": "user", "content": "Go on."}]
        with pytest.raises(openai.BadRequestError) as second:
            client.chat.completions.create(model="m", messages=later, tools=TOOLS)
        assert second.value.code == "run_ended" and "aborted" in second.value.message
        observed = [(e.index, e.executed, e.text) for e in gw.runs[0].engine.events if isinstance(e, Observed) and e.index >= 0]
        assert observed == [(0, False, "NOT RUN: the call never reached the agent (the run ended before a response carried it: "
                             "aborted by the operator); nothing ran")]
        other = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Something else."}], tools=TOOLS)
        assert other.choices[0].message.content == "new"


# -- duplicate call ids ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_released_calls_sharing_an_id_reach_the_agent_with_distinct_ids_and_keep_both_results(tmp_path: Path, stream: bool) -> None:
    from engine.core.events import Observed
    from tests.support.fake_openai import Answer, say

    twins = Answer(tool_calls=[{"id": "c1", "name": "read_file", "arguments": '{"path": "a"}'}, {"id": "c1", "name": "read_file", "arguments": '{"path": "b"}'}])
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(twins, say("done"))
        client = agent_client(server, timeout=30)
        if stream:
            from openai.lib.streaming.chat import ChatCompletionStreamState

            state = ChatCompletionStreamState()
            for chunk in client.chat.completions.create(model="m", messages=USER, tools=TOOLS, stream=True):
                state.handle_chunk(chunk)
            message = state.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(model="m", messages=USER, tools=TOOLS).choices[0].message
        ids = [c.id for c in message.tool_calls]
        assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == "c1"
        results = [{"role": "tool", "tool_call_id": c.id, "content": f"text of {json.loads(c.function.arguments)['path']}"} for c in message.tool_calls]
        history = [*USER, message.model_dump(exclude_none=True), *results]
        assert client.chat.completions.create(model="m", messages=history, tools=TOOLS).choices[0].message.content == "done"
        observed = {e.index: e.text for e in gw.runs[0].engine.events if isinstance(e, Observed) and e.executed}
        assert observed == {0: "text of a", 1: "text of b"}
        notes = [e.text for e in gw.runs[0].engine.events if isinstance(e, Observed) and e.index == -1]
        assert any("same id" in n and ids[1] in n for n in notes), notes
        assert [m.get("tool_call_id") for m in fake.requests[1].messages if m["role"] == "tool"] == ids


# -- transcript names already taken ------------------------------------------------------


def test_a_taken_transcript_name_is_skipped_and_the_operator_told(tmp_path: Path) -> None:
    from engine.core.events import Observed
    from tests.support.fake_openai import say

    (tmp_path / "g-2.jsonl").write_text("someone else's file\n")
    (tmp_path / "g-4.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    notes: list[str] = []
    with FakeOpenAI() as fake, gateway(fake, tmp_path, out=tmp_path / "g.jsonl") as (gw, server):
        gw.event_listeners.append(lambda run, e: notes.append(e.text) if isinstance(e, Observed) and e.index == -1 else None)
        fake.add(say("one"), say("two"), say("three"))
        client = agent_client(server, timeout=30)
        for n, word in enumerate(["one", "two", "three"]):
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"conversation {n}"}])
            assert reply.choices[0].message.content == word
        assert [r.path.name for r in gw.runs] == ["g.jsonl", "g-3.jsonl", "g-5.jsonl"]
    assert any("g-2.jsonl" in n and "g-3.jsonl" in n for n in notes), notes
    assert any("g-4.jsonl" in n and "g-5.jsonl" in n for n in notes), notes
    assert (tmp_path / "g-2.jsonl").read_text() == "someone else's file\n"
    assert not (tmp_path / "nowhere.jsonl").exists()


# -- a call is released only in a response the agent got ---------------------------------


@pytest.mark.parametrize("read_first", [False, True], ids=["a delete", "a read a rule released, then a delete"])
def test_a_call_approved_after_the_agent_sent_one_more_message_goes_to_that_request(tmp_path: Path, read_first: bool) -> None:
    """While a call waits, the agent sends its conversation plus one more user message; the
    operator approves: the newer request gets the calls (no hang), and each is recorded as
    run only with the result the agent sent for it."""
    import threading

    from engine.core.events import Observed
    from tests.support.fake_openai import calls, say
    from tests.support.gateway_harness import Files

    files = Files(tmp_path)
    specs = [("read_file", '{"path": "notes.txt"}')] * read_first + [("delete_file", '{"path": "notes.txt"}')]
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(calls(*specs), say("done"))
        client = agent_client(server, timeout=20)
        outcomes: dict[str, Any] = {}

        def ask(name: str, messages: list[dict[str, Any]]) -> None:
            try:
                outcomes[name] = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
            except openai.APIError as exc:
                outcomes[name] = exc

        first = threading.Thread(target=ask, args=("first", USER))
        first.start()
        wait_for(lambda: gw.status() == "awaiting_approval", "the delete to be held")
        more = [*USER, {"role": "user", "content": "Please hurry."}]
        second = threading.Thread(target=ask, args=("second", more))
        second.start()
        first.join(20)
        assert isinstance(outcomes["first"], openai.ConflictError)
        wait_for(lambda: gw.held is not None, "the second request to be held")
        gw.answer(Answer.approve())
        second.join(25)
        reply = outcomes.get("second")
        assert isinstance(reply, openai.types.chat.ChatCompletion), f"the second request got {reply!r}"
        message = reply.choices[0].message
        assert [c.function.name for c in message.tool_calls] == [name for name, _ in specs]
        results = [
            {"role": "tool", "tool_call_id": c.id, "content": files.run(c.function.name, **json.loads(c.function.arguments))}
            for c in message.tool_calls
        ]
        history = [*more, message.model_dump(exclude_none=True), *results]
        assert client.chat.completions.create(model="m", messages=history, tools=TOOLS).choices[0].message.content == "done"
        observed = [(e.index, e.executed, e.text) for e in gw.runs[0].engine.events if isinstance(e, Observed) and e.index >= 0]
    assert observed == [(n, True, r["content"]) for n, r in enumerate(results)]
    assert not files.notes_exist


def _held_delete(gw, fake) -> Any:
    """Submit a request whose delete is held; return its future."""
    from tests.support.fake_openai import call

    fake.add(call("delete_file", path="notes.txt", id="c9"))
    future = gw.submit({"model": "m", "messages": USER, "tools": TOOLS})
    wait_for(lambda: gw.status() == "awaiting_approval", "the delete to be held")
    return future


@pytest.mark.parametrize("sent", [None, True, False], ids=["left-before-approval", "handed", "connection-closed"])
def test_a_released_call_is_recorded_as_run_only_when_its_response_was_handed_to_the_agent(tmp_path: Path, sent: bool | None) -> None:
    """Driven as the server drives the gateway: `on_sent(True)` once a response's body was
    handed to the agent's connection, `on_sent(False)` when the agent left first."""
    from engine.core.events import Observed
    from engine.gateway import Gateway, Upstream
    from tests.support.fake_openai import say

    with FakeOpenAI() as fake:
        gw = Gateway([Upstream("fake", fake.url)], headless=True, out=tmp_path / "g.jsonl")
        try:
            future = _held_delete(gw, fake)
            if sent is None:
                gw.disconnected(future)
            gw.answer(Answer.approve())
            if sent is not None:
                response = future.result(10)
                assert response.status == 200 and b"delete_file" in response.body
                response.on_sent(sent)
            fake.add(say("ok"))
            later = gw.submit({"model": "m", "messages": [*USER, {"role": "user", "content": "Never mind."}], "tools": TOOLS}).result(10)
            assert later.status == 200 and b"ok" in later.body
            events = gw.runs[0].engine.events
        finally:
            gw.stop("the test ended")
    assert (tmp_path / "g.jsonl").read_text().count('"tool_started"') == 1
    from engine.stored.transcript import read_transcript

    assert read_transcript(tmp_path / "g.jsonl") is not None  # the file stays readable
    (result,) = [e for e in events if isinstance(e, Observed) and e.index == 0]
    if sent is True:
        assert result.executed and "sent no result" in result.text
    else:
        assert not result.executed and "never reached the agent" in result.text, result.text
        assert ("closed" in result.text) == (sent is False)


def test_a_response_the_agent_missed_reaches_its_retry(tmp_path: Path) -> None:
    from engine.core.events import Observed
    from engine.gateway import Gateway, Upstream

    with FakeOpenAI() as fake:
        gw = Gateway([Upstream("fake", fake.url)], headless=True, out=tmp_path / "g.jsonl")
        try:
            future = _held_delete(gw, fake)
            gw.answer(Answer.approve())
            response = future.result(10)
            response.on_sent(False)
            retry = gw.submit({"model": "m", "messages": USER, "tools": TOOLS}).result(10)
            assert retry.body == response.body
            retry.on_sent(True)
            message = json.loads(retry.body)["choices"][0]["message"]
            history = [*USER, message, {"role": "tool", "tool_call_id": "c9", "content": "deleted"}]
            from tests.support.fake_openai import say

            fake.add(say("done"))
            assert gw.submit({"model": "m", "messages": history, "tools": TOOLS}).result(10).status == 200
            events = gw.runs[0].engine.events
        finally:
            gw.stop("the test ended")
    assert [(e.executed, e.text) for e in events if isinstance(e, Observed) and e.index == 0] == [(True, "deleted")]
    notes = [e.text for e in events if isinstance(e, Observed) and e.index == -1]
    assert any("closed" in n and "delete_file" in n for n in notes), notes


# -- many calls in one reply ---------------------------------------------------------------


def test_a_reply_with_thousands_of_calls_releases_each_once_and_keeps_each_result(tmp_path: Path) -> None:
    """Functional only: the time it takes is measured by bench/gateway_many_calls.py."""
    from engine.core.events import Observed
    from tests.support.fake_openai import Answer, say

    count = 2000
    specs = [{"id": f"c{n}", "name": "read_file", "arguments": json.dumps({"path": f"f{n}"})} for n in range(count)]
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(Answer(tool_calls=specs, chunk_size=500), say("done"))
        client = agent_client(server, timeout=120)
        message = client.chat.completions.create(model="m", messages=USER, tools=TOOLS).choices[0].message
        assert [c.id for c in message.tool_calls] == [f"c{n}" for n in range(count)]
        results = [{"role": "tool", "tool_call_id": c.id, "content": f"text of {c.id}"} for c in reversed(message.tool_calls)]
        history = [*USER, message.model_dump(exclude_none=True), *results]
        assert client.chat.completions.create(model="m", messages=history, tools=TOOLS).choices[0].message.content == "done"
        observed = [(e.index, e.text) for e in gw.runs[0].engine.events if isinstance(e, Observed) and e.executed]
    assert observed == [(n, f"text of c{n}") for n in range(count)]
    assert (tmp_path / "gateway.jsonl").read_text().count('"tool_started"') == count


# -- what a finished run leaves ---------------------------------------------------------


def test_a_finished_run_keeps_only_its_line_and_transcript(tmp_path: Path) -> None:
    import gc
    import weakref

    from engine.gateway import GatewayRun
    from tests.support.fake_openai import say

    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(say("one"), say("two"))
        client = agent_client(server, timeout=30)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "first"}], tools=TOOLS)
        engine = weakref.ref(gw.runs[0].engine)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "second"}], tools=TOOLS)
        first = gw.runs[0]
        assert not isinstance(first, GatewayRun)
        assert (first.number, first.conversation_number, first.turn, first.path) == (1, 1, 1, tmp_path / "gateway.jsonl")
        assert first.ended is not None and first.ended.outcome == "answer"
        gc.collect()
        assert engine() is None, "the finished run's engine (its events, requests and replies) is still held"


def test_a_finished_runs_record_is_a_few_fields_not_its_end_event(tmp_path: Path) -> None:
    """What the gateway keeps of each finished run for days: plain fields (no event object, no
    path object, its answer's first characters); its end is made again when asked for."""
    from dataclasses import fields

    from engine.gateway.runs import KEPT_ANSWER
    from tests.support.fake_openai import say

    long_answer = "a long answer " * 40
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(say(long_answer), say("two"))
        client = agent_client(server, timeout=30)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "first"}], tools=TOOLS)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "second"}], tools=TOOLS)
        first = gw.runs[0]
    kept = [getattr(first, f.name) for f in fields(first)]
    assert all(v is None or isinstance(v, (int, float, str)) for v in kept), kept
    assert not hasattr(first, "__dict__")
    assert first.ended is not None and first.ended.outcome == "answer" and first.ended.answer == long_answer[:KEPT_ANSWER] + "..."
    assert first.path == tmp_path / "gateway.jsonl"


def test_the_same_tools_request_after_request_are_read_once(tmp_path: Path, monkeypatch) -> None:
    """An agent sends its tools with every request: the same ones are not rebuilt (nor their
    schemas' validators, which are cached per schema object), also after a request without
    tools between them (a title, a summary)."""
    import engine.gateway.controller as controller
    from tests.support.fake_openai import say

    built: list[Any] = []
    real = controller.tools_from_request
    monkeypatch.setattr(controller, "tools_from_request", lambda spec: built.append(spec) or real(spec))
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(say("one"), say("two"), say("a title"), say("three"), say("four"))
        client = agent_client(server, timeout=30)
        for n in range(2):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"request {n}"}], tools=TOOLS)
        assert len(built) == 1
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Name this conversation."}])
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "request 2"}], tools=TOOLS)
        assert built == [TOOLS]
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "fewer tools"}], tools=TOOLS[:1])
        assert len(built) == 2

