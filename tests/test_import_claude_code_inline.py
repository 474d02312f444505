"""A session the real Claude Code 1.0.128 wrote (tests/support/record_claude_code_1_0.py): two Task
sub-agents in one step, their work inline in the main file (`isSidechain: true`, each its own
`parentUuid` chain). Every call, result and answer of the main agent and of each sub-agent is in
the import, each sub-agent's work nested under its own Task call; show, replay and export open it.

The counts are read from the file as Claude Code documents its lines: `tool_use` blocks of
assistant lines, `tool_result` blocks of user lines, a chain followed from its root (`parentUuid`
null, the Task's prompt) by `parentUuid`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from engine.stored.importers import load_runs
from tests.support.cli_agents import shown_everywhere
from tui.cli import main

TRACES = Path(__file__).resolve().parent / "data" / "traces"
SAMPLE = TRACES / "claude_code_1_0_128_inline_task.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


def _blocks(row: dict) -> list[dict]:
    content = row["message"]["content"]
    return content if isinstance(content, list) else []


def _counts(rows: list[dict]) -> tuple[int, int]:
    calls = sum(1 for r in rows if r["type"] == "assistant" for b in _blocks(r) if b["type"] == "tool_use")
    results = sum(1 for r in rows if r["type"] == "user" for b in _blocks(r) if b["type"] == "tool_result")
    return calls, results


def _source() -> tuple[list[dict], dict[int, list[dict]]]:
    """The main agent's lines, and each Task call's sub-agent lines by the call's number in its step (from 1)."""
    rows = [r for r in _rows() if r["type"] in ("user", "assistant")]
    main_rows = [r for r in rows if not r["isSidechain"]]
    tasks = [b for r in main_rows if r["type"] == "assistant" for b in _blocks(r) if b["type"] == "tool_use" and b["name"] == "Task"]
    chain_of: dict[str, int] = {}
    chains: dict[int, list[dict]] = {}
    for row in (r for r in rows if r["isSidechain"]):
        if row["parentUuid"] is None:
            number = next(n for n, task in enumerate(tasks, 1) if task["input"]["prompt"] == row["message"]["content"])
        else:
            number = chain_of[row["parentUuid"]]
        chain_of[row["uuid"]] = number
        chains.setdefault(number, []).append(row)
    return main_rows, chains


def test_the_recorded_session_has_two_task_sub_agents_written_inline():
    main_rows, chains = _source()
    assert {r["version"] for r in _rows()} == {"1.0.128"}
    assert sorted(chains) == [1, 2] and all(_counts(rows)[0] >= 2 for rows in chains.values())


def test_every_call_result_and_answer_of_the_main_agent_and_each_sub_agent_is_kept_under_its_task_call():
    main_rows, chains = _source()
    (run,) = load_runs(SAMPLE)
    decisions = [e for e in run.events if e.type == "decision"]
    observations = [e for e in run.events if e.type == "observation"]
    assert (sum(len(d.actions) for d in decisions), len(observations)) == _counts(main_rows)
    assert run.events[-1].type == "run_ended" and run.events[-1].answer == _blocks(main_rows[-1])[0]["text"]

    (task_step,) = [d for d in decisions if any(a.tool == "Task" for a in d.actions)]
    nested = [e for e in run.events if e.type == "note" and e.kind == "subagent"]
    assert {n.step for n in nested} == {task_step.step}
    assert not [e for e in run.events if e.type == "note" and e.kind == "unrecognised"]
    for number, rows in chains.items():
        description = task_step.actions[number - 1].args["description"]
        label = f"Task {number} ({description}): "
        lines = [line[len(label):] for n in nested for line in n.text.split("\n") if line.startswith(label)]
        kinds = Counter(line.split(":", 1)[0] for line in lines)
        assert (kinds["action"], kinds["observe"]) == _counts(rows)
        answer = _blocks(rows[-1])[-1]["text"]
        assert lines[0] == f"user: {rows[0]['message']['content']}" and lines[-1] == f"says: {answer}"
    assert sum(len(rows) for rows in chains.values()) == len(nested)


def test_the_import_opens_in_show_replay_and_export(tmp_path, capsys):
    out = tmp_path / "session.jsonl"
    assert main(["import", str(SAMPLE), "-o", str(out)]) == 0
    capsys.readouterr()
    printed = shown_everywhere([out])
    main_rows, chains = _source()
    for rows in chains.values():
        for row in rows:
            for block in _blocks(row):
                if block["type"] == "tool_use":
                    assert f"{block['name']}(" in printed
    assert _blocks(main_rows[-1])[0]["text"] in printed
