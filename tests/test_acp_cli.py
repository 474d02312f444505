"""`agent-tui run --acp COMMAND` and `--agent NAME` ([[agent]] in the configuration): an ACP run
headless, opened afterwards by show, replay --headless and export; resume refused in words."""

from __future__ import annotations

import json

import pytest

from tests.support.acp_harness import gemini_agent
from tests.support.fake_gemini import Turn
from tui.cli import main

WRITE_NOTE = [Turn(text="I'll write the note.", calls=[("write_file", {"file_path": "note.txt", "content": "hello\n"})]),
              Turn(text="Done.")]


def _env(monkeypatch, agent):
    for key, value in agent.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(agent.work)


def test_an_acp_run_headless_then_show_replay_and_export_open_it(monkeypatch, capsys, tmp_path):
    out = tmp_path / "acp.jsonl"
    with gemini_agent(WRITE_NOTE) as agent:
        _env(monkeypatch, agent)
        command = " ".join(agent.command)
        code = main(["run", "--acp", command, "-t", "Write hello to note.txt", "--headless", "--approve", "all", "-o", str(out)])
        printed = capsys.readouterr().out
        assert code == 0, printed
        assert (agent.work / "note.txt").read_text() == "hello\n"
    assert "fs.write_text_file" in printed and "Done." in printed
    for argv in (["show", str(out)], ["replay", str(out), "--headless"], ["export", str(out)]):
        assert main(argv) == 0, argv
        shown = capsys.readouterr().out
        assert "fs.write_text_file" in shown and "Done." in shown, argv
    code = main(["run", "--resume", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and "the agent's live session cannot be restored" in err


def test_a_configured_agent_runs_by_name(monkeypatch, capsys, tmp_path):
    out = tmp_path / "named.jsonl"
    with gemini_agent(WRITE_NOTE) as agent:
        _env(monkeypatch, agent)
        (agent.work / "agent-tui.toml").write_text(
            f'[[agent]]\nname = "gem"\ncommand = {json.dumps(agent.command[0])}\nargs = {json.dumps(agent.command[1:])}\n')
        code = main(["run", "--agent", "gem", "-t", "Write hello to note.txt", "--headless", "--approve", "none", "-o", str(out)])
        printed = capsys.readouterr().out
        assert code == 0, printed
        assert not (agent.work / "note.txt").exists()
    header = json.loads(out.read_text().splitlines()[0])
    assert header["policy"] == "gem" and header["scenario"] == "acp"


@pytest.mark.parametrize("argv, words", [
    (["run", "--acp", "gemini --acp"], "needs a task"),
    (["run", "support", "--acp", "gemini --acp", "-t", "x"], "scenario does not go with --acp"),
    (["run", "--acp", "no-such-agent-program --acp", "-t", "x"], "not found: no-such-agent-program"),
    (["run", "--acp", "'unclosed", "-t", "x"], "cannot be read"),
    (["run", "--agent", "nobody", "-t", "x"], "no [[agent]] named 'nobody'"),
    (["run", "--acp", "a", "--agent", "b", "-t", "x"], "not both"),
    (["run", "--acp", " ", "-t", "x"], "--acp needs the agent's command line"),
])
def test_bad_acp_flags_get_one_line(monkeypatch, capsys, tmp_path, argv, words):
    monkeypatch.chdir(tmp_path)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and words in err.strip().splitlines()[-1] and "Traceback" not in err


def test_an_empty_agent_name_is_refused_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--agent", "", "-t", "x"])
    assert stop.value.code == 2 and "argument --agent: expected a name, got an empty one" in capsys.readouterr().err


def test_fork_and_verify_of_an_acp_run_say_why_not(monkeypatch, capsys, tmp_path):
    import sys
    from pathlib import Path

    fake = Path(__file__).parent / "support" / "fake_acp_agent.py"
    out = tmp_path / "run.jsonl"
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--acp", f"{sys.executable} {fake} terminal", "-t", "make it", "--headless", "--approve", "all", "-o", str(out)]) == 0
    assert "$ sh -c 'echo made > made.txt; echo done'" in capsys.readouterr().out
    for argv in (["run", "--fork", str(out), "--at", "1"], ["verify", str(out)]):
        code = main(argv)
        assert code == 2 and "cannot be resumed, forked or verified" in capsys.readouterr().err, argv
