"""verify: a re-run of scripted policies matches its file, and a changed file is caught at the right event."""

from __future__ import annotations

import json

import pytest

import scenarios
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript
from engine.sessions.verify import VerifyError, verify_run

CASES = [
    (name, task, policy, approve)
    for name in ("support", "library", "calculator")
    for policy in scenarios.get(name).policies
    for task in scenarios.get(name).tasks
    for approve in ("all", "none")
]


@pytest.mark.parametrize("name, task, policy, approve", CASES)
def test_every_builtin_run_verifies(tmp_path, name, task, policy, approve):
    path = tmp_path / "run.jsonl"
    run = new_run(scenarios.get(name), task, policy, out=path, approve=approve)
    run.engine.run()
    run.close()
    result = verify_run(scenarios.get(name), read_transcript(path))
    assert result.match, result.message


def test_operator_answers_are_replayed(tmp_path):
    path = tmp_path / "run.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    run.engine.run()
    run.engine.modify({"order_id": "1187"})
    run.engine.run()
    run.close()
    assert verify_run(scenarios.get("support"), read_transcript(path)).match


def test_a_changed_observation_is_named(tmp_path, capsys):
    from tui.cli import main

    path = tmp_path / "run.jsonl"
    run = new_run(scenarios.get("library"), None, "good", out=path)
    run.engine.run()
    run.close()
    lines = path.read_text().splitlines()
    fourth = [i for i, line in enumerate(lines) if i and '"tool_started"' not in line][3]
    event = json.loads(lines[fourth])
    event["text"] = "7"
    lines[fourth] = json.dumps(event)
    path.write_text("\n".join(lines) + "\n")
    result = verify_run(scenarios.get("library"), read_transcript(path))
    assert not result.match and result.index == 3 and result.expected.text == "7" and result.got.text == "3"
    assert main(["verify", str(path)]) == 3
    out = capsys.readouterr().out
    assert out.startswith(f"differs: event 4 differs (observation; text) ({path}:{fourth + 1})")  # the file's line: tool_started lines count


def test_a_shorter_file_and_a_non_scripted_run(tmp_path, capsys):
    from tui.cli import main

    path = tmp_path / "run.jsonl"
    run = new_run(scenarios.get("library"), None, "good", out=path)
    run.engine.step()
    run.close()
    result = verify_run(scenarios.get("library"), read_transcript(path))
    assert result.match and result.unfinished and "unfinished" in result.message and "goes on" in result.message
    assert main(["verify", str(path)]) == 0
    assert capsys.readouterr().out.startswith("unfinished: ")
    capsys.readouterr()
    human = tmp_path / "human.jsonl"
    run = new_run(scenarios.get("library"), None, "human", out=human)
    run.close()
    with pytest.raises(VerifyError, match="only runs of scripted policies"):
        verify_run(scenarios.get("library"), read_transcript(human))
    assert main(["verify", str(human)]) == 2


def test_a_long_verify_keeps_what_it_read_out_of_the_collectors_full_passes(tmp_path):
    """The saved events and the re-run's growing history are frozen out of the
    collector's passes while the run is re-run (each pass walked all of them: a
    third of verifying 100,000 events), and the heap is handed back at the end."""
    import gc
    from pathlib import Path

    from engine import Decision, Param, Scenario, ScriptedPolicy, Task, Tool
    from engine.core.events import Budget

    frozen: list[int] = []

    def lookup(key: str) -> str:
        frozen.append(gc.get_freeze_count())
        return f"value of {key}"

    class World:
        tools = [Tool("lookup", "Look a key up.", (Param("key"),), lookup)]

    scenario = Scenario(
        name="freezing", description="", tasks={"t": Task("t", "Look up every item.")},
        policies={"p": lambda w, t: ScriptedPolicy("p", lambda view: Decision.act("look", "lookup", key=str(view.step)))},
        make_world=lambda task, options: World(), budget=Budget(max_steps=300), repetition_threshold=None,
    )
    run = new_run(scenario, "t", "p", out=tmp_path / "run.jsonl")
    run.engine.run()
    run.close()
    frozen.clear()
    assert gc.get_freeze_count() == 0
    result = verify_run(scenario, read_transcript(Path(tmp_path / "run.jsonl")))
    assert result.match, result.message
    assert len(frozen) == 300 and min(frozen) > 0  # frozen from the first step on
    assert gc.get_freeze_count() == 0
