"""A scenario argument that names an existing folder or a file that is not Python says
what the path is, instead of "no scenario 'NAME'" (a bare name was only looked up among
the installed scenarios)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli import main


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.mkdir(), "world: is a folder, not a scenario file"),
        (lambda p: p.write_bytes(b"\x7fELF\x00\x01"), "world: not a scenario file (a .py file defining SCENARIO"),
    ],
)
def test_an_existing_path_that_is_no_scenario_is_named(capsys, monkeypatch, tmp_path: Path, make, said):
    monkeypatch.chdir(tmp_path)
    make(tmp_path / "world")
    code = main(["run", "world", "--headless"])
    err = capsys.readouterr().err
    assert code == 2 and said in err and "no scenario" not in err


def test_a_name_that_is_no_path_lists_the_scenarios(capsys, monkeypatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    code = main(["run", "world", "--headless"])
    assert code == 2 and "no scenario 'world' (scenarios: support," in capsys.readouterr().err
