"""For every scenario, policy and approval choice: nothing irreversible runs unapproved."""

from __future__ import annotations


import pytest

import scenarios
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript
from tests.support.invariants import assert_no_unapproved_irreversible

CHOICES = ["approve", "approve_always", "reject", "modify", "abort", "auto-all", "auto-none"]


def _drive(run, choice: str) -> None:
    engine = run.engine
    for _ in range(50):
        status = engine.run()
        if status != "awaiting_approval":
            return
        if choice in ("approve", "auto-all"):
            engine.approve()
        elif choice == "approve_always":
            engine.approve(always=True)
        elif choice in ("reject", "auto-none"):
            engine.reject("not now")
        elif choice == "modify":
            engine.modify(dict(engine.state.pending.args))
        else:
            engine.abort()


CASES = [
    (name, policy, task, choice)
    for name in scenarios.names()
    for policy in scenarios.get(name).policies
    for task in list(scenarios.get(name).tasks)[:3]
    for choice in CHOICES
]


@pytest.mark.parametrize("name, policy, task, choice", CASES)
def test_no_irreversible_execution_without_approval(tmp_path, name, policy, task, choice):
    approve = {"auto-all": "all", "auto-none": "none"}.get(choice, "ask")
    path = tmp_path / "run.jsonl"
    run = new_run(scenarios.get(name), task, policy, out=path, approve=approve)
    _drive(run, choice)
    run.close()
    assert run.engine.ended, "every run ends with a recorded reason"
    transcript = read_transcript(path)
    assert transcript.events == run.engine.events
    assert_no_unapproved_irreversible(transcript.header, transcript.events)


def test_the_checker_catches_an_unapproved_execution(tmp_path):
    path = tmp_path / "run.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path, approve="all")
    run.engine.run()
    events = [e for e in run.engine.events if e.type not in ("approval_requested", "approval_decided")]
    with pytest.raises(AssertionError, match="without approval"):
        assert_no_unapproved_irreversible(run.engine.header, events)
