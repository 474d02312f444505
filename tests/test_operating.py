"""The one interface the cockpit steers a run through (engine/core/operating.py): an approval
is answered with one call, `answer`, which a local run's `EngineOperating` and the `Gateway`
both implement over the engine's one function that applies an answer."""

from __future__ import annotations

import inspect

import pytest

from engine import Answer, Decision
from engine.core.operating import Operating
from engine.core.operator import StaleApproval
from engine.core.state import PendingApproval
from engine.gateway import Gateway
from tests.support.helpers import counting_run
from tui.bridge import EngineOperating

CALLS = {"step", "go_on", "pause", "answer", "abort", "swap_policy", "extend_budget", "end_at_budget", "status", "folded_state"}


def protocol_calls() -> set[str]:
    return {name for name, value in vars(Operating).items() if inspect.isfunction(value) and not name.startswith("_")}


def test_an_approval_is_answered_by_one_call_that_every_run_implements() -> None:
    assert protocol_calls() == CALLS
    for implementation in (EngineOperating, Gateway):
        for name in CALLS:
            wanted = list(inspect.signature(getattr(Operating, name)).parameters)
            assert list(inspect.signature(getattr(implementation, name)).parameters)[: len(wanted)] == wanted, (implementation, name)


def test_a_local_run_is_answered_through_the_engine_and_an_answer_to_another_call_runs_nothing() -> None:
    run = counting_run(Decision.act("t", "pay", amount=5))
    operating = EngineOperating(run.engine, policy_named=lambda name: run.engine.policy)
    operating.step()
    shown = operating.folded_state().pending
    other = PendingApproval(shown.step, shown.index, shown.tool, {"amount": 500}, shown.reason, shown.thought)
    with pytest.raises(StaleApproval):
        operating.answer(Answer.approve(), expected=other)
    assert run.world.calls == []
    operating.answer(Answer.edit({"amount": "3"}), expected=shown)
    assert run.world.calls == [("pay", {"amount": 3})]
    assert [e.choice for e in run.engine.events if e.type == "approval_decided"] == ["modify"]
