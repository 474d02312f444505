"""The gateway's Gemini wire (`:generateContent`, `:streamGenerateContent?alt=sse`) in front of
tests/support/fake_gemini.py, with an agent written against the API's JSON.

Released unchanged, the upstream's bytes reach the agent as they came; edited, a rebuilt
reply; rejected, the reason goes upstream as a `functionResponse` and the model is asked
again, and the call never reaches the agent. An upstream that echoes its key (in a reply, an
error body, a header, a stream in pieces) hands it to no one. Errors are Google's error body.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from engine.core.answers import Answer
from engine.gateway import Gateway
from engine.model.config import Secret
from engine.stored.transcript import read_transcript
from tests.support import gateway_harness as harness
from tests.support.fake_gemini import FakeGemini, Turn
from tests.support.gateway_harness import Files, Operator, assert_key_nowhere

DELETE = Turn(text="Deleting the notes.", calls=[("delete_file", {"path": "notes.txt"})])
DONE = Turn(text="All done.")
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOLS = [{"functionDeclarations": [{"name": n, "description": n, "parametersJsonSchema": SCHEMA} for n in ("read_file", "delete_file")]}]
KEY = "AIzaSy-upstream-3f9a1c7e5b2d4a6c8e0f1a3c5e"


@contextmanager
def gateway(turns: list[Turn], tmp_path: Path, **options: Any) -> Iterator[tuple[FakeGemini, Gateway, str]]:
    with FakeGemini(turns) as fake, harness.gateway(fake, tmp_path, "gemini", **options) as (gw, server):
        yield fake, gw, f"http://127.0.0.1:{server.port}"


def ask(root: str, contents: list[dict[str, Any]], stream: bool, key: str = "agent-key") -> httpx.Response:
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    body = {"contents": contents, "tools": TOOLS}
    return httpx.post(f"{root}/v1beta/models/gemini-test:{method}", json=body, headers={"x-goog-api-key": key}, timeout=30)


def parts_of(response: httpx.Response, stream: bool) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    if not stream:
        return response.json()["candidates"][0]["content"]["parts"]
    chunks = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    return [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]


def agent_loop(root: str, files: Files, stream: bool) -> str:
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Tidy the folder."}]}]
    for _ in range(6):
        parts = parts_of(ask(root, contents, stream), stream)
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        if not calls:
            return "".join(p.get("text", "") for p in parts)
        contents.append({"role": "model", "parts": parts})
        answers = [{"functionResponse": {"name": c["name"], "response": {"output": files.run(c["name"], **c["args"])}}} for c in calls]
        contents.append({"role": "user", "parts": answers})
    raise AssertionError("the agent did not finish")


def _function_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["functionResponse"] for c in body["contents"] for p in c.get("parts", []) if "functionResponse" in p]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("answer", ["approve", "reject", "edit"])
def test_a_held_call_on_the_gemini_wire(tmp_path: Path, stream: bool, answer: str) -> None:
    (tmp_path / "other.txt").write_text("x")
    act = {"approve": lambda g: g.answer(Answer.approve()), "reject": lambda g: g.answer(Answer.reject("keep it")), "edit": lambda g: g.answer(Answer.edit({"path": "other.txt"}))}[answer]
    with gateway([DELETE, DONE], tmp_path) as (fake, gw, root):
        files = Files(tmp_path)
        operator = Operator(gw, act)
        assert agent_loop(root, files, stream) == "All done."
        operator.join()
    assert operator.seen == ["delete_file"]
    assert files.notes_exist == (answer != "approve")
    assert (tmp_path / "other.txt").exists() == (answer != "edit")
    call, _, body = fake.requests[-1]
    assert call == f"gemini-test:{'streamGenerateContent' if stream else 'generateContent'}"
    (result,) = _function_responses(body)
    if answer == "reject":
        assert result == {"name": "delete_file", "response": {"error": "REJECTED by the operator: keep it"}}
        assert len(fake.requests) == 2  # asked again by the gateway; the agent never saw the call


def test_a_released_stream_reaches_the_agent_byte_for_byte(tmp_path: Path) -> None:
    with gateway([Turn(text="Reading the notes now.", calls=[("read_file", {"path": "notes.txt"})])], tmp_path) as (fake, gw, root):
        contents = [{"role": "user", "parts": [{"text": "Read the notes."}]}]
        got = ask(root, contents, stream=True)
        direct = ask(fake.url, contents, stream=True)
    assert got.headers["content-type"].startswith("text/event-stream")
    assert got.content == direct.content and got.content.count(b"data:") == 3


def test_a_side_request_without_tools_is_answered(tmp_path: Path) -> None:
    with gateway([DONE], tmp_path) as (fake, gw, root):
        body = {"contents": [{"role": "user", "parts": [{"text": "Rate this task."}]}], "generationConfig": {"responseMimeType": "application/json"}}
        got = httpx.post(f"{root}/v1beta/models/router-model:generateContent", json=body, timeout=30)
    assert json.loads(got.json()["candidates"][0]["content"]["parts"][0]["text"])["complexity_score"] == 10
    assert fake.requests[0][0] == "router-model:generateContent" and fake.requests[0][2] == body


def test_a_router_request_before_any_run_is_a_side_request_not_a_run(tmp_path: Path) -> None:
    """Gemini CLI's model router (`:generateContent` asking for JSON, no tools) comes before its
    first real request: answered, and no run of its own starts."""
    with gateway([DONE], tmp_path) as (fake, gw, root):
        body = {"contents": [{"role": "user", "parts": [{"text": "Rate this task."}]}], "generationConfig": {"responseMimeType": "application/json"}}
        routed = httpx.post(f"{root}/v1beta/models/router-model:generateContent", json=body, timeout=30)
        served = ask(root, [{"role": "user", "parts": [{"text": "Tidy the folder."}]}], stream=False)
        runs = list(gw.runs)
    assert routed.status_code == 200 and served.status_code == 200
    assert [run.number for run in runs] == [1] and runs[0].ended is not None and runs[0].ended.answer == "All done."


def test_count_tokens_is_passed_to_a_gemini_upstream(tmp_path: Path) -> None:
    with gateway([DONE], tmp_path, key=Secret(KEY)) as (fake, gw, root):
        body = {"contents": [{"role": "user", "parts": [{"text": "How long is this?"}]}]}
        got = httpx.post(f"{root}/v1beta/models/gemini-test:countTokens", json=body, timeout=30)
    assert got.status_code == 200 and got.json() == {"totalTokens": 120}
    ((call, headers, sent),) = fake.requests
    assert call == "gemini-test:countTokens" and sent == body and headers["x-goog-api-key"] == KEY
    assert not list(gw.runs)


def test_count_tokens_without_a_gemini_upstream_is_estimated_here(tmp_path: Path) -> None:
    from tests.support.fake_openai import FakeOpenAI

    with FakeOpenAI() as fake, harness.gateway(fake, tmp_path, "chat") as (gw, server):
        body = {"contents": [{"role": "user", "parts": [{"text": "one two three four five six seven eight nine ten"}]}]}
        got = httpx.post(f"http://127.0.0.1:{server.port}/v1beta/models/gemini-test:countTokens", json=body, timeout=30)
        refused = httpx.post(f"http://127.0.0.1:{server.port}/v1beta/models/gemini-test:countTokens", content=b"[1]", headers={"content-type": "application/json"}, timeout=30)
    assert got.status_code == 200 and got.json() == {"totalTokens": 13}
    assert refused.status_code == 400 and refused.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert not fake.requests


def test_errors_are_googles_error_body_and_the_token_may_come_as_the_api_key(tmp_path: Path) -> None:
    with gateway([DONE], tmp_path, token="gw-token") as (fake, gw, root):
        contents = [{"role": "user", "parts": [{"text": "hi"}]}]
        refused = ask(root, contents, stream=False, key="wrong")
        unknown = httpx.post(f"{root}/v1beta/models/m:embedContent", json={}, headers={"x-goog-api-key": "gw-token"}, timeout=30)
        malformed = httpx.post(f"{root}/v1beta/models/m:generateContent", json={"contents": []}, headers={"x-goog-api-key": "gw-token"}, timeout=30)
        served = ask(root, contents, stream=False, key="gw-token")
    assert refused.status_code == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED"
    assert unknown.status_code == 404 and unknown.json()["error"]["status"] == "NOT_FOUND"
    assert malformed.status_code == 400 and "'contents'" in malformed.json()["error"]["message"]
    assert served.status_code == 200 and len(fake.requests) == 1


ECHOES = {
    "the reply's text": [Turn(text="Your key is {key}.")],
    "the reply's text in pieces of 3": [Turn(text="Your key is {key}.", chunk_size=3)],
    "a call's arguments": [Turn(calls=[("read_file", {"path": "{key}"})]), DONE],
    "an error body": [Turn(text="bad key {key}", status=400)],
    "an error's header": [Turn(text="slow down", status=429, headers={"x-ratelimit-remaining": "{key}"})],
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("echo", list(ECHOES))
def test_an_echoed_upstream_key_reaches_no_file_and_not_the_agent(tmp_path: Path, echo: str, stream: bool) -> None:
    with gateway(ECHOES[echo], tmp_path, key=Secret(KEY)) as (fake, gw, root):
        got = ask(root, [{"role": "user", "parts": [{"text": "Read the notes."}]}], stream)
        seen = f"{got.headers} {got.text}"
        if stream and got.status_code == 200:  # what a client joins from the pieces
            seen += "".join(p.get("text", "") for p in parts_of(got, True))
        assert fake.requests[0][1]["x-goog-api-key"] == KEY
    assert_key_nowhere(KEY, seen, tmp_path, echo)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_partly_released_reply_is_rebuilt_and_the_refused_call_goes_upstream_after_the_results(tmp_path: Path, stream: bool) -> None:
    both = Turn(text="Reading, then deleting.", calls=[("read_file", {"path": "notes.txt"}), ("delete_file", {"path": "notes.txt"})])
    with gateway([both, DONE, DONE], tmp_path) as (fake, gw, root):
        files = Files(tmp_path)
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep it")))
        assert agent_loop(root, files, stream) == "All done."
        operator.join()
    assert files.notes_exist and operator.seen == ["delete_file"]
    contents = fake.requests[-1][2]["contents"]
    calls = [p["functionCall"]["name"] for c in contents for p in c["parts"] if "functionCall" in p]
    answers = [(r["name"], r["response"]) for r in _function_responses(fake.requests[-1][2])]
    assert calls == ["read_file", "delete_file"]
    assert answers == [("read_file", {"output": "keep me"}), ("delete_file", {"error": "REJECTED by the operator: keep it"})]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_retry_after_release_gets_the_same_response_and_the_call_runs_once(tmp_path: Path, stream: bool) -> None:
    with gateway([DELETE, DONE], tmp_path) as (fake, gw, root):
        operator = Operator(gw, lambda g: g.answer(Answer.approve()))
        contents = [{"role": "user", "parts": [{"text": "Tidy the folder."}]}]
        first = ask(root, contents, stream)
        operator.join()
        again = ask(root, contents, stream)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content and b"delete_file" in first.content
    assert len(fake.requests) == 1 and operator.seen == ["delete_file"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_gemini_agent_on_a_chat_completions_upstream(tmp_path: Path, stream: bool) -> None:
    from tests.support.fake_openai import FakeOpenAI, call, say

    with FakeOpenAI() as fake, harness.gateway(fake, tmp_path, model="chat-model") as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="call_del"), say("Kept it."))
        files = Files(tmp_path)
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep it")))
        assert agent_loop(f"http://127.0.0.1:{server.port}", files, stream) == "Kept it."
        operator.join()
    assert files.notes_exist
    first, second = fake.requests
    assert first.body["model"] == "chat-model" and [t["function"]["name"] for t in first.body["tools"]] == ["read_file", "delete_file"]
    assert second.messages[-1] == {"role": "tool", "tool_call_id": "call_del", "content": "REJECTED by the operator: keep it"}


def test_a_router_request_before_any_run_is_noted_at_the_start_of_the_next_run(tmp_path: Path) -> None:
    """Passed through while no run goes on, the router's request is still recorded: as a note at
    the start of the next run its agent (its wire) starts, before that run's first turn."""
    with gateway([DONE], tmp_path) as (fake, gw, root):
        body = {"contents": [{"role": "user", "parts": [{"text": "Rate this task."}]}], "generationConfig": {"responseMimeType": "application/json"}}
        httpx.post(f"{root}/v1beta/models/router-model:generateContent", json=body, timeout=30)
        ask(root, [{"role": "user", "parts": [{"text": "Tidy the folder."}]}], stream=False)
        path = gw.runs[0].path
    transcript = read_transcript(path)
    notes = [e.text for e in transcript.events if e.type == "observation" and e.index == -1]
    assert len(notes) == 1 and "while no run went on, a side request without tools (1 message) went to the upstream: answered" in notes[0], notes
    assert "complexity_reasoning" in notes[0] and [r.number for r in gw.runs] == [1]
    assert transcript.events.index(next(e for e in transcript.events if e.type == "observation")) < transcript.events.index(
        next(e for e in transcript.events if e.type == "decision")
    )


def test_a_router_request_when_the_gateway_stops_before_any_run_is_written_as_a_run_of_its_own(tmp_path: Path) -> None:
    """The gateway stops before its agent starts a run: the held note is written as a run of its
    own (listed, its transcript where the others go), which ends at once saying why."""
    with gateway([DONE], tmp_path) as (fake, gw, root):
        body = {"contents": [{"role": "user", "parts": [{"text": "Rate this task."}]}], "generationConfig": {"responseMimeType": "application/json"}}
        httpx.post(f"{root}/v1beta/models/router-model:generateContent", json=body, timeout=30)
        assert list(gw.runs) == []
    (run,) = gw.runs
    transcript = read_transcript(run.path)
    notes = [e.text for e in transcript.events if e.type == "observation" and e.index == -1]
    assert len(notes) == 1 and "a side request without tools (1 message) went to the upstream" in notes[0], notes
    assert run.ended is not None and run.ended.outcome == "aborted" and "the gateway stopped before the agent's next run" in run.ended.reason
    assert gw.selected is None


def test_side_requests_past_the_kept_number_while_no_run_goes_on_are_written_as_a_run_at_once(tmp_path: Path, monkeypatch: Any) -> None:
    """An agent that only ever sends side requests holds no growing list in the gateway: past
    `KEPT_SIDE_NOTES` the notes held are written as a run of their own at once."""
    from engine.gateway import controller

    monkeypatch.setattr(controller, "KEPT_SIDE_NOTES", 2)
    with gateway([DONE], tmp_path) as (fake, gw, root):
        body = {"contents": [{"role": "user", "parts": [{"text": "Rate this task."}]}], "generationConfig": {"responseMimeType": "application/json"}}
        for _ in range(3):
            httpx.post(f"{root}/v1beta/models/router-model:generateContent", json=body, timeout=30)
        runs = [(r.number, r.ended.outcome if r.ended else None) for r in gw.runs]
    assert runs == [(1, "aborted")], runs
    notes = [e for e in read_transcript(gw.runs[0].path).events if e.type == "observation" and e.index == -1]
    assert len(notes) == 2 and "2 side requests came while no run went on" in gw.runs[0].ended.reason
    assert [r.number for r in gw.runs] == [1, 2]  # the third, held, written when the gateway stopped
