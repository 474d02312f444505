"""SWE-agent `.traj` shapes the real tool writes beyond the plain history: a run whose history holds
no assistant turn (its task must survive), the trajectory's `query`, the `replay_config`'s problem
statement, Anthropic `thinking_blocks`, a retry loop's `attempts` and a structured submission."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from engine.stored.importers import runs_from_bytes

TRACES = Path(__file__).resolve().parent / "data" / "traces"
TASK = "Fix the bug in calc.py: dividing by zero raises"


def _trajectory() -> list[dict]:
    return [{"action": "ls", "observation": "calc.py", "response": "Let me look.\n```\nls\n```", "thought": "Let me look.",
             "execution_time": 0.1, "state": {}, "extra_info": {}}]


def _import(data: dict) -> list:
    return runs_from_bytes("run.traj", json.dumps(data, indent=2).encode())


def test_a_history_without_assistant_turns_keeps_its_task_and_system_prompt():
    data = {"environment": "main", "history": [
        {"role": "system", "content": "You are SWE-agent.", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": TASK, "agent": "main", "message_type": "observation"},
    ], "trajectory": _trajectory(), "info": {"exit_status": "exit_cost"}}
    (run,) = _import(data)
    assert run.header.task_text == TASK
    assert run.header.options["system_prompt"] == "You are SWE-agent."
    assert [e.type for e in run.events] == ["decision", "observation", "run_ended"]
    assert run.events[-1].reason == "exit_cost"


def test_without_a_history_the_first_steps_query_gives_the_task():
    trajectory = _trajectory()
    trajectory[0]["query"] = [{"role": "system", "content": "You are SWE-agent."}, {"role": "user", "content": TASK}]
    (run,) = _import({"trajectory": trajectory, "info": {}})
    assert run.header.task_text == TASK and run.header.options["system_prompt"] == "You are SWE-agent."


def test_without_a_history_or_query_the_replay_configs_problem_statement_is_the_task():
    config = {"problem_statement": {"text": TASK, "id": "calc-1", "type": "text"}, "agent": {}}
    (run,) = _import({"trajectory": _trajectory(), "replay_config": json.dumps(config)})
    assert run.header.task_text == TASK


def test_thinking_blocks_are_part_of_the_thought():
    data = json.loads((TRACES / "swe_agent_test_repo.traj").read_text())
    first = next(m for m in data["history"] if m["role"] == "assistant")
    first["thinking_blocks"] = [{"type": "thinking", "thinking": "The issue is in missing_colon.", "signature": "sig"},
                                {"type": "redacted_thinking", "data": "xyz"}]
    (run,) = _import(data)
    thought = next(e for e in run.events if e.type == "decision").thought
    assert thought.startswith("The issue is in missing_colon.\n(redacted thinking)\n")
    assert first["thought"].strip() in thought


def test_a_retry_loop_file_is_one_run_per_attempt():
    attempt = json.loads((TRACES / "swe_agent_test_repo.traj").read_text())
    second = copy.deepcopy(attempt)
    second["info"] = {"exit_status": "exit_format", "submission": None}
    chosen = {"attempts": [attempt, second], **copy.deepcopy(attempt)}
    chosen["info"]["best_attempt_idx"] = 0
    runs = _import(chosen)
    assert len(runs) == 2
    assert [r.header.options["attempt"] for r in runs] == [1, 2]
    assert all(r.header.options["best_attempt"] == 1 for r in runs)
    assert runs[0].events[-1].outcome == "answer" and runs[1].events[-1].outcome == "stopped"
    only_attempts = _import({"attempts": [attempt, second]})  # no attempt chosen: nothing beside them
    assert len(only_attempts) == 2 and only_attempts[0].header.task_text.startswith("We're currently solving")


def test_a_structured_submission_is_the_answer():
    data = json.loads((TRACES / "swe_agent_test_repo.traj").read_text())
    data["info"]["submission"] = {"patch": "diff --git a/x b/x"}
    (run,) = _import(data)
    assert run.events[-1].outcome == "answer" and run.events[-1].answer == "diff --git a/x b/x"


def test_a_trajectory_action_written_as_a_list_or_an_object_is_kept():
    """An object that is only a command line or a named tool is a call with its observation; a list,
    or an object holding more, is no call: it is kept in an unrecognised note with its observation,
    and the warning counts it."""
    trajectory = [
        {"thought": "look", "action": "ls -la", "observation": "a b"},
        {"thought": "edit", "action": ["edit 1:2", "foo"], "observation": "edited"},
        {"thought": "cat", "action": {"cmd": "cat a"}, "observation": "contents"},
        {"thought": "run", "action": {"name": "bash", "arguments": {"command": "make"}}, "observation": "built"},
        {"thought": "wait", "action": {"cmd": "sleep 9", "timeout": 5}, "observation": ""},
    ]
    (run,) = _import({"history": [], "trajectory": trajectory, "info": {}})
    calls = [(a.tool, a.args) for e in run.events if e.type == "decision" for a in e.actions]
    assert calls == [("ls", {"input": "-la"}), ("cat", {"input": "a"}), ("bash", {"command": "make"})]
    assert [(e.tool, e.text) for e in run.events if e.type == "observation"] == [
        ("ls", "a b"), ("cat", "contents"), ("bash", "built")]
    notes = [(e.step, e.source, e.text) for e in run.events if e.type == "note" and e.kind == "unrecognised"]
    assert notes == [(2, "trajectory 2", 'an action that cannot be read as a call: ["edit 1:2", "foo"]\nits observation: edited'),
                     (5, "trajectory 5", 'an action that cannot be read as a call: {"cmd": "sleep 9", "timeout": 5}')]
    assert "2 × an action that cannot be read as a call (trajectory 2, trajectory 5)" in run.warnings[0]


def test_a_history_action_written_as_an_object_is_a_call_or_kept():
    """A history turn without tool calls: its action object is the call its observation answers,
    or, when it cannot be read as one, an unrecognised note the warning counts."""
    history = [
        {"role": "user", "content": TASK, "agent": "main"},
        {"role": "assistant", "content": "look", "thought": "look", "action": {"command": "ls"}, "agent": "main"},
        {"role": "user", "content": "calc.py", "agent": "main"},
        {"role": "assistant", "content": "edit", "thought": "edit", "action": ["edit 1:2", "x"], "agent": "main"},
        {"role": "user", "content": "edited", "agent": "main"},
    ]
    (run,) = _import({"history": history, "trajectory": []})
    assert [(a.tool, a.args) for e in run.events if e.type == "decision" for a in e.actions] == [("ls", {})]
    assert [(e.tool, e.text) for e in run.events if e.type == "observation"] == [("ls", "calc.py")]
    notes = [(e.kind, e.source, e.text) for e in run.events if e.type == "note"]
    assert notes == [("unrecognised", "history 4", 'an action that cannot be read as a call: ["edit 1:2", "x"]'),
                     ("user", "history 5", "edited")]
    assert "1 × an action that cannot be read as a call (history 4)" in run.warnings[0]


def test_a_history_action_stands_for_tool_calls_none_of_which_can_be_read():
    """The action repeats the turn's tool calls; when no call can be read (its function lost), the
    action is the call, and the unreadable call is kept as an unrecognised note."""
    history = [
        {"role": "user", "content": TASK, "agent": "main"},
        {"role": "assistant", "content": "find it", "thought": "find it", "action": "find_file calc.py", "agent": "main",
         "tool_calls": [{"id": "c1", "type": "function", "function": None}]},
        {"role": "assistant", "content": "open it", "thought": "open it", "action": "open calc.py", "agent": "main",
         "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "open", "arguments": "{\"path\": \"calc.py\"}"}}]},
    ]
    (run,) = _import({"history": history, "trajectory": []})
    calls = [(a.tool, a.args) for e in run.events if e.type == "decision" for a in e.actions]
    assert calls == [("find_file", {"input": "calc.py"}), ("open", {"path": "calc.py"})]
    notes = [(e.source, e.text) for e in run.events if e.type == "note"]
    assert notes == [("history 2", 'a tool call without a function name: {"id": "c1", "type": "function", "function": null}')]
