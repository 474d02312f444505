"""`agent-tui bench` as a new user meets it: --workers takes 1 or more (0 or a negative
count used to run with one worker and say "1 workers"), and no column title is cut to an
ellipsis in an 80-column terminal ("tokens/r…")."""

from __future__ import annotations

import pytest

from tui.cli import main


@pytest.mark.parametrize("count", ["0", "-2"])
def test_workers_below_one_is_a_usage_error(capsys, count):
    with pytest.raises(SystemExit) as stop:
        main(["bench", "support", "--no-progress", "--workers", count])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "argument --workers: must be 1 or more" in err


def test_one_worker_is_said_in_the_singular(capsys):
    assert main(["bench", "support", "--no-progress", "--workers", "1"]) == 0
    assert "(1 worker)" in capsys.readouterr().err


def test_no_column_title_is_cut_at_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["bench", "grid", "--grids", "3", "--no-progress", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and "tokens per" in out and "cost per" in out
