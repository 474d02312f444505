"""The gateway on a full disk: a turn the transcript cannot hold releases no call to the agent.
The agent gets a clear error at once (not a hang, not a reply with the call silently dropped),
and so does its retry; the operator's approve says why it failed."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from engine.core.answers import Answer
from engine.core.guards import RecordError
from engine.stored.transcript import TranscriptWriter
from tests.support.fake_openai import FakeOpenAI, calls, say
from tests.support.gateway_harness import TOOLS, Files, Operator, gateway

USER = [{"role": "user", "content": "Tidy the folder."}]


@pytest.mark.parametrize(
    "approve, refused",
    [("all", "approval_requested"), ("all", "tool_started"), ("ask", "approval_decided"), ("ask", "tool_started")],
)
def test_a_call_the_transcript_cannot_hold_never_reaches_the_agent(tmp_path: Path, monkeypatch, approve: str, refused: str) -> None:
    write = TranscriptWriter.write

    def full(self: TranscriptWriter, event_type: str, line: bytes) -> None:
        if event_type == refused:
            raise OSError(28, "No space left on device")
        write(self, event_type, line)

    monkeypatch.setattr(TranscriptWriter, "write", full)
    files = Files(tmp_path)
    raised: list[BaseException] = []

    def approve_now(gw) -> None:
        try:
            gw.answer(Answer.approve())
        except RecordError as exc:
            raised.append(exc)

    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve=approve) as (gw, server):
        fake.add(calls(("delete_file", '{"path": "notes.txt"}'), content="Deleting."), say("done"), say("done"))
        operator = Operator(gw, approve_now) if approve == "ask" else None
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=60)
        answers = []
        for _ in range(2):  # the request, then the agent's retry
            with pytest.raises(openai.APIStatusError) as caught:
                message = client.chat.completions.create(model="m", messages=USER, tools=TOOLS).choices[0].message
                for call in message.tool_calls or []:  # what an agent does with a call it receives
                    files.run(call.function.name, **json.loads(call.function.arguments))
            answers.append((caught.value.status_code, caught.value.message))
            if operator is not None:
                operator.join()
                operator = None
    assert files.notes_exist
    assert [status for status, _ in answers] == [503, 503]
    assert all("the transcript cannot be written (No space left on device)" in text for _, text in answers)
    if approve == "ask":
        assert len(raised) == 1 and "No space left" in str(raised[0])
    assert '"tool_started"' not in (tmp_path / "gateway.jsonl").read_text()


@pytest.mark.parametrize("then", ["another conversation", "nothing"])
def test_headless_approving_on_a_full_disk_answers_503_keeps_serving_and_ends_with_an_outcome(tmp_path: Path, monkeypatch, capsys, then: str) -> None:
    """`gateway --headless`: the operator's approve fails on a full disk; the gateway says why
    on one line, keeps serving, and at SIGTERM prints its outcome line (no traceback)."""
    import os
    import signal
    import threading

    import tui.cli.run
    from engine import Answer
    from tui.cli.gateway import _headless

    write = TranscriptWriter.write

    def full(self: TranscriptWriter, event_type: str, line: bytes) -> None:
        if event_type == "approval_decided":
            raise OSError(28, "No space left on device")
        write(self, event_type, line)

    monkeypatch.setattr(TranscriptWriter, "write", full)
    monkeypatch.setattr(tui.cli.run, "_ask_on_terminal", lambda operator: operator.answer(Answer.approve()))
    files = Files(tmp_path)
    statuses: list[int] = []
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="ask", headless=True, mode="continue") as (gw, server):
        fake.add(calls(("delete_file", '{"path": "notes.txt"}')), say("other"))

        def agent() -> None:
            client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=60)
            try:
                client.chat.completions.create(model="m", messages=USER, tools=TOOLS)
            except openai.APIStatusError as exc:
                statuses.append(exc.status_code)
            if then == "another conversation":
                reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Another thing."}], tools=TOOLS)
                statuses.append(200 if reply.choices[0].message.content == "other" else 0)
            os.kill(os.getpid(), signal.SIGTERM)

        thread = threading.Thread(target=agent, daemon=True)
        thread.start()
        try:
            code = _headless(gw, server, "ask", "agent-tui gateway: listening")
        finally:
            for number, handler in handlers.items():
                signal.signal(number, handler)
        thread.join(30)
    out, err = capsys.readouterr()
    assert statuses == ([503, 200] if then == "another conversation" else [503])
    assert files.notes_exist
    assert "Traceback" not in out + err
    assert "No space left on device" in err and "nothing was released" in err
    last = out.strip().splitlines()[-1]
    if then == "another conversation":
        assert last == "outcome: answer after 1 step: other" and code == 0
    else:
        assert last.startswith("outcome: halted: the transcript cannot be written (No space left on device)") and code == 1
