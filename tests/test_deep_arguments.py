"""Arguments nested deeper than `MAX_DEPTH` levels are refused before anything runs:
from a policy (a policy error, the run stops with the reason, the transcript reads
back) and from the operator's edit (a ValueError, the approval still waits). They
raised out of `step` before (the transcript's JSON writer stops near 255 levels)."""

from __future__ import annotations

import scenarios
from engine import Decision, ScriptedPolicy
from engine.core.jsonvalues import MAX_DEPTH, too_deep
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript

import pytest


def nested(levels: int) -> object:
    """A value that makes arguments `levels` deep in all ({"order_id": value} is the first)."""
    value: object = "1187"
    for _ in range(levels - 1):
        value = [value]
    return value


def _run(tmp_path, levels: int, approve: str = "all"):
    run = new_run(scenarios.get("support"), "return-1187", "scripted", out=tmp_path / "run.jsonl", approve=approve)
    run.engine.swap_policy(ScriptedPolicy("deep", lambda view: Decision.act("deep", "open_return_request", order_id=nested(levels))))
    return run


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 300, 600, 5000])
def test_a_policys_arguments_nested_too_deep_are_a_policy_error_and_nothing_runs(tmp_path, levels):
    run = _run(tmp_path, levels)
    run.engine.run()
    run.close()
    assert run.world.requests == []
    end = run.engine.events[-1]
    assert end.type == "run_ended" and end.outcome == "stopped"
    assert f"nested deeper than {MAX_DEPTH} levels" in end.reason
    saved = read_transcript(tmp_path / "run.jsonl")
    assert [e.type for e in saved.events] == [e.type for e in run.engine.events]


def test_arguments_at_the_limit_run_and_read_back(tmp_path):
    run = _run(tmp_path, MAX_DEPTH)
    run.engine.step()
    run.close()
    decision = next(e for e in run.engine.events if e.type == "decision" and e.policy == "deep")
    assert not too_deep(decision.actions[0].args)
    saved = read_transcript(tmp_path / "run.jsonl")
    assert next(e for e in saved.events if e.type == "decision" and e.policy == "deep").actions[0].args == decision.actions[0].args


def test_an_edit_nested_too_deep_is_refused_and_the_approval_waits(tmp_path):
    run = new_run(scenarios.get("support"), "return-1187", "scripted", out=tmp_path / "run.jsonl", approve="ask", interactive=True)
    while run.engine.status == "ready":
        run.engine.step()
    assert run.engine.status == "awaiting_approval"
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        run.engine.modify({"order_id": nested(400)})
    assert run.engine.status == "awaiting_approval"
    assert run.world.requests == []
    run.engine.modify({"order_id": "1187"})
    assert run.world.requests == ["R-1 for 1187"]
    run.close()


def test_a_value_that_holds_itself_is_too_deep():
    loop: list = []
    loop.append(loop)
    loop.append(loop)
    assert too_deep({"x": loop})
    assert not too_deep({"x": [[1, 2], {"y": [3]}]})


def _depth(value) -> int:
    """How many levels of objects and lists `value` nests (a scalar: 0), counted by recursion."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return 1 + max(map(_depth, value), default=0)
    return 0


@pytest.mark.parametrize("value", [
    {}, {"k": "v"}, {"k": []}, {"k": ["wc", "-w", 1, None]}, {"k": {"a": 1}}, {"k": {}}, {"k": [[]]}, {"k": [{}]},
    {"k": {"a": [1]}}, {"k": ["a", ["b"]]}, {"a": 1, "k": {"b": {"c": 2}}}, {1: "not a string key"}, {1: [2]},
    ["top", "level", "list"], [], "a scalar", 3,
])
def test_how_deep_a_value_nests_is_counted_at_every_limit(value) -> None:
    for limit in range(5):
        assert too_deep(value, limit) == (_depth(value) > limit), (value, limit)
