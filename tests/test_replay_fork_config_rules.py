"""A fork started from the replay viewer (`f`) believes what `run --fork` believes: a
header without this machine's seal gives way to the scenario's rules and the
configuration's, so a deny kept in the configuration holds in the fork."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import scenarios
from engine.sessions.run import new_run
from engine.stored.replay import Timeline
from tui.replay_fork import _fork_from

DENY = '[[rule]]\ntool = "get_order_status"\neffect = "deny"\n'


def unsealed_run(path: Path) -> None:
    """A finished support run whose header lost its seal (a file from before seals, or edited)."""
    scenario = scenarios.get_named("support")
    run = new_run(scenario, "return-1187", "scripted", out=path, approve="all")
    run.engine.run()
    run.close()
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header.pop("seal", None)
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")


def test_the_viewer_s_fork_keeps_the_configuration_s_deny(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent-tui.toml").write_text(DENY)
    unsealed_run(tmp_path / "run.jsonl")
    run = _fork_from(Timeline.open(tmp_path / "run.jsonl"), 0, "scripted")
    try:
        rules = [(r.tool, r.effect) for r in run.engine.header.rules]
        assert ("get_order_status", "deny") in rules
        run.engine.step()
        denied = [e for e in run.engine.events if e.type == "observation" and e.tool == "get_order_status"]
        assert denied and denied[0].text.startswith("DENIED") and not denied[0].executed
    finally:
        run.close()


def test_an_unreadable_configuration_refuses_the_fork_with_its_message(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent-tui.toml").write_text("[[rule]]\ntool = 3\n")
    unsealed_run(tmp_path / "run.jsonl")
    with pytest.raises(Exception) as raised:
        _fork_from(Timeline.open(tmp_path / "run.jsonl"), 0, "scripted")
    assert "agent-tui.toml" in str(raised.value)
