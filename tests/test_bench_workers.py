"""`agent-tui bench --workers` takes 1 or more: 0 or a negative count is a usage error
(it used to run with one worker and say "1 workers")."""

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
