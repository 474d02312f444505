"""An approval answers the call the operator saw. While the approval dialog shows one call, an
agent's new conversation can replace the run and hold another call: pressing `a` on the old
dialog must not approve the new call, which the operator never saw."""

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
from tests.support.fake_openai import FakeOpenAI, call, say
from tests.support.gateway_harness import TOOLS, Files, gateway
from tui.gateway_cockpit import GatewayCockpit
from tui.screens.approval import ApprovalScreen
from tui.screens.forms import ReasonScreen

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


@pytest.mark.parametrize(
    ("opens", "form", "answers"),
    [((), ApprovalScreen, ("a",)), (("r",), ReasonScreen, ("n", "o", "enter"))],
    ids=["approved-in-the-dialog", "rejected-in-its-reason-form"],
)
async def test_an_answer_given_in_a_dialog_of_a_call_replaced_meanwhile_runs_nothing(
    tmp_path: Path, opens: tuple[str, ...], form: type, answers: tuple[str, ...]
) -> None:
    """The approval dialog, and the reason form it opens, keep the approval they showed: the new
    conversation's call that took its place while they were open is not answered with them."""
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
            await pilot.press(*opens)
            await wait_until(pilot, lambda: isinstance(app.screen, form), what=form.__name__)
            second: dict[str, Any] = {}
            agent(server.url, files, "Something else entirely.", second)
            await wait_until(
                pilot, lambda: gw.engine.state.pending is not None and gw.engine.state.pending is not shown,
                what="the second conversation's call", timeout=30,
            )
            await wait_until(
                pilot, lambda: app.view_state.pending is not None and app.view_state.pending.args == {"path": "notes.txt"},
                what="the cockpit showing the second run",
            )
            assert isinstance(app.screen, form), "the old dialog is still up"
            await pilot.press(*answers)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert files.notes_exist, "a call the operator never saw was approved"
            assert "ran" not in second and gw.engine.state.pending is not None
            assert not [e for e in gw.engine.events if e.type == "approval_decided"], "a call the operator never saw was answered"
            assert any("no longer waiting" in str(n.message) for n in app._notifications)


def test_the_gateway_refuses_an_answer_to_an_approval_that_is_gone(tmp_path: Path) -> None:
    files = Files(tmp_path)
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(call("delete_file", path="x", id="c1"), call("delete_file", path="notes.txt", id="c2"), say("ok"))
        first: dict[str, Any] = {}
        agent(server.url, files, "one", first)
        deadline_wait(lambda: gw.engine is not None and gw.engine.status == "awaiting_approval")
        shown = gw.engine.state.pending
        second: dict[str, Any] = {}
        agent(server.url, files, "two", second)
        deadline_wait(lambda: gw.engine.state.pending is not None and gw.engine.state.pending is not shown)
        for answer in (lambda: gw.approve(expected=shown), lambda: gw.modify({"path": "x"}, expected=shown), lambda: gw.reject("no", expected=shown)):
            with pytest.raises(StaleApproval, match=r"\(delete_file, step 1\) is no longer waiting: the agent's requests moved the gateway on; nothing ran$"):
                answer()
        with pytest.raises(StaleApproval, match="moved the gateway on"):
            gw.answer(Answer.edit({"path": "x"}), expected=shown)
        assert files.notes_exist and gw.engine.status == "awaiting_approval"


def deadline_wait(predicate) -> None:
    import time

    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
