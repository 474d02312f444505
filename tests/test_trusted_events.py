"""`trusted`, the engine's and the importers' constructor without validation: the same event as
validation makes of the same values, and a name that is not a field refused."""

from __future__ import annotations

import pytest

from engine.core import events as ev
from engine.core.sink import event_line


def _models() -> list[type[ev._Model]]:
    found, stack = [], list(ev._Model.__subclasses__())
    while stack:
        cls = stack.pop()
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


def test_a_trusted_event_is_what_validation_makes_of_its_values() -> None:
    action = ev.Action(tool="read", args={"path": "a.txt"}, call_id="c1")
    usage = ev.Usage(input_tokens=3, output_tokens=2, estimated=False)
    cases = [
        (ev.Action, {"tool": "read", "args": {"path": "a.txt"}}),
        (ev.Usage, {"input_tokens": 3}),
        (ev.DecisionMade, {"step": 1, "policy": "p", "thought": "t", "actions": [action], "usage": usage}),
        (ev.DecisionMade, {"step": 2, "policy": "p", "answer": "done"}),
        (ev.Observed, {"step": 1, "index": 0, "tool": "read", "args": {"path": "a.txt"}, "text": "x", "executed": True}),
        (ev.RunEnded, {"outcome": "answer", "reason": "final answer", "step": 2, "answer": "done"}),
        (ev.Note, {"step": 1, "kind": "user", "text": "more"}),
        (ev.PolicySwapped, {"step": 3, "old": "a", "new": "b"}),  # a field named as the maker's own locals might be
    ]
    for model, values in cases:
        made, checked = model.trusted(**values), model(**values)
        assert made == checked and list(made.__dict__) == list(checked.__dict__)
        assert event_line(made) == event_line(checked)
        assert made.__pydantic_fields_set__ == set(model.model_fields)
    assert ev.DecisionMade.trusted(step=1, policy="p").actions is not ev.DecisionMade.trusted(step=1, policy="p").actions


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_trusted_refuses_a_name_that_is_not_a_field(model: type[ev._Model]) -> None:
    with pytest.raises(TypeError):
        model.trusted(no_such_field=1)


def test_a_model_without_fields_has_a_trusted_constructor_too() -> None:
    class Marker(ev._Model):
        """No field of its own (as `_Event` had none before its `at`)."""

    made = Marker.trusted()
    assert made == Marker() and made.__dict__ == {}
    with pytest.raises(TypeError):
        Marker.trusted(at=1)
