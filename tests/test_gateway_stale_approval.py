"""An approval answers the call the operator saw. While the approval dialog shows one call, an
agent's new conversation can hold another call beside it: pressing `a` on the old dialog
approves the call shown, never the new one, which the operator never saw; an answer to a call
no longer waiting is refused and runs nothing."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from engine import Answer
from engine.gateway.controller import StaleApproval
from tests.support.cockpit_worlds import wait_until
from tests.support.fake_openai import FakeOpenAI, call, calls, say
from tests.support.gateway_harness import TOOLS, Files, gateway
from tui.gateway_cockpit import GatewayCockpit
from tui.screens.approval import ApprovalScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def agent(url: str, files: Files, text: str, into: dict[str, Any]) -> threading.Thread:
    """An agent that runs every call it gets back."""

    def go() -> None:
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=60)
        try:
            message = client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}], tools=TOOLS).choices[0].message
        except openai.APIError as exc:
            into["error"] = exc
            return
        for tool_call in message.tool_calls or []:
            into.setdefault("ran", []).append(files.run(tool_call.function.name, **json.loads(tool_call.function.arguments)))

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


async def test_approving_the_dialog_of_a_call_while_another_is_held_approves_the_call_shown(tmp_path: Path) -> None:
    files = Files(tmp_path)
    (tmp_path / "scratch.txt").write_text("old")
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(call("delete_file", path="scratch.txt", id="c1"), call("delete_file", path="notes.txt", id="c2"))
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=(120, 40)) as pilot:
            first: dict[str, Any] = {}
            agent(server.url, files, "Clean the scratch file.", first)
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval dialog", timeout=30)
            shown = gw.engine.state.pending
            assert shown.args == {"path": "scratch.txt"}
            second: dict[str, Any] = {}
            agent(server.url, files, "Something else entirely.", second)
            await wait_until(
                pilot, lambda: sum(r.engine.status == "awaiting_approval" for r in gw.open_runs()) == 2,
                what="the second conversation's call", timeout=30,
            )
            assert gw.engine.state.pending is shown, "the selection stays on the call shown"
            assert isinstance(app.screen, ApprovalScreen), "the old dialog is still up"
            await pilot.press("a")
            await app.workers.wait_for_complete()
            await wait_until(pilot, lambda: "ran" in first, what="the first agent to run its call", timeout=30)
            assert files.notes_exist, "a call the operator never saw was approved"
            assert not (tmp_path / "scratch.txt").exists()
            assert "ran" not in second and gw.engine.state.pending.args == {"path": "notes.txt"}


def test_the_gateway_refuses_an_answer_to_an_approval_that_is_gone(tmp_path: Path) -> None:
    files = Files(tmp_path)
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(calls(("delete_file", '{"path": "x"}'), ("delete_file", '{"path": "notes.txt"}')), say("ok"))
        first: dict[str, Any] = {}
        agent(server.url, files, "one", first)
        deadline_wait(lambda: gw.engine is not None and gw.engine.status == "awaiting_approval")
        shown = gw.engine.state.pending
        gw.answer(Answer.reject("not x"), expected=shown)
        deadline_wait(lambda: gw.engine.state.pending is not None and gw.engine.state.pending is not shown)
        for answer in (lambda: gw.answer(Answer.approve(), expected=shown), lambda: gw.answer(Answer.edit({"path": "x"}), expected=shown), lambda: gw.answer(Answer.reject("no"), expected=shown)):
            with pytest.raises(StaleApproval, match=r"\(delete_file, step 1\) is no longer waiting: the agent's requests moved the gateway on; nothing ran$"):
                answer()
        with pytest.raises(StaleApproval, match="moved the gateway on"):
            gw.answer(Answer.edit({"path": "x"}), expected=shown)
        assert files.notes_exist and gw.engine.status == "awaiting_approval"
        assert gw.engine.state.pending.args == {"path": "notes.txt"}


def deadline_wait(predicate) -> None:
    import time

    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
