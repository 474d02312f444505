"""An empty file or name argument is a usage error naming the flag, never `.` or a fresh run.

`Path("")` is the current folder, and an empty `--resume` or `--policy` used to be read
as no flag at all: `run --resume ''` started a new run in the cockpit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli import main

SAVED = "saved.jsonl"


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["run", "--resume", ""], "--resume"),
        (["run", "--fork", "", "--at", "1", "--headless"], "--fork"),
        (["run", "--headless", "--rules", ""], "--rules"),
        (["run", "--headless", "--config", " "], "--config"),
        (["run", "--headless", "-o", ""], "-o/--out"),
        (["run", "--headless", "--policy", ""], "--policy"),
        (["run", "", "--headless"], "scenario"),
        (["config", "--config", ""], "--config"),
        (["show", ""], "file"),
        (["replay", "", "--headless"], "file"),
        (["export", ""], "file"),
        (["export", SAVED, "-o", ""], "-o/--out"),
        (["import", ""], "file"),
        (["import", SAVED, "-o", ""], "-o/--out"),
        (["verify", ""], "file"),
        (["verify", SAVED, "--scenario", ""], "--scenario"),
        (["gateway", "--upstream", "http://127.0.0.1:9/v1", "--rules", ""], "--rules"),
        (["gateway", "--upstream", "http://127.0.0.1:9/v1", "-o", ""], "-o/--out"),
    ],
)
def test_an_empty_argument_is_refused_naming_it(capsys, monkeypatch, tmp_path: Path, _isolated_home, argv, flag):
    monkeypatch.chdir(tmp_path)
    (tmp_path / SAVED).write_text("{}\n")
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert f"argument {flag}: expected a " in err and "got an empty one" in err
    assert "Traceback" not in err
    assert not (_isolated_home / "runs").exists() or not list((_isolated_home / "runs").iterdir())  # nothing ran
