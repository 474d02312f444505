"""The model policy in the cockpit: picked mid-run, its thought streamed into the
pane, its real usage and cost in the gauges, its faults pausing the run."""

from __future__ import annotations

import pytest

import scenarios
from engine.model.policy import ModelConfig
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import pick_policy
from tests.support.fake_openai import FakeOpenAI, Status, call, say
from tests.support.model_policy import config
from tui.app import CockpitApp
from tui.bridge import ThoughtStreamed
from tui.widgets.gauges import BudgetGauges
from tui.widgets.transcript import TranscriptPane

pytestmark = pytest.mark.anyio
KEY = "sk-cockpit-test-never-on-screen"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def model_config(server: FakeOpenAI) -> ModelConfig:
    return config(server, api_key=KEY, max_retries=0)


def pane_text(app: CockpitApp) -> str:
    pane = app.query_one(TranscriptPane)
    return "\n".join(pane.render_line(y).text for y in range(pane.size.height))


async def settle(app: CockpitApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_swap_to_the_model_streams_its_thought_and_fills_the_gauges(server, tmp_path):
    server.add(
        call("calculator", content="Seventeen times twenty-three, less a hundred.", expression="17 * 23 - 100", usage=(120, 30)),
        say("It is 291.", usage=(180, 10)),
    )
    run = new_run(
        scenarios.get("calculator"), None, "arithmetic", out=tmp_path / "run.jsonl", interactive=True, model=model_config(server)
    )
    messages: list = []
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pick_policy(pilot, "model")
        await settle(app, pilot)
        assert app.view_state.policy == "model:test-model"
        await pilot.press("n")
        await settle(app, pilot)
        streamed = "".join(m.delta for m in messages if isinstance(m, ThoughtStreamed))
        assert streamed.startswith("Seventeen times twenty-three")
        assert "Seventeen times twenty-three, less a hundred." in pane_text(app)
        assert "291" in pane_text(app)
        gauges = app.query_one(BudgetGauges)
        assert gauges.gauge("tokens").used == 150  # the server's usage, not the estimate
        assert gauges.gauge("cost").used == pytest.approx((120 * 0.5 + 30 * 1.5) / 1000)
        await pilot.press("n")
        await settle(app, pilot)
        assert app.view_state.ended is not None and app.view_state.ended.answer == "It is 291."
        assert gauges.gauge("tokens").used == 340
        assert KEY not in pane_text(app)
    run.close()
    assert KEY not in (tmp_path / "run.jsonl").read_text()


async def test_a_model_fault_pauses_the_run_and_retry_goes_on(server, tmp_path):
    server.add(
        Status(503, "overloaded, try later"),
        call("calculator", content="Now it works.", expression="17 * 23 - 100"),
        say("291"),
    )
    cfg = model_config(server)
    run = new_run(scenarios.get("calculator"), None, "model", out=tmp_path / "run.jsonl", interactive=True, model=cfg)
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n")
        await settle(app, pilot)
        assert app.run_status == "policy_failed"
        assert "503" in (app.view_state.last_policy_error or "")
        assert "failed" in pane_text(app).lower()
        await pilot.press("c")  # retry, then continue to the end
        await settle(app, pilot)
        assert app.view_state.ended is not None and app.view_state.ended.answer == "291"
    run.close()
