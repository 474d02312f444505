"""`verify` of a run that stopped at an approval nobody answered (a headless run without a
terminal) says "unfinished", as the README promises for every unfinished run whose events
match; it said "all 4 events match" as if the run were whole."""

from __future__ import annotations

from pathlib import Path

from tui.cli import main


def test_a_run_stopped_at_an_approval_verifies_as_unfinished(capsys, tmp_path: Path) -> None:
    path = tmp_path / "pending.jsonl"
    assert main(["run", "support", "--headless", "--out", str(path)]) == 2  # no terminal to ask on
    capsys.readouterr()
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("unfinished: all 4 events match, and the run is unfinished") and "awaiting approval" in out
