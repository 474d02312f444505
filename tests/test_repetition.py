"""The repetition brake compares a proposal with what the last step ran, not what it proposed."""

from __future__ import annotations

from pathlib import Path

from engine import Decision, ScriptedPolicy
from tests.support.cockpit_worlds import desk_run


def payer() -> ScriptedPolicy:
    """Proposes pay(amount=5) at every step."""
    return ScriptedPolicy("payer", lambda view: Decision.act("I pay 5.", "pay", amount=5))


def test_a_rejected_action_proposed_again_is_not_a_repetition(tmp_path: Path) -> None:
    run = desk_run(payer(), tmp_path)
    engine = run.engine
    assert engine.step() == "awaiting_approval"
    engine.reject("not yet")
    assert engine.step() == "awaiting_approval", "nothing ran at step 1: step 2 is no repetition"
    assert engine.state.repeat_count == 1


def test_an_edited_action_counts_as_what_ran(tmp_path: Path) -> None:
    run = desk_run(payer(), tmp_path)
    engine = run.engine
    engine.step()
    engine.modify({"amount": 6})
    assert engine.step() == "awaiting_approval", "pay 6 ran, pay 5 is proposed: no repetition"
    engine.approve()
    assert engine.step() == "ended", "pay 5 ran and is proposed again: the brake stops it"
    assert engine.state.ended.reason.startswith("repetition: the same action 2 times")
    assert run.world.calls == [("pay", {"amount": 6, "to": "customer"}), ("pay", {"amount": 5, "to": "customer"})]


def test_retyped_after_a_rejection_in_a_take_over_is_not_a_repetition(tmp_path: Path) -> None:
    run = desk_run(payer(), tmp_path)
    engine = run.engine
    engine.step()
    engine.reject("I will do it myself")
    engine.swap_policy(run.human)
    run.human.supply(Decision.act("I pay 5 myself.", "pay", amount=5))
    assert engine.step() == "awaiting_approval"
    assert engine.state.repeat_count == 1
