"""MCP runs in the cockpit: the task asked for, tools grouped by server, a progress bar, a fault
pausing the run, hostile server text drawn literally, no server left after quit or abort, two
configured model policies (two loopback servers, two prices) swapped mid-run, and an MCP call
edited field by field against its input schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Input

from engine import Decision
from engine.sessions.config import PolicyConfig
from tests.support.cockpit_worlds import pick_policy
from tests.support.fake_openai import FakeOpenAI, calls, say
from tests.support.helpers import script
from tests.support.mcp_helpers import alive, wait_gone
from tui.app import CockpitApp
from tui.screens.approval import ApprovalScreen
from tui.screens.ask import AskScreen
from tui.screens.dialogs import HELP, PolicyPicker
from tui.screens.forms import EditArgsScreen
from tui.widgets.gauges import PolicyUsageTable
from tui.widgets.header import RunHeader
from tui.widgets.mcp_progress import CallProgress, ProgressMessage
from tui.widgets.tools import ToolRow
from tests.support.cockpit_mcp import SIZE, header_text, mcp_run, start_hub

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def settle(app: CockpitApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


def pane_text(app: CockpitApp) -> str:
    pane = app.pane
    return " ".join(" ".join(pane.render_line(y).text.split()) for y in range(pane.size.height))


async def test_a_run_without_a_task_asks_for_one_and_saves_it(tmp_path):
    hub = start_hub(tmp_path)
    run = mcp_run(tmp_path, hub, script(Decision.act("look", "list_notes")), task="")
    app = CockpitApp(run)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, AskScreen)
            assert not app.action_applies("step") and not app.action_applies("continue_run")
            await pilot.press("escape")  # no task: nothing runs, t asks again
            await pilot.pause()
            assert app.action_applies("set_task") and not app.action_applies("step")
            assert "no task yet" in header_text(app)
            assert "\nt          write the task" in HELP
            await pilot.press("t")
            await pilot.pause()
            assert isinstance(app.screen, AskScreen)
            await pilot.press(*"tidy my notes", "enter")
            await pilot.pause()
            assert app.engine.header.task_text == "tidy my notes"
            assert "tidy my notes" in header_text(app)
            assert app.action_applies("step") and not app.action_applies("set_task")
            await pilot.press("n")
            await settle(app, pilot)
            assert "ideas, todo" in pane_text(app)
    finally:
        run.close()
    header = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[0])
    assert header["task_text"] == "tidy my notes"


async def test_a_run_with_a_task_does_not_ask(tmp_path):
    hub = start_hub(tmp_path)
    run = mcp_run(tmp_path, hub, script(Decision.act("look", "list_notes")))
    app = CockpitApp(run)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert not isinstance(app.screen, AskScreen)
            assert app.action_applies("step") and not app.action_applies("set_task")
    finally:
        run.close()


async def test_tools_grouped_by_server_log_in_header_and_a_progress_bar(tmp_path):
    hub = start_hub(tmp_path)
    run = mcp_run(tmp_path, hub, script(Decision.act("count", "slow", steps=5, delay=0.2)))
    messages: list = []
    app = CockpitApp(run)
    try:
        async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
            groups = [str(w.render()) for w in app.query(".tool-group")]
            assert groups == ["── notes · trusted: its hints set the kinds"]
            panel = list(app.query("#tools > *"))
            assert panel[0].has_class("tool-group") and isinstance(panel[1], ToolRow)
            assert {row.info.name for row in app.query(ToolRow)} >= {"read_note", "delete_note", "slow"}
            log = hub.public()[0]["log"]
            assert Path(log).exists()
            assert f"mcp: notes log: {log}" in header_text(app)
            assert app.query_one(RunHeader).has_class("-mcp")
            await pilot.press("n")
            await settle(app, pilot)
            shown = [m.update.progress for m in messages if isinstance(m, ProgressMessage)]
            assert sorted(set(shown)) == [1.0, 2.0, 3.0, 4.0, 5.0]
            progress = app.query_one("#call-progress", CallProgress)
            assert progress.tool is None and not progress.has_class("-active")  # gone with the call
            progress.show_progress("notes.slow", 2, 5, "step 2 of 5")
            await pilot.pause()
            assert progress.fraction == 0.4 and progress.has_class("-active")
            assert "notes.slow ██████░░░░░░░░░░ 2/5 step 2 of 5" in str(progress.render())
    finally:
        run.close()
    assert app.run_.mcp is not None and not hub.progress_listeners  # unmount removed the listeners


async def test_at_80x24_the_progress_shows_under_the_strip(tmp_path):
    hub = start_hub(tmp_path)
    run = mcp_run(tmp_path, hub, script(Decision.act("count", "slow", steps=6, delay=0.4)))
    app = CockpitApp(run)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            bar = app.query_one("#strip-progress", CallProgress)
            assert not bar.display or not bar.has_class("-active")
            await pilot.press("n")
            seen = ""
            for _ in range(200):
                await pilot.pause(0.05)
                if bar.has_class("-active") and bar.region.height == 1:
                    seen = str(bar.render())
                    break
            assert seen.startswith("notes.slow ") and "/6" in seen
            assert not app.query_one("#tools").region.height  # the tool panel is folded away at 80 columns
            await settle(app, pilot)
            assert not bar.has_class("-active")
    finally:
        run.close()


@pytest.mark.parametrize(
    ("tool", "words"),
    [("crash", "exited during crash"), ("hang", "did not answer hang within 2 s"), ("garbage", "sent a reply that cannot be read")],
)
async def test_a_tool_fault_pauses_continue_and_says_so(tmp_path, tool, words):
    hub = start_hub(tmp_path, timeout=2)
    policy = script(Decision.act("read", "read_note", name="todo"), Decision.act("fault", tool), Decision.act("again", "list_notes"))
    run = mcp_run(tmp_path, hub, policy)
    app = CockpitApp(run)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c")
            await settle(app, pilot)
            assert app.run_status == "ready" and app.view_state.step == 2  # stopped at the fault, not at the end
            assert app.view_state.ended is None
            assert words in pane_text(app)
            assert any(words in str(n.message) for n in app._notifications)
            assert "a tool server failed" in header_text(app)
            await pilot.press("n")  # n goes on: the policy reads the error
            await settle(app, pilot)
            assert app.view_state.step == 3
    finally:
        run.close()


async def test_hostile_names_descriptions_and_results_are_drawn_literally(tmp_path):
    hub = start_hub(tmp_path, "--hostile")
    run = mcp_run(tmp_path, hub, script(Decision.act("hostile", "echo_hostile")))
    app = CockpitApp(run)
    try:
        async with app.run_test(size=SIZE) as pilot:
            row = next(r for r in app.query(ToolRow) if r.info.name == "evil[/]tool")
            assert "evil[/]tool" in str(row.render())
            await pilot.press("n")
            await settle(app, pilot)
            shown = pane_text(app)
            assert "[bold red]boom[/] [/] [link=http://x]click[/link]" in shown
            assert "\x1b" not in shown and "\x07" not in shown
    finally:
        run.close()


@pytest.mark.parametrize("key", ["q", "x"])
async def test_no_server_is_left_after_quit_or_abort(tmp_path, key):
    pidfile = tmp_path / "server.pid"
    hub = start_hub(tmp_path, "--pidfile", str(pidfile))
    pid = int(pidfile.read_text())
    run = mcp_run(tmp_path, hub, script(Decision.act("read", "read_note", name="todo")))
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(app, pilot)
        assert alive(pid)
        await pilot.press(key)
        if key == "x":
            await pilot.press("y")
            await settle(app, pilot)
            assert app.view_state.ended is not None and app.view_state.ended.outcome == "aborted"
        else:
            await pilot.press("y")  # the run can go on: q asks first
            await pilot.pause()
            assert not app.is_running
    run.close()  # what the command does when the cockpit closes
    assert wait_gone(pid)


async def test_two_configured_models_swapped_mid_run_each_at_its_price(tmp_path):
    hub = start_hub(tmp_path)
    with FakeOpenAI() as cheap_server, FakeOpenAI() as strong_server:
        cheap_server.add(calls(("read_note", json.dumps({"name": "todo"})), content="I read the todo.", usage=(1000, 100)))
        strong_server.add(say("The todo says: buy milk.", usage=(2000, 50)))
        named = {
            "cheap": PolicyConfig("cheap", "small", base_url=cheap_server.url, price_in_per_1k=0.1, price_out_per_1k=0.2).model_config({}),
            "strong": PolicyConfig("strong", "big", base_url=strong_server.url, price_in_per_1k=1.0, price_out_per_1k=4.0).model_config({}),
        }
        run = mcp_run(tmp_path, hub, "cheap", task="What does my todo say?", named=named)
        app = CockpitApp(run)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("n")
                await settle(app, pilot)
                table = app.query_one(PolicyUsageTable)
                assert not table.display  # one policy so far: the gauges say it all
                await pilot.press("p")
                assert isinstance(app.screen, PolicyPicker)
                assert {"cheap", "strong", "human"} <= set(app.screen.names)
                await pilot.press("escape")
                await pick_policy(pilot, "strong")
                await settle(app, pilot)
                assert app.view_state.policy == "strong"
                await pilot.press("n")
                await settle(app, pilot)
                assert app.view_state.ended is not None and app.view_state.ended.answer == "The todo says: buy milk."
                usage = app.view_state.policy_usage
                assert usage["cheap"].cost == pytest.approx((1000 * 0.1 + 100 * 0.2) / 1000)
                assert usage["strong"].cost == pytest.approx((2000 * 1.0 + 50 * 4.0) / 1000)
                assert app.view_state.cost == pytest.approx(0.12 + 2.2)
                assert table.display
                shown = str(table.render())
                lines = [" ".join(line.split()) for line in shown.splitlines()]
                assert lines == ["policy tokens cost", "cheap 1100 $0.1200", "strong 2050 $2.20", "sum 3150 $2.32"]
        finally:
            run.close()
        # the strong model got the whole history: the task, the cheap model's call and the server's answer
        sent = strong_server.requests[0].messages
        assert any("What does my todo say?" in (m.get("content") or "") for m in sent)
        assert any(m.get("tool_calls") and m["tool_calls"][0]["function"]["name"] == "read_note" for m in sent)
        assert any(m.get("role") == "tool" and "buy milk" in (m.get("content") or "") for m in sent)
        assert len(cheap_server.requests) == 1  # one request to the cheap model, then none


async def test_edit_an_mcp_call_field_by_field_checked_against_its_schema(tmp_path):
    hub = start_hub(tmp_path)
    run = mcp_run(tmp_path, hub, script(Decision.act("write", "write_note", name="plan", text="draft")))
    app = CockpitApp(run)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("n")
            await settle(app, pilot)
            assert isinstance(app.screen, ApprovalScreen)
            await pilot.press("e")
            await pilot.pause()
            form = app.screen
            assert isinstance(form, EditArgsScreen)
            name, text, pinned = (form.query_one(f"#arg-{n}", Input) for n in range(3))
            assert (name.value, text.value, pinned.value) == ("plan", "draft", "")
            labels = [str(label.render()) for label in form.query(".param-label")]
            assert labels[2].startswith("pinned (boolean, optional)")
            pinned.value = "maybe"
            await pilot.press("ctrl+r")
            await pilot.pause()
            assert app.screen is form, "the form stays open on arguments the schema refuses"
            assert "argument 'pinned' must be boolean, not string" in str(form.query_one("#edit-error").render())
            text.value = "final"
            pinned.value = "true"
            await pilot.press("ctrl+r")
            await settle(app, pilot)
        observed = [e for e in run.engine.events if e.type == "observation"][-1]
        assert observed.executed and observed.text == "wrote plan (5 characters) pinned"
        decided = [e for e in run.engine.events if e.type == "approval_decided"][-1]
        assert decided.choice == "modify" and decided.args == {"name": "plan", "text": "final", "pinned": True}
    finally:
        run.close()


async def test_a_progress_notification_stays_with_its_bar_and_goes_no_further_up():
    from textual import on
    from textual.app import App, ComposeResult
    from textual.message import Message

    from engine.core.tools import Progress
    from tests.support.cockpit_worlds import wait_until

    class After(Message):
        """Posted to the bar after the progress: it bubbles, so it reaches the app after anything the bar passed up before it."""

    class Host(App[None]):
        def __init__(self) -> None:
            super().__init__()
            self.heard: list[Message] = []

        def compose(self) -> ComposeResult:
            yield CallProgress(id="call-progress")

        @on(ProgressMessage)
        @on(After)
        def _heard(self, message: Message) -> None:
            self.heard.append(message)

    app = Host()
    async with app.run_test(size=(60, 4)) as pilot:
        bar = app.query_one(CallProgress)
        bar.listen(Progress("notes", "slow", 2.0, 5.0, None))
        await wait_until(pilot, lambda: bar.fraction == 0.4, what="the bar to show 2/5")
        bar.post_message(After())
        await wait_until(pilot, lambda: any(isinstance(m, After) for m in app.heard), what="the later message to reach the app")
        assert [type(m) for m in app.heard] == [After]
