"""An assistant message of a chat log written in the trace format (Thought: / Action: / Observation:
/ Final Answer: lines) keeps every call and result it holds; what maps to neither is kept as an
unrecognised note, which the import's warning counts."""

from __future__ import annotations

import json

from engine.stored.importers import runs_from_bytes
from engine.stored.transcript import Transcript


def _run(*assistant: str, after: tuple[str, ...] = ()) -> Transcript:
    """The run of a chat log: a task, the assistant messages, then user messages."""
    messages = [{"role": "user", "content": "Find X"}]
    messages += [{"role": "assistant", "content": content} for content in assistant]
    messages += [{"role": "user", "content": content} for content in after]
    (run,) = runs_from_bytes("chat.json", json.dumps(messages, indent=1).encode())
    return run


def _steps(run: Transcript) -> list[tuple[int, str, list[tuple[str, dict]], list[tuple[int, str]], str | None]]:
    """(step, thought, [calls], [(call, result)], answer) per decision."""
    steps = []
    for e in run.events:
        if e.type == "decision":
            steps.append((e.step, e.thought, [(a.tool, a.args) for a in e.actions], [], e.answer))
        elif e.type == "observation":
            steps[-1][3].append((e.index, e.text))
    return steps


def _notes(run: Transcript, kind: str) -> list[str]:
    return [e.text for e in run.events if e.type == "note" and e.kind == kind]


def test_each_action_of_a_message_is_a_call_and_the_observations_after_it_their_results():
    run = _run("Thought: two searches\nAction: search[alpha]\nAction: search[beta]",
               after=("Observation: a", "Observation: b"))
    assert _steps(run) == [(1, "two searches", [("search", {"input": "alpha"}), ("search", {"input": "beta"})],
                            [(0, "a"), (1, "b")], None)]
    assert _notes(run, "user") == [] and run.warnings == []


def test_an_action_before_the_final_answer_is_a_call_of_the_answering_step():
    run = _run("Thought: done\nAction: lookup[gamma]\nFinal Answer: 42")
    assert _steps(run) == [(1, "done", [("lookup", {"input": "gamma"})], [], "42")]
    assert run.events[-1].type == "run_ended" and run.events[-1].answer == "42"
    assert run.warnings == []


def test_observations_written_in_the_message_are_the_results_of_its_calls_in_order():
    run = _run("Thought: look\nAction: search[alpha]\nAction: lookup\nAction Input: {\"key\": 1}\n"
               "Observation: first\nsecond line\nThought: and then\nObservation: found",
               "Final Answer: 42")
    assert _steps(run) == [
        (1, "look\nand then", [("search", {"input": "alpha"}), ("lookup", {"key": 1})],
         [(0, "first\nsecond line"), (1, "found")], None),
        (2, "", [], [], "42"),
    ]
    assert run.warnings == []


def test_what_a_message_with_a_call_holds_that_maps_to_no_call_or_result_is_kept_and_counted():
    run = _run("Question: Find X\nThought: t\nAction: search[alpha]\nnot part of the call\n"
               "Observation: a\nObservation: b\nAction: what should I do?\nAction Input: stray")
    assert _steps(run) == [(1, "t", [("search", {"input": "alpha"})], [(0, "a")], None)]
    assert _notes(run, "unrecognised") == [
        "a 'Question:' line in an assistant message: Find X",
        "text after an Action: line: not part of the call",
        "an Observation: with no call waiting for it: b",
        "an Action: that names no tool call: what should I do?",
        "an Action Input: that follows no call without arguments: stray",
    ]
    (warning,) = run.warnings
    assert "5 parts could not be mapped and are kept as 'unrecognised' notes" in warning


def test_a_message_whose_only_action_names_no_tool_is_what_the_assistant_said():
    run = _run("Thought: t\nAction: ask the user what they mean", after=("X is a letter",))
    assert _steps(run) == [(1, "Thought: t\nAction: ask the user what they mean", [], [], None)]
    assert _notes(run, "user") == ["X is a letter"] and _notes(run, "unrecognised") == []
    assert run.warnings == []
