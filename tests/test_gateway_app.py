"""The gateway's cockpit under Textual's pilot: step mode, the approval dialog, take over, the runs list."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from engine.core.policy import Decision
from tests.support.cockpit_worlds import wait_until
from tests.support.fake_openai import FakeOpenAI, call, say
from tests.support.gateway_harness import TOOLS, gateway
from tui.gateway_app import GatewayApp
from tui.screens.approval import ApprovalScreen
from tui.screens.forms import ReasonScreen

USER = [{"role": "user", "content": "Tidy the folder."}]
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _ask(url: str, messages: list[dict[str, Any]], into: dict[str, Any]) -> threading.Thread:
    def agent() -> None:
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=60)
        into["reply"] = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)

    thread = threading.Thread(target=agent, daemon=True)
    thread.start()
    return thread


def _log(app: GatewayApp) -> str:
    return "\n".join(str(line) for line in app.query_one("#gw-events").lines)


async def test_step_reject_with_a_reason_and_the_runs_list(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="c1"), say("Kept it."), say("Second conversation."))
        app = GatewayApp(gw, server.url)
        async with app.run_test(size=(120, 40)) as pilot:
            got: dict[str, Any] = {}
            thread = _ask(server.url, USER, got)
            await wait_until(pilot, lambda: gw.held is not None, what="the request", timeout=30)
            await pilot.pause()
            assert "request held" in str(app.query_one("#gw-status").render())
            assert fake.requests == []
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval dialog", timeout=30)
            await pilot.press("r")
            await wait_until(pilot, lambda: isinstance(app.screen, ReasonScreen), what="the reason dialog", timeout=30)
            await pilot.press(*"not now", "enter")
            await wait_until(pilot, lambda: "reply" in got, what="the agent's reply", timeout=30)
            thread.join(5)
            assert got["reply"].choices[0].message.content == "Kept it."
            assert got["reply"].choices[0].message.tool_calls is None

            other: dict[str, Any] = {}
            _ask(server.url, [{"role": "user", "content": "something else"}], other)
            await wait_until(pilot, lambda: gw.held is not None, what="the second request", timeout=30)
            await pilot.press("c")
            await wait_until(pilot, lambda: "reply" in other, what="the second reply", timeout=30)
            await pilot.pause()
            log = _log(app)
            assert "── run 2: conversation 2, turn 1 (a new run and transcript) ──" in log
            assert "rejected by operator: not now" in log
            runs = str(app.query_one("#gw-runs").render())
            assert "1. c1 t1 answer after 2 steps" in runs and "2. c2 t1 answer after 1 step" in runs


async def test_take_over_writes_the_reply_in_the_cockpit(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        app = GatewayApp(gw, server.url)
        async with app.run_test(size=(120, 40)) as pilot:
            got: dict[str, Any] = {}
            _ask(server.url, USER, got)
            await wait_until(pilot, lambda: gw.held is not None, what="the request", timeout=30)
            gw.take_over(Decision.final("", "I will answer this one myself."))
            await wait_until(pilot, lambda: "reply" in got, what="the reply", timeout=30)
            await pilot.pause()
            assert got["reply"].choices[0].message.content == "I will answer this one myself."
            assert "[human]" in _log(app) and fake.requests == []


async def test_the_footer_at_80x24_lists_whole_keys_and_the_approval_keys_only_while_a_call_waits(tmp_path: Path) -> None:
    """Textual's own footer listed every key and cut the row at 80 columns (`r rejec`)."""
    from tests.support.cockpit_worlds import actions

    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="c1"), say("Kept it."))
        app = GatewayApp(gw, server.url)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            idle = actions(app)
            assert idle[:2] == ["step", "continue_run"] and "approve" not in idle and "budget" not in idle, idle
            got: dict[str, Any] = {}
            _ask(server.url, USER, got)
            await wait_until(pilot, lambda: gw.held is not None, what="the request", timeout=30)
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval dialog", timeout=30)
            await pilot.press("escape")
            await pilot.pause()
            await pilot.pause()
            pending = actions(app)
            assert pending[:4] == ["approve", "approve_always", "reject", "edit"], pending
            await pilot.press("a")
            await wait_until(pilot, lambda: "reply" in got, what="the agent's reply", timeout=30)


async def test_ctrl_c_quits_the_gateway_cockpit_as_q_does(tmp_path: Path) -> None:
    """Ctrl+C said only Textual's "press ctrl+q to quit"."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        app = GatewayApp(gw, server.url)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("ctrl+c")
            await pilot.pause()
        assert app.return_code == 0 and not app.is_running
