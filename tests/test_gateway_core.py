"""The gateway's rules: conversations, faults, security, partial decisions, take over, swap, budgets."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from engine.core.answers import Answer
from engine.core.policy import Decision
from engine.gateway import Gateway, GatewayServer, Upstream
from engine.stored.transcript import read_transcript
from tests.support.fake_openai import (
    FakeOpenAI,
    Hang,
    Status,
    call,
    calls,
    refused_url,
    say,
)
from tests.support.gateway_harness import (
    READ_RULE,
    TOOLS,
    Operator,
    agent_client,
    gateway,
)
from tests.support.waiting import wait_for

USER = [{"role": "user", "content": "Tidy the folder."}]


# -- requests and security ------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "the request body is not valid JSON"),
        (b"[1, 2]", "the request body must be a JSON object"),
        (b'{"model": "m"}', "'messages' must be a non-empty list"),
        (b'{"messages": [{"content": "x"}]}', "messages[0] has no valid role"),
        (b'{"messages": [{"role": "tool", "content": "x"}]}', "without a tool_call_id"),
        (b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}', "tools[0] is not a function definition"),
        (b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "'stream' must be true or false"),
    ],
)
def test_malformed_requests_get_400_with_a_clear_message(tmp_path: Path, body: bytes, message: str) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        response = httpx.post(server.url + "/chat/completions", content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 400
        assert message in response.json()["error"]["message"]
        assert fake.requests == [] and gw.runs == []


def test_models_and_unknown_routes(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (_gw, server):
        assert [m.id for m in agent_client(server).models.list()] == ["fake"]
        assert httpx.get(server.url + "/nothing").status_code == 404
        assert httpx.get(server.url + "/chat/completions").status_code == 405


def test_request_bodies_are_capped(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, max_body=2000) as (_gw, server):
        big = {"model": "m", "messages": [{"role": "user", "content": "x" * 5000}]}
        response = httpx.post(server.url + "/chat/completions", json=big)
        assert response.status_code == 413 and "over 2000 bytes" in response.json()["error"]["message"]
        chunked = httpx.post(server.url + "/chat/completions", content=iter([json.dumps(big).encode()]), headers={"Content-Type": "application/json"})
        assert chunked.status_code == 413
        assert fake.requests == []


def test_token_is_required_and_the_agents_authorization_never_goes_upstream(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, token="s3cret", key=None) as (_gw, server):
        fake.add(say("hi"))
        with pytest.raises(openai.AuthenticationError):
            agent_client(server).chat.completions.create(model="m", messages=USER)
        client = openai.OpenAI(base_url=server.url, api_key="s3cret", max_retries=0)
        assert client.chat.completions.create(model="m", messages=USER).choices[0].message.content == "hi"
        assert len(fake.requests) == 1 and "authorization" not in fake.requests[0].headers


def test_the_upstream_key_is_sent_upstream_and_never_written(tmp_path: Path) -> None:
    from engine.model.config import Secret

    with FakeOpenAI() as fake, gateway(fake, tmp_path, key=Secret("sk-upstream-123")) as (_gw, server):
        fake.add(say("hi"))
        agent_client(server).chat.completions.create(model="m", messages=USER)
        assert fake.requests[0].headers["authorization"] == "Bearer sk-upstream-123"
    assert "sk-upstream-123" not in (tmp_path / "gateway.jsonl").read_text()


# -- faults ---------------------------------------------------------------------


@pytest.mark.parametrize(("code", "error"), [(429, openai.RateLimitError), (503, openai.InternalServerError), (500, openai.InternalServerError)])
def test_upstream_status_reaches_the_agent_and_its_retry_continues(tmp_path: Path, code: int, error: type) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(Status(code, "slow down", {"Retry-After": "0"}), say("after the retry"))
        with pytest.raises(error) as caught:
            agent_client(server).chat.completions.create(model="m", messages=USER)
        assert caught.value.status_code == code and "slow down" in str(caught.value)
        if code == 429:
            assert caught.value.response.headers["retry-after"] == "0"
        reply = agent_client(server).chat.completions.create(model="m", messages=USER)
        assert reply.choices[0].message.content == "after the retry"
        assert len(gw.runs) == 1, "the retry continues the same run"
    events = read_transcript(tmp_path / "gateway.jsonl").events
    assert [e.type for e in events] == ["policy_error", "decision", "run_ended"]
    assert f"upstream status {code}" in events[0].message


def test_refused_and_timed_out_upstreams(tmp_path: Path) -> None:
    gw = Gateway([Upstream("gone", refused_url())], save=False)
    server = GatewayServer(gw, "127.0.0.1", 0)
    server.start()
    try:
        with pytest.raises(openai.APIStatusError) as caught:
            agent_client(server).chat.completions.create(model="m", messages=USER)
        assert caught.value.status_code == 502 and "cannot reach the upstream" in str(caught.value)
    finally:
        gw.stop("done")
        server.close()
    with FakeOpenAI() as fake:
        hang = Hang()
        fake.add(hang)
        gw = Gateway([Upstream("slow", fake.url)], save=False, timeout=0.5)
        server = GatewayServer(gw, "127.0.0.1", 0)
        server.start()
        try:
            with pytest.raises(openai.APIStatusError) as caught:
                agent_client(server).chat.completions.create(model="m", messages=USER)
            assert caught.value.status_code == 504 and "did not answer in time" in str(caught.value)
        finally:
            hang.release.set()
            gw.stop("done")
            server.close()


def test_an_agent_that_leaves_while_held_is_recorded_and_its_retry_continues(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="c1"))
        with pytest.raises(openai.APITimeoutError):
            agent_client(server, timeout=0.5).chat.completions.create(model="m", messages=USER, tools=TOOLS)
        wait_for(lambda: gw.held is None, "the gateway to notice")
        gw.answer(Answer.approve())
        reply = agent_client(server).chat.completions.create(model="m", messages=USER, tools=TOOLS)
        assert reply.choices[0].message.tool_calls[0].id == "c1"
        assert len(fake.requests) == 1
    texts = [e.text for e in read_transcript(tmp_path / "gateway.jsonl").events if e.type == "observation"]
    assert any("the agent disconnected while its response was held" in t for t in texts)


# -- conversations --------------------------------------------------------------


def test_conversations_and_turns_make_runs_and_transcripts(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(say("first answer"), say("second turn"), say("another conversation"))
        client = agent_client(server)
        messages = [{"role": "user", "content": "one"}]
        first = client.chat.completions.create(model="m", messages=messages).choices[0].message
        messages += [{"role": "assistant", "content": first.content}, {"role": "user", "content": "two"}]
        client.chat.completions.create(model="m", messages=messages)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "unrelated"}])
        assert [(r.conversation_number, r.turn) for r in gw.runs] == [(1, 1), (1, 2), (2, 1)]
        assert len(fake.requests[1].messages) == 3, "the second turn goes upstream with the whole history"
    paths = [tmp_path / "gateway.jsonl", tmp_path / "gateway-2.jsonl", tmp_path / "gateway-3.jsonl"]
    headers = [read_transcript(p).header for p in paths]
    assert [h.task_text for h in headers] == ["one", "two", "unrelated"]


def test_a_new_conversation_leaves_the_open_run_going(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all") as (gw, server):
        fake.add(call("read_file", path="a", id="c1"), say("fresh"))
        agent_client(server).chat.completions.create(model="m", messages=USER, tools=TOOLS)
        agent_client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "else"}], tools=TOOLS)
        assert gw.runs[0].ended is None and gw.runs[0].engine.released
        assert gw.runs[1].ended.outcome == "answer"


def _synced_during(monkeypatch: pytest.MonkeyPatch, work: Any) -> int:
    """How many fsyncs `work()` made."""
    import os

    real, count = os.fsync, [0]

    def counted(fd: int) -> None:
        count[0] += 1
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    work()
    monkeypatch.setattr(os, "fsync", real)
    return count[0]


def test_an_automatic_approval_is_not_fsynced_an_operators_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `--approve all` a call is released without an fsync of its approval lines (an
    automatic answer is given again on a resume); the operator's answer is synced before the call goes
    (this run's first synced lines: with the transcript's folder, whose entry for the new file they need)."""
    delete = {"role": "user", "content": "Delete b."}
    for approve, answers in (("all", ()), ("ask", (lambda g: g.answer(Answer.approve()),))):
        with FakeOpenAI() as fake, gateway(fake, tmp_path / approve, approve=approve) as (gw, server):
            fake.add(call("read_file", path="a", id="c0"), call("delete_file", path="b", id="c1"))
            client = agent_client(server)
            first = client.chat.completions.create(model="m", messages=[delete], tools=TOOLS).choices[0].message
            history = [delete, first.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "c0", "content": "a's text"}]
            operator = Operator(gw, *answers)
            synced = _synced_during(monkeypatch, lambda: client.chat.completions.create(model="m", messages=history, tools=TOOLS))
            operator.join()
            assert gw.runs[-1].engine.released == {0: {"path": "b"}}
        assert synced == (0 if approve == "all" else 3), (approve, synced)  # its two lines, the folder with the first


def test_a_new_runs_header_is_written_before_the_upstream_is_asked_and_synced_with_its_first_synced_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first request of a conversation costs no fsync before the upstream is asked: the
    header goes to the operating system at once (a killed gateway keeps it) and reaches the
    disk with the first line that needs it (an operator's approval, the end)."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all") as (gw, server):
        fake.add(call("read_file", path="a", id="c0"))
        client = agent_client(server)
        synced = _synced_during(monkeypatch, lambda: client.chat.completions.create(model="m", messages=USER, tools=TOOLS))
        path = gw.runs[0].path
        assert path is not None
        assert json.loads(path.read_bytes().splitlines()[0])["type"] == "header"
    assert synced == 0


def test_a_new_conversation_after_an_answer_costs_no_fsync_before_its_reply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run that ended with an answer had its end synced: putting it away when the next
    conversation starts syncs nothing again, so the new request waits for no disk."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all") as (gw, server):
        fake.add(say("done"), call("read_file", path="a", id="c0"))
        client = agent_client(server)
        client.chat.completions.create(model="m", messages=USER, tools=TOOLS)
        assert gw.runs[0].ended is not None
        other = [{"role": "user", "content": "Something else."}]
        synced = _synced_during(monkeypatch, lambda: client.chat.completions.create(model="m", messages=other, tools=TOOLS))
        assert len(gw.runs) == 2 and gw.runs[1].engine.released
    assert synced == 0


# -- decisions ------------------------------------------------------------------


def test_several_calls_are_decided_one_by_one(tmp_path: Path) -> None:
    """Two deletes in one reply: the first approved, the second rejected; the agent gets only the first."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(
            calls(("delete_file", '{"path": "a"}'), ("delete_file", '{"path": "b"}'), content="Both."),
            say("ok"),
        )
        operator = Operator(gw, lambda g: g.answer(Answer.approve()), lambda g: g.answer(Answer.reject("not b")))
        client = agent_client(server)
        message = client.chat.completions.create(model="m", messages=USER, tools=TOOLS).choices[0].message
        operator.join()
        assert [json.loads(c.function.arguments) for c in message.tool_calls] == [{"path": "a"}]
        assert message.content == "Both."
        follow = [*USER, message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "call_m0", "content": "deleted a"}]
        client.chat.completions.create(model="m", messages=follow, tools=TOOLS)
        upstream = fake.requests[1].messages
        assert [m["role"] for m in upstream] == ["user", "assistant", "tool", "assistant", "tool"]
        assert upstream[3]["tool_calls"][0]["id"] == "call_m1"
        assert upstream[4] == {"role": "tool", "tool_call_id": "call_m1", "content": "REJECTED by the operator: not b"}


def test_take_over_writes_the_reply(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step", approve="all") as (gw, server):
        result: dict[str, Any] = {}

        def agent() -> None:
            result["reply"] = agent_client(server).chat.completions.create(model="m", messages=USER, tools=TOOLS)

        thread = threading.Thread(target=agent)
        thread.start()
        wait_for(lambda: gw.held is not None, "the request")
        gw.take_over(Decision.act("I read it myself.", "read_file", path="notes.txt"))
        thread.join(10)
        message = result["reply"].choices[0].message
        assert message.content == "I read it myself."
        assert message.tool_calls[0].function.name == "read_file"
        assert fake.requests == [], "the upstream was never asked"
    events = read_transcript(tmp_path / "gateway.jsonl").events
    assert [e.policy for e in events if e.type == "decision"] == ["human"]


def test_swap_sends_the_whole_history_to_the_other_upstream(tmp_path: Path) -> None:
    with FakeOpenAI() as first, FakeOpenAI() as second:
        first.add(call("read_file", path="notes.txt", id="c1"))
        second.add(say("from the second upstream"))
        gw = Gateway([Upstream("one", first.url), Upstream("two", second.url, "big-model")], rules=[READ_RULE], save=False)
        server = GatewayServer(gw, "127.0.0.1", 0)
        server.start()
        try:
            client = agent_client(server)
            message = client.chat.completions.create(model="m", messages=USER, tools=TOOLS).choices[0].message
            gw.swap_policy("two")
            follow = [*USER, message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "c1", "content": "keep me"}]
            reply = client.chat.completions.create(model="m", messages=follow, tools=TOOLS)
            assert reply.choices[0].message.content == "from the second upstream"
            assert second.requests[0].messages == follow and second.requests[0].body["model"] == "big-model"
            assert [e.type for e in gw.runs[0].engine.events].count("policy_swapped") == 1
        finally:
            gw.stop("done")
            server.close()


def test_cockpit_budget_pauses_and_extending_lets_the_request_through(tmp_path: Path) -> None:
    from engine.core.events import Budget

    with FakeOpenAI() as fake, gateway(fake, tmp_path, budget=Budget(max_steps=1), approve="all") as (gw, server):
        fake.add(call("read_file", path="a", id="c1"), say("done"))
        client = agent_client(server)
        message = client.chat.completions.create(model="m", messages=USER, tools=TOOLS).choices[0].message
        follow = [*USER, message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "c1", "content": "x"}]
        result: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: result.setdefault("r", client.chat.completions.create(model="m", messages=follow)))
        thread.start()
        wait_for(lambda: gw.status() == "awaiting_budget", "the budget pause")
        gw.extend_budget("steps", 5)
        thread.join(10)
        assert result["r"].choices[0].message.content == "done"


def test_gateway_transcripts_open_in_show_replay_and_export(tmp_path: Path) -> None:
    import subprocess
    import sys

    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all") as (_gw, server):
        fake.add(call("read_file", path="notes.txt", id="c1"), say("done"))
        client = agent_client(server)
        message = client.chat.completions.create(model="m", messages=USER, tools=TOOLS).choices[0].message
        follow = [*USER, message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "c1", "content": "keep me"}]
        client.chat.completions.create(model="m", messages=follow, tools=TOOLS)
    path = str(tmp_path / "gateway.jsonl")
    for args in (["show", path], ["replay", path, "--headless"], ["export", path, "-o", str(tmp_path / "out.md")]):
        done = subprocess.run([sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (args, done.stderr)
    shown = subprocess.run([sys.executable, "-m", "tui.cli", "show", path], capture_output=True, text=True, timeout=60).stdout
    assert 'read_file(path="notes.txt")' in shown and "keep me" in shown and "outcome: answer after 2 steps: done" in shown


def test_a_released_calls_result_is_recorded_without_validating_its_observation_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's result is a string (`message_text`) and the rest of the observation is the
    engine's own: it is built as the engine's events are, and reads back as it was written."""
    from engine.core.events import Observed

    with FakeOpenAI() as fake:
        gw = Gateway([Upstream("fake", fake.url)], rules=[READ_RULE], headless=True, out=tmp_path / "g.jsonl")
        try:
            fake.add(call("read_file", id="c1", path="notes.txt"))
            first = gw.submit({"model": "m", "messages": USER, "tools": TOOLS}).result(10)
            message = json.loads(first.body)["choices"][0]["message"]
            validated: list[object] = []
            real = Observed.__init__
            monkeypatch.setattr(Observed, "__init__", lambda self, **values: (validated.append(values), real(self, **values))[1])
            fake.add(say("done"))
            history = [*USER, message, {"role": "tool", "tool_call_id": "c1", "content": "keep me"}]
            assert gw.submit({"model": "m", "messages": history, "tools": TOOLS}).result(10).status == 200
        finally:
            gw.stop("the test ended")
    assert validated == []
    (result,) = [e for e in read_transcript(tmp_path / "g.jsonl").events if isinstance(e, Observed) and e.index == 0]
    assert result.text == "keep me" and result.executed and result.tool == "read_file" and result.args == {"path": "notes.txt"}


def test_a_reply_released_as_it_came_writes_no_calls_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The upstream's bytes go back as they came: the calls are not written again in the agent's wire."""
    from engine.gateway import replies

    written: list[object] = []
    real = replies.tool_call
    monkeypatch.setattr(replies, "tool_call", lambda *args: (written.append(args), real(*args))[1])
    with FakeOpenAI() as fake:
        gw = Gateway([Upstream("fake", fake.url)], rules=[READ_RULE], headless=True, out=tmp_path / "g.jsonl")
        try:
            fake.add(call("read_file", id="c1", path="notes.txt"))
            response = gw.submit({"model": "m", "messages": USER, "tools": TOOLS}).result(10)
        finally:
            gw.stop("the test ended")
    assert response.status == 200 and json.loads(response.body)["choices"][0]["message"]["tool_calls"][0]["id"] == "c1"
    assert written == []
