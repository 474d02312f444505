"""For every scenario, policy and approval choice: nothing irreversible runs unapproved."""

from __future__ import annotations

import itertools

import pytest

import scenarios
from engine.core.events import Event, Header
from engine.sessions.run import new_run
from engine.core.state import fold
from engine.stored.transcript import read_transcript

CHOICES = ["approve", "approve_always", "reject", "modify", "abort", "auto-all", "auto-none"]


def assert_no_unapproved_irreversible(header: Header, events: list[Event]) -> None:
    """Each executed irreversible call is preceded by its approval request and an approving decision."""
    kinds = {t.name: t.kind for t in header.tools}
    approved: set[tuple[int, int]] = set()
    asked: set[tuple[int, int]] = set()
    for event in events:
        if event.type == "approval_requested":
            asked.add((event.step, event.index))
        elif event.type == "approval_decided":
            assert (event.step, event.index) in asked, f"decision without a request: {event}"
            if event.choice in ("approve", "approve_always", "modify"):
                approved.add((event.step, event.index))
        elif event.type == "observation" and event.executed and kinds.get(event.tool) == "irreversible":
            key = (event.step, event.index)
            always = any(r.tool == event.tool and r.effect == "allow" for r in fold(header, events[: events.index(event)]).rules)
            assert key in approved or always, f"irreversible {event.tool} executed without approval at {key}"


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
