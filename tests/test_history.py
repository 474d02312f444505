"""A history that reads its old steps back from the run's events gives the steps the fold made:
the same thoughts, actions, observations, edits and user turns, by index, slice and in order;
its copies and a replay's checkpoints behave as a list's would."""

from __future__ import annotations

import pytest

from engine.core import history as history_module
from engine.core.events import Action, ApprovalDecided, ApprovalRequested, DecisionMade, Header, Note, Observed, RuleInfo
from engine.core.state import RunState, fold

HEADER = Header(scenario="s", task="t", task_text="do it", policy="p")


def _events(steps: int) -> list:
    """Steps of every kind the history records: calls and their results (one out of order),
    an edit, an "approve always", a user's later turn, a final answer."""
    events: list = []
    for step in range(1, steps + 1):
        args = {"key": f"k{step}"}
        actions = [Action(tool="look", args=args), Action(tool="look", args={"key": "other"})]
        events.append(DecisionMade(step=step, policy="p" if step % 2 else "q", thought=f"thought {step}", actions=actions))
        if step % 3 == 0:
            events.append(ApprovalRequested(step=step, index=0, tool="look", args=args, reason="asked"))
            if step % 2:
                events.append(ApprovalDecided(step=step, index=0, choice="modify", args={"key": "edited"}))
            else:
                events.append(ApprovalDecided(step=step, index=0, choice="approve_always",
                                              rule=RuleInfo(tool="look", effect="allow")))
        events.append(Observed(step=step, index=1, tool="look", args={"key": "other"}, text="second first"))
        events.append(Observed(step=step, index=0, tool="look", args=args, text=f"value {step}", executed=True))
        if step % 4 == 0:
            events.append(Note(step=step, kind="user", text=f"and then {step}"))
    events.append(DecisionMade(step=steps + 1, policy="p", thought="done", answer="42"))
    return events


@pytest.fixture
def small_hot(monkeypatch):
    monkeypatch.setattr(history_module, "HOT", 3)


def test_old_steps_read_back_are_the_steps_the_fold_made(small_hot) -> None:
    events = _events(40)
    plain = fold(HEADER, events)
    assert plain.history.cold == 0  # not told where its events are: every step an object
    read_back = RunState.start(HEADER)
    read_back.history.read_from(events.__getitem__)
    for event in events:
        read_back.apply(event)
    steps = list(plain.history)
    assert read_back.history.cold > 30
    assert list(read_back.history) == steps
    assert [read_back.history[i] for i in range(-len(steps), len(steps))] == steps + steps
    assert read_back.history[5:30:3] == steps[5:30:3]
    assert read_back.history == plain.history and read_back == plain
    assert any(s.edits for s in steps[:30]) and any(s.said for s in steps[:30])
    with pytest.raises(IndexError):
        read_back.history[len(steps)]


def test_a_history_told_late_goes_cold_at_once_and_its_copies_stand_alone(small_hot) -> None:
    events = _events(12)
    state = fold(HEADER, events[:-1])
    steps = list(state.history)
    state.history.read_from(events.__getitem__)
    assert state.history.cold == len(steps) - 3 and list(state.history) == steps
    copy = state.copy()
    copy.apply(events[-1])
    assert len(copy.history) == len(steps) + 1 and len(state.history) == len(steps)
    assert list(state.history) == steps and list(copy.history)[:-1] == steps


def test_a_checkpoint_of_a_history_read_back_is_its_first_steps(small_hot) -> None:
    """What a replay's checkpoint keeps (`upto`): the first steps, its own copy of the last."""
    events = _events(30)
    state = RunState.start(HEADER)
    state.history.read_from(events.__getitem__)
    for event in events:
        state.apply(event)
    steps = list(state.history)
    for count in (1, 2, 10, len(steps) - 2, len(steps)):
        last = steps[count - 1].copy()
        kept = state.history.upto(count, last)
        assert list(kept) == steps[:count] and kept[-1] is last
