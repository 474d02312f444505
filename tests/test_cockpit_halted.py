"""The cockpit when the transcript cannot take an event (a full disk, an unwritable text):
no approval is offered that was never recorded, nothing runs, the operator is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import Decision
from tests.support.cockpit_worlds import by_step, desk_run, settle
from tests.support.helpers import fail_writes_of
from tui.app import CockpitApp
from tui.screens.approval import ApprovalScreen

pytestmark = pytest.mark.anyio
SIZE = (120, 40)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("thought", ["Pay now.", "Pay \ud800 now."])
async def test_an_approval_the_transcript_cannot_hold_is_never_offered(tmp_path: Path, thought: str) -> None:
    run = desk_run(by_step("payer", Decision.act(thought, "pay", amount=5)), tmp_path)
    fail_writes_of(run, "approval_requested")
    app = CockpitApp(run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert app.run_status == "halted"
        assert not app.action_applies("approve") and not app.action_applies("step")
        await pilot.press("a")
        await settle(pilot)
        assert run.world.calls == [], "an approval that was never recorded executed the tool"
        assert "No space left on device" in (app.last_error or "")
    run.close()
    saved = (tmp_path / "run.jsonl").read_text()
    assert "approval_requested" not in saved and '"pay"' in saved  # the decision is on file, the request is not


def test_stopping_from_another_thread_records_the_running_call_as_unknown(tmp_path: Path) -> None:
    """What the cockpit does on SIGTERM while a tool runs in its worker: the call's outcome
    is unknown, the run ends, and the tool's late return is not recorded."""
    import threading

    from engine import Budget, Param, Scenario, Task, Tool
    from engine.sessions.run import new_run
    from engine.stored.transcript import read_transcript

    entered, release = threading.Event(), threading.Event()

    def transfer(amount: int) -> str:
        entered.set()
        release.wait(30)
        return "sent"

    class World:
        tools = [Tool("transfer", "Send.", (Param("amount", "integer"),), transfer, kind="irreversible", timeout=None)]

    scenario = Scenario("w", "", {"t": Task("t", "pay")}, {}, lambda task, options: World(), budget=Budget(max_steps=5))
    run = new_run(scenario, "t", by_step("p", Decision.act("pay", "transfer", amount=5)), out=tmp_path / "r.jsonl", approve="all")
    worker = threading.Thread(target=lambda: run.engine.run(), daemon=True)
    worker.start()
    assert entered.wait(30)
    run.engine.stop("terminated (SIGTERM)")
    run.close()
    release.set()
    worker.join(30)
    events = read_transcript(tmp_path / "r.jsonl").events
    observation = [e for e in events if e.type == "observation"]
    assert len(observation) == 1 and observation[0].text.startswith("UNKNOWN OUTCOME") and not observation[0].executed
    assert events[-1].type == "run_ended" and events[-1].reason == "terminated (SIGTERM)"
