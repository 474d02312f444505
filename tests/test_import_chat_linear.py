"""A chat log's messages are read in time linear in their number: each message finds the last step
and its oldest call without a result without looking again through what came before it."""

from __future__ import annotations

from typing import Any, Iterator, SupportsIndex

import pytest

from engine.stored.importers.build import Draft, Step
from engine.stored.importers.chat import read_messages


class _Counted(list):
    """A list that tallies the items read from it (iterated, reversed or sliced) in `read`."""

    read = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            _Counted.read += 1
            yield item

    def __reversed__(self) -> Iterator[Any]:
        for item in super().__reversed__():
            _Counted.read += 1
            yield item

    def __getitem__(self, key: SupportsIndex | slice) -> Any:
        got = super().__getitem__(key)
        _Counted.read += len(got) if isinstance(key, slice) else 1
        return got


@pytest.fixture
def counted_draft(monkeypatch: pytest.MonkeyPatch) -> Draft:
    """A draft whose items, and each step's calls and results, count the items read from them."""
    new_step = Draft.new_step

    def counted_step(self: Draft, thought: str = "") -> Step:
        step = new_step(self, thought)
        step.actions, step.observations = _Counted(step.actions), _Counted(step.observations)
        return step

    monkeypatch.setattr(Draft, "new_step", counted_step)
    monkeypatch.setattr(_Counted, "read", 0)
    draft = Draft("chat.json", "chat")
    draft.items = _Counted()
    return draft


def _read(draft: Draft, messages: list[dict[str, str]]) -> Draft:
    return read_messages(draft, messages, lambda i: f"message {i + 1}")


def test_user_and_system_messages_after_a_step_do_not_look_back_through_the_notes(counted_draft: Draft):
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    messages += [{"role": "user" if i % 2 else "system", "content": f"m{i}"} for i in range(2000)]
    draft = _read(counted_draft, messages)
    assert _Counted.read <= 2 * len(messages)
    assert len(draft.items) == 2001 and [n.kind for n in draft.items[-2:]] == ["system", "user"]


def test_observations_in_user_messages_find_the_oldest_call_without_looking_through_every_result(counted_draft: Draft):
    actions = "\n".join(f"Action: search[{i}]" for i in range(1000))
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": actions}]
    messages += [{"role": "user", "content": f"Observation: {i}"} for i in range(1000)]
    draft = _read(counted_draft, messages)
    assert _Counted.read <= 2 * len(messages)
    (step,) = draft.steps()
    assert [(i, t) for i, t, _ in step.observations] == [(i, str(i)) for i in range(1000)]


def test_user_messages_of_a_log_without_a_task_do_not_look_through_the_steps(counted_draft: Draft):
    """A log that starts with the assistant has no task: each user message asked whether any
    step was made yet by listing every item."""
    messages = [{"role": "assistant", "content": "hello"}]
    messages += [{"role": "user", "content": f"m{i}"} for i in range(2000)]
    draft = _read(counted_draft, messages)
    assert _Counted.read <= 2 * len(messages)
    assert draft.task_text is None and [n.kind for n in draft.items[1:]] == ["user"] * 2000


def test_legacy_function_results_find_their_calls_without_going_over_every_step(counted_draft: Draft):
    messages: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
    for i in range(1000):
        messages.append({"role": "assistant", "content": None, "function_call": {"name": "look", "arguments": f'{{"i": {i}}}'}})
        messages.append({"role": "function", "name": "look", "content": f"seen {i}"})
    draft = _read(counted_draft, messages)
    assert _Counted.read <= 4 * len(messages)
    assert [s.observations[0][1] for s in draft.steps()] == [f"seen {i}" for i in range(1000)]
