"""`-o FILE` naming a file that holds something other than a run is refused in words that
fit it ("is not empty"), not as "already holds a transcript", and the file is untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli import main


@pytest.mark.parametrize("command", [["run", "support", "--headless", "--approve", "all"], ["gateway", "--upstream", "http://127.0.0.1:9/v1", "--headless", "--approve", "all"]])
def test_out_a_file_that_is_not_a_run(capsys, tmp_path: Path, command):
    notes = tmp_path / "notes.txt"
    notes.write_text("buy milk\n")
    code = main([*command, "-o", str(notes)])
    err = capsys.readouterr().err
    assert code == 2 and f"{notes} is not empty (a run or another file)" in err and "transcript;" not in err
    assert notes.read_text() == "buy milk\n"
