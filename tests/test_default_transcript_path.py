"""Runs saved without -o get a new file each, also two in one second of one process
(a fork from the viewer, a gateway's second conversation): never a name already taken."""

from __future__ import annotations

import scenarios
from engine.sessions.run import default_transcript_path, new_run


def test_a_name_taken_in_the_same_second_gets_a_number(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path))
    first = default_transcript_path("support", "return-1187", 1_800_000_000.0)
    assert first.parent == tmp_path / "runs"
    first.parent.mkdir(parents=True)
    first.write_text("taken\n")
    second = default_transcript_path("support", "return-1187", 1_800_000_000.0)
    assert second != first and second.name == first.name.replace(".jsonl", "-2.jsonl")
    second.write_text("taken\n")
    third = default_transcript_path("support", "return-1187", 1_800_000_000.0)
    assert third.name == first.name.replace(".jsonl", "-3.jsonl")


def test_two_runs_started_in_one_second_both_save(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path))
    runs = [new_run(scenarios.get("calculator"), None, None, approve="all", clock=lambda: 1_800_000_000.0) for _ in range(2)]
    for run in runs:
        run.engine.run()
        run.close()
    paths = [run.path for run in runs]
    assert paths[0] != paths[1]
    assert all(p.read_text().startswith('{"type":"header"') for p in paths)
