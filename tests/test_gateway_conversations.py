"""Many conversations at once: each its own run, a held call in one never blocks or aborts
another; side requests (no tools, continuing nothing) passed through and noted; sub-agents
linked to their parent run; the operator's calls per run."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from engine.core.answers import Answer
from engine.core.events import Observed
from engine.stored.transcript import read_transcript
from tests.support.fake_openai import FakeOpenAI, Hang, Request, call, say
from tests.support.gateway_harness import TOOLS, agent_client, gateway
from tests.support.waiting import wait_for


def by_task(request: Request) -> Any:
    """The fake model's turn for any conversation: a delete of the file the user names, then
    an answer once the result is in; a request without tools (a title) gets a title."""
    if not request.body.get("tools"):
        return say("A title")
    user = request.messages[0]["content"]
    if not any(m.get("role") == "tool" for m in request.messages):
        return call("delete_file", path=user, id=f"call_{user}")
    return say(f"done {user}")


def agent_loop(url: str, task: str, into: dict[str, Any], stream: bool = False) -> None:
    """An agent that runs each call it gets (its result: "ran") until the model answers."""
    client = openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=60)
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    try:
        for _ in range(5):
            if stream:
                parts = list(client.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True))
                content = "".join(p.choices[0].delta.content or "" for p in parts if p.choices)
                calls: dict[int, dict[str, Any]] = {}
                for delta in (c for p in parts if p.choices for c in p.choices[0].delta.tool_calls or []):
                    got = calls.setdefault(delta.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                    got["id"] += delta.id or ""
                    got["function"]["name"] += (delta.function.name or "") if delta.function else ""
                    got["function"]["arguments"] += (delta.function.arguments or "") if delta.function else ""
                message: dict[str, Any] = {"role": "assistant", "content": content}
                if calls:
                    message["tool_calls"] = [calls[i] for i in sorted(calls)]
            else:
                message = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if not message.get("tool_calls"):
                into["answer"] = message["content"]
                return
            for c in message["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": "ran"})
    except openai.APIError as exc:
        into["error"] = exc


def start(target: Any, *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def pending_runs(gw) -> list[Any]:
    return [r for r in gw.open_runs() if r.engine.status == "awaiting_approval"]


def two_held(gw, url: str) -> tuple[tuple[threading.Thread, dict[str, Any], Any], tuple[threading.Thread, dict[str, Any], Any]]:
    """Two agents, each with a delete held (a.txt, then b.txt): each one's thread, result and run."""
    agents = []
    for task in ("a.txt", "b.txt"):
        into: dict[str, Any] = {}
        thread = start(agent_loop, url, task, into)
        wait_for(lambda: len(pending_runs(gw)) == len(agents) + 1, f"the call of {task} to be held")
        agents.append((thread, into, next(r for r in pending_runs(gw) if r.engine.state.pending.args == {"path": task})))
    return agents[0], agents[1]


def test_a_held_call_in_one_conversation_neither_blocks_nor_aborts_another(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(*[by_task] * 10)
        (one, first, held), (two, second, other) = two_held(gw, server.url)
        assert held.ended is None, "the first run was aborted by the second conversation"
        gw.answer(Answer.approve(), run=other)
        two.join(30)
        assert second == {"answer": "done b.txt"}, "the second conversation finished while the first call waits"
        assert held.engine.status == "awaiting_approval" and held.engine.state.pending.args == {"path": "a.txt"}
        gw.answer(Answer.approve(), run=held)
        one.join(30)
        assert first == {"answer": "done a.txt"}
        outcomes = sorted((r.conversation_number, r.ended.outcome) for r in gw.runs)
        assert outcomes == [(1, "answer"), (2, "answer")]


def test_an_answer_to_the_call_shown_goes_to_its_run_whichever_is_selected(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(*[by_task] * 10)
        (one, first, run_one), (two, second, run_two) = two_held(gw, server.url)
        shown_one, shown_two = run_one.engine.state.pending, run_two.engine.state.pending
        assert gw.current is run_one, "a new conversation leaves the selection on the call the operator has to answer"
        gw.answer(Answer.reject("not that one"), expected=shown_two)
        assert run_two.engine.state.pending is None and run_one.engine.state.pending is shown_one
        two.join(30)
        assert second == {"answer": "done b.txt"}
        assert fake.requests[-1].messages[-1]["content"] == "REJECTED by the operator: not that one"
        gw.answer(Answer.approve(), expected=shown_one)
        one.join(30)
        assert first == {"answer": "done a.txt"}


def test_the_selection_goes_to_the_call_waiting_for_the_operator_until_one_is_chosen(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(*[by_task] * 10)
        (one, first, run_one), (two, second, run_two) = two_held(gw, server.url)
        assert gw.current is run_one
        gw.answer(Answer.approve())
        assert gw.current is run_two, "the answered run gave the selection to the one still waiting"
        one.join(30)
        assert first == {"answer": "done a.txt"} and gw.current is run_two
        gw.select(run_one.number)
        assert gw.current is run_one and gw.status() == "waiting for the agent"
        assert gw.status(run_two) == "awaiting_approval"
        gw.answer(Answer.approve(), run=run_two.number)
        two.join(30)
        assert second == {"answer": "done b.txt"} and gw.current is run_one


def test_eight_agents_at_once_all_finish_and_no_run_is_aborted(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all") as (gw, server):
        fake.add(*[by_task] * 64)
        results = [dict[str, Any]() for _ in range(8)]
        threads = [start(agent_loop, server.url, f"file-{n}.txt", results[n], n % 2 == 1) for n in range(8)]
        for thread in threads:
            thread.join(60)
        assert [r.get("answer") for r in results] == [f"done file-{n}.txt" for n in range(8)], results
        assert sorted(r.ended.outcome for r in gw.runs) == ["answer"] * 8
        assert len({r.conversation_number for r in gw.runs}) == 8


def test_an_upstream_call_that_hangs_in_one_conversation_does_not_hold_up_another(tmp_path: Path) -> None:
    hang = Hang()
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all", timeout=60) as (gw, server):
        fake.add(lambda r: hang, *[by_task] * 4)
        stuck: dict[str, Any] = {}
        start(agent_loop, server.url, "slow.txt", stuck)
        wait_for(hang.started.is_set, "the first upstream call to hang")
        quick: dict[str, Any] = {}
        start(agent_loop, server.url, "quick.txt", quick).join(30)
        assert quick == {"answer": "done quick.txt"}
        hang.release.set()


def test_a_title_request_beside_a_held_one_is_passed_through_and_noted_in_step_mode(tmp_path: Path) -> None:
    """opencode in step mode: the main request waits for `n`, its title request (no tools)
    comes beside it; the title is answered at once and the held run goes on, not aborted."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step", approve="all") as (gw, server):
        fake.add(*[by_task] * 10)
        main: dict[str, Any] = {}
        thread = start(agent_loop, server.url, "a.txt", main)
        wait_for(lambda: gw.status() == "request held", "the main request to be held")
        client = agent_client(server, timeout=30)
        for stream in (False, True):
            title = [{"role": "system", "content": "Write a title."}, {"role": "user", "content": "a.txt"}]
            if stream:
                text = "".join(p.choices[0].delta.content or "" for p in client.chat.completions.create(model="m", messages=title, stream=True) if p.choices)
            else:
                text = client.chat.completions.create(model="m", messages=title).choices[0].message.content
            assert text == "A title"
        run = gw.runs[0]
        assert len(gw.runs) == 1 and run.ended is None and gw.status() == "request held"
        wait_for(lambda: sum("side request" in e.text for e in run.engine.events if isinstance(e, Observed)) == 2, "the notes")
        gw.step()
        wait_for(lambda: run.engine.released, "the main turn to be released")
        gw.set_mode("continue")
        thread.join(30)
        assert main == {"answer": "done a.txt"}
    notes = [e.text for e in read_transcript(tmp_path / "gateway.jsonl").events if e.type == "observation" and e.index == -1]
    assert any("a side request without tools (2 messages) went to the upstream: answered 'A title'" in n for n in notes), notes


def test_a_side_reply_with_tool_calls_is_sent_without_them(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        fake.add(call("delete_file", content="Title", path="notes.txt"))
        start(agent_loop, server.url, "a.txt", {})
        wait_for(lambda: gw.status() == "request held", "the main request to be held")
        reply = agent_client(server, timeout=30).chat.completions.create(model="m", messages=[{"role": "user", "content": "title?"}])
        message = reply.choices[0].message
        assert message.content == "Title" and not message.tool_calls
        run = gw.runs[0]
        wait_for(lambda: any("not passed on" in e.text for e in run.engine.events if isinstance(e, Observed)), "the note")


def test_a_conversation_begun_while_another_waits_for_its_results_is_linked_to_it(tmp_path: Path) -> None:
    """A sub-agent (Claude Code's Task): the parent's call is released and its result waits
    for the sub-agent's conversation, which is a run of its own naming the parent run."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all") as (gw, server):
        fake.add(call("delete_file", path="task", id="call_task"), say("sub-agent done"), say("parent done"))
        client = agent_client(server, timeout=30)
        parent = [{"role": "user", "content": "Use a sub-agent."}]
        message = client.chat.completions.create(model="m", messages=parent, tools=TOOLS).choices[0].message
        sub = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "The sub-task."}], tools=TOOLS)
        assert sub.choices[0].message.content == "sub-agent done"
        parent += [message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "call_task", "content": "sub-agent done"}]
        assert client.chat.completions.create(model="m", messages=parent, tools=TOOLS).choices[0].message.content == "parent done"
        assert [(r.conversation_number, r.ended.outcome) for r in gw.runs] == [(1, "answer"), (2, "answer")]
    headers = [read_transcript(p).header for p in (tmp_path / "gateway.jsonl", tmp_path / "gateway-2.jsonl")]
    assert "parent_run" not in headers[0].options
    assert headers[1].options["parent_run"] == 1 and headers[1].options["parent_transcript"] == str(tmp_path / "gateway.jsonl")


def test_a_request_without_tools_when_no_run_goes_on_is_a_conversation_of_its_own(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(say("hello"))
        reply = agent_client(server, timeout=30).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "hello"
        assert [r.ended.outcome for r in gw.runs] == ["answer"]


def test_a_request_is_matched_against_many_conversations_with_each_message_read_once(tmp_path: Path, monkeypatch: Any) -> None:
    """Forty conversations that share a system prompt: a request is matched against all of them,
    and each of its messages is put in normal form once to match it, not once a conversation."""
    from engine.gateway import conversation

    system = {"role": "system", "content": "You are careful."}
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(*[say(f"answer {n}") for n in range(41)])
        client = agent_client(server)
        for n in range(40):
            client.chat.completions.create(model="m", messages=[system, {"role": "user", "content": f"task {n}"}], tools=TOOLS)
        real, made = conversation.normal_form, []
        monkeypatch.setattr(conversation, "normal_form", lambda m: made.append(m) or real(m))
        messages = [system, {"role": "user", "content": "another task"}]
        gw.submit({"model": "m", "messages": messages, "tools": TOOLS}).result(30)
    assert len(gw.runs) == 41
    assert len(made) <= 2 * len(messages), len(made)  # to match (once for all forty) and to record


def test_a_gateway_lists_its_newest_runs_and_counts_the_older_whose_transcripts_still_open(tmp_path: Path, monkeypatch: Any) -> None:
    """Finished runs leave memory: past `KEPT_RUNS` the oldest ended runs are no longer listed,
    only counted with the folder their transcripts are in, and those transcripts still open."""
    from engine.gateway import controller

    monkeypatch.setattr(controller, "KEPT_RUNS", 3)
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(*[say(f"answer {n}") for n in range(8)])
        for n in range(8):
            gw.submit({"model": "m", "messages": [{"role": "user", "content": f"task {n}"}], "tools": TOOLS}).result(30)
        listed = [(r.number, r.conversation_number) for r in gw.runs]
        count, words = gw.older.count, gw.older.words()
    assert listed == [(6, 6), (7, 7), (8, 8)]
    assert count == 5 and words == f"5 older runs in {tmp_path}"
    first = read_transcript(tmp_path / "gateway.jsonl")
    assert first.header.task_text == "task 0" and first.events[-1].answer == "answer 0"


def test_a_request_reads_only_the_conversations_that_paused_for_the_operator_to_follow_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Moving the selection to a conversation awaiting the operator looks at those that paused
    for it, not at every conversation the gateway keeps (up to 256 ended ones)."""
    from engine.gateway import Gateway, Upstream, controller

    with FakeOpenAI() as fake:
        gw = Gateway([Upstream("fake", fake.url)], headless=True, out=tmp_path / "g.jsonl")
        try:
            for n in range(30):
                fake.add(say(f"answer {n}"))
                assert gw.submit({"model": "m", "messages": [{"role": "user", "content": f"task {n}"}]}).result(10).status == 200
            looked: list[object] = []
            real = controller._awaits_operator
            monkeypatch.setattr(controller, "_awaits_operator", lambda line: (looked.append(line), real(line))[1])
            fake.add(say("one more"))
            assert gw.submit({"model": "m", "messages": [{"role": "user", "content": "task 30"}]}).result(10).status == 200
        finally:
            gw.stop("the test ended")
    assert len(gw.lines) == 31 and len(looked) <= 2


def _counting_message_checks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The chat wire's messages as its check reads them, one entry a message checked."""
    from engine.wires import chat

    real, checked = chat._message_problem, []
    monkeypatch.setattr(chat, "_message_problem", lambda m, where: checked.append(m) or real(m, where))
    return checked


def _talk(gw: Any, messages: list[dict[str, Any]], turns: int) -> None:
    """`turns` more turns of one conversation: the model's answer and the user's next words added to `messages`."""
    for n in range(turns):
        reply = gw.submit({"model": "m", "messages": messages, "tools": TOOLS}).result(30)
        assert reply.status == 200, reply.body
        messages += [{"role": "assistant", "content": json.loads(reply.body)["choices"][0]["message"]["content"]}, {"role": "user", "content": f"and then {n}"}]


def test_a_long_conversations_later_requests_check_only_their_new_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent sends its whole history every turn: each request's check reads only the messages
    past those of the conversation's request before, which a check passed (two a turn here)."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(*[say(f"answer {n}") for n in range(31)])
        messages: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}, {"role": "user", "content": "task"}]
        _talk(gw, messages, 20)
        checked = _counting_message_checks(monkeypatch)
        _talk(gw, messages, 10)
    assert len(messages) == 62
    assert len(checked) == 2 * 10, len(checked)


def test_a_request_whose_earlier_messages_differ_from_those_checked_is_checked_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A history edited or forged under an agent's earlier turns is not what was checked: every
    message of that request is checked again, and a bad one refused by its place."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(*[say(f"answer {n}") for n in range(12)])
        messages: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}, {"role": "user", "content": "task"}]
        _talk(gw, messages, 5)
        checked = _counting_message_checks(monkeypatch)
        edited = [*messages[:3], {**messages[3], "content": "I never said that"}, *messages[4:]]
        _talk(gw, edited, 1)
        assert len(checked) == len(edited) - 2, len(checked)  # all it sent (two added after it)
        forged = [*edited[:3], {"role": "tool", "content": "ran"}, *edited[4:]]
        refused = gw.submit({"model": "m", "messages": forged, "tools": TOOLS}).result(30)
    assert refused.status == 400
    assert "messages[3] is a tool message without a tool_call_id" in refused.body.decode()


def test_a_requests_check_looks_for_what_was_checked_only_in_the_conversations_taken_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forty conversations kept: a new request's check compares its messages with the latest of
    at most `CHECKED_CONVERSATIONS` of them, not with every conversation's."""
    from engine.gateway import controller

    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(*[say(f"answer {n}") for n in range(41)])
        for n in range(40):
            gw.submit({"model": "m", "messages": [{"role": "user", "content": f"task {n}"}], "tools": TOOLS}).result(30)
        real, compared = controller.checked_before, []
        monkeypatch.setattr(controller, "checked_before", lambda items, kept: compared.append(kept) or real(items, kept))
        gw.submit({"model": "m", "messages": [{"role": "user", "content": "another task"}], "tools": TOOLS}).result(30)
    assert len(gw.lines) == 41
    assert 0 < len(compared) <= controller.CHECKED_CONVERSATIONS < 40, len(compared)
