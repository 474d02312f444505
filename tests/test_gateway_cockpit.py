"""The gateway's cockpit (the cockpit app on a `Gateway`) under Textual's pilot: step mode, the approval
dialog, take over, the runs list, help, words for statuses, nothing cut without "…"."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from engine.core.policy import Decision
from tests.support.cockpit_worlds import screen_text, wait_until
from tests.support.fake_openai import FakeOpenAI, call, say
from tests.support.gateway_harness import TOOLS, gateway
from tui.gateway_cockpit import GatewayCockpit, RunsPanel
from tui.screens.dialogs import HelpScreen
from tui.widgets.header import RunHeader
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


def _pane(app: GatewayCockpit) -> str:
    """What the transcript pane draws now, runs of spaces as one."""
    pane = app.pane
    return " ".join(" ".join(pane.render_line(y).text.split()) for y in range(pane.size.height))


def _header(app: GatewayCockpit) -> str:
    return str(app.query_one(RunHeader).render())


def _runs(app: GatewayCockpit) -> str:
    return str(app.query_one(RunsPanel).render())


async def test_step_reject_with_a_reason_and_the_runs_list(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="c1"), say("Kept it."), say("Second conversation."))
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=(120, 40)) as pilot:
            got: dict[str, Any] = {}
            thread = _ask(server.url, USER, got)
            await wait_until(pilot, lambda: gw.held is not None, what="the request", timeout=30)
            await pilot.pause()
            await wait_until(pilot, lambda: "request held" in _header(app), what="the held request shown")
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
            await wait_until(pilot, lambda: "answer after 1 step" in _runs(app), what="the second run listed")
            assert "run 2: conversation 2, turn 1" in _header(app)
            runs = _runs(app)
            assert "1. conversation 1, turn 1" in runs and "answer after 2 steps" in runs, runs
            assert "2. conversation 2, turn 1" in runs, runs


async def test_take_over_writes_the_reply_in_the_cockpit(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=(120, 40)) as pilot:
            got: dict[str, Any] = {}
            _ask(server.url, USER, got)
            await wait_until(pilot, lambda: gw.held is not None, what="the request", timeout=30)
            gw.take_over(Decision.final("", "I will answer this one myself."))
            await wait_until(pilot, lambda: "reply" in got, what="the reply", timeout=30)
            assert got["reply"].choices[0].message.content == "I will answer this one myself."
            await wait_until(pilot, lambda: "I will answer this one myself." in _pane(app), what="the reply in the pane")
            assert fake.requests == []


async def test_the_footer_at_80x24_lists_whole_keys_and_the_approval_keys_only_while_a_call_waits(tmp_path: Path) -> None:
    """Textual's own footer listed every key and cut the row at 80 columns (`r rejec`)."""
    from tests.support.cockpit_worlds import actions

    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="c1"), say("Kept it."))
        app = GatewayCockpit(gw, server.url)
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
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("ctrl+c")
            await pilot.pause()
        assert app.return_code == 0 and not app.is_running


async def test_question_mark_opens_the_help_and_the_footer_has_its_key(tmp_path: Path) -> None:
    """The gateway's own screen had no help: `?` did nothing and the footer did not list it."""
    from tests.support.cockpit_worlds import shown_keys

    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            always = [key.action for key in app.query("#always-keys FooterKeyLabel") if key.display]
            assert "help" in always, always
            assert all(key.region.right <= 80 for key in shown_keys(app))
            await pilot.press("question_mark")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="the help closed")


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_a_held_call_is_worded_and_nothing_on_screen_is_cut_without_an_ellipsis(tmp_path: Path, size: tuple[int, int]) -> None:
    """The status was the raw `awaiting_approval`, and the runs panel cut a long transcript
    path mid-word at its edge without a mark."""
    long_name = "a-transcript-with-a-name-much-longer-than-any-panel-is-wide-" + "x" * 40 + ".jsonl"
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="continue", out=tmp_path / long_name) as (gw, server):
        fake.add(call("delete_file", path="notes.txt", id="c1"), say("Kept it."))
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=size) as pilot:
            got: dict[str, Any] = {}
            _ask(server.url, USER, got)
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval dialog", timeout=30)
            await pilot.press("escape")
            await wait_until(pilot, lambda: "awaiting approval: delete_file" in _header(app), what="the status in words")
            titles = [command.title for command in app.get_system_commands(app.screen_stack[0])]
            assert "Approve" in titles and "Edit arguments" in titles and "Step" not in titles, titles
            rows = screen_text(app)
            assert not [row for row in rows if "awaiting_approval" in row or "policy_failed" in row], rows
            assert not [row for row in rows if "a-transcript-with" in row and "…" not in row], rows
            if app.query(RunsPanel) and app.query_one(RunsPanel).display and app.query_one("#side").display:
                panel = app.query_one(RunsPanel)
                lines = _runs(app).splitlines()
                assert lines and all(len(line) <= panel.content_size.width for line in lines), lines
                assert any(line.endswith("…") for line in lines), lines
            await pilot.press("a")
            await wait_until(pilot, lambda: "reply" in got, what="the agent's reply", timeout=30)


async def test_the_budget_pause_of_a_gateway_run_opens_the_budget_dialog_and_extends_it(tmp_path: Path) -> None:
    """The gateway's runs pause at a budget limit as any run does: the cockpit's dialog opens,
    `e` extends the limit through the gateway, and the agent's request is answered."""
    from engine.core.events import Budget
    from tui.screens.dialogs import BudgetScreen

    with FakeOpenAI() as fake, gateway(fake, tmp_path, budget=Budget(max_steps=1)) as (gw, server):
        fake.add(call("read_file", path="notes.txt", id="c1"), say("It says keep me."))
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=(100, 30)) as pilot:
            first: dict[str, Any] = {}
            _ask(server.url, USER, first)
            await wait_until(pilot, lambda: "reply" in first, what="the first reply", timeout=30)
            call_id = first["reply"].choices[0].message.tool_calls[0].id
            history = [
                *USER,
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}]},
                {"role": "tool", "tool_call_id": call_id, "content": "keep me"},
            ]
            second: dict[str, Any] = {}
            _ask(server.url, history, second)
            await wait_until(pilot, lambda: isinstance(app.screen, BudgetScreen), what="the budget dialog", timeout=30)
            assert "paused at the steps limit" in _header(app)
            await pilot.press("e")
            await wait_until(pilot, lambda: "reply" in second, what="the second reply", timeout=30)
            assert second["reply"].choices[0].message.content == "It says keep me."


async def test_the_runs_list_says_how_many_older_runs_there_are_and_where(tmp_path: Path, monkeypatch: Any) -> None:
    """Past the runs the gateway keeps listed, the panel's last line counts the older ones and
    names the folder of their transcripts."""
    from engine.gateway import controller

    monkeypatch.setattr(controller, "KEPT_RUNS", 1)
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(say("one"), say("two"), say("three"))
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=(160, 40)) as pilot:
            for n in range(3):
                gw.submit({"model": "m", "messages": [{"role": "user", "content": f"task {n}"}], "tools": TOOLS}).result(30)
            await wait_until(pilot, lambda: "2 older runs in" in _runs(app), what="the older runs counted")
            runs = _runs(app)
            assert "3. conversation 3, turn 1" in runs and "1. conversation 1" not in runs, runs
            assert str(tmp_path)[:20] in runs, runs


async def test_n_while_the_gateways_step_runs_is_not_offered(tmp_path: Path) -> None:
    """Its step releases an agent's request, not a policy's decision: n while one runs is neither
    offered nor queued (the cockpit's queue of steps is a policy's)."""
    with FakeOpenAI() as fake, gateway(fake, tmp_path, mode="step") as (gw, server):
        app = GatewayCockpit(gw, server.url)
        async with app.run_test(size=(120, 40)) as pilot:
            app.busy, app.working_on = True, "step"  # as while a released request goes upstream
            assert app.check_action("step", ()) is not True
            app.action_step()
            assert app.steps_queued == 0
            app.busy = False
