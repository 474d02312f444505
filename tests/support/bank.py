"""A bank world with a transfer to run, interrupt and tamper with: stored runs as attackers write them."""

from __future__ import annotations

import json
from pathlib import Path

from tui.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"


BANK = DATA / "bank_world.py"


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def rewrite(path: Path, edit) -> None:
    """Apply `edit(list_of_objects)` to a transcript's lines."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def bank_run(capsys, tmp_path: Path, *extra: str) -> tuple[Path, Path]:
    """A finished bank run (one transfer, approved by --approve all): its transcript and tool log."""
    out, log = tmp_path / "bank.jsonl", tmp_path / "transfers.log"
    code, _, err = cli(capsys, "run", BANK, "--headless", "--approve", "all", "--out", out, "--option", f"log={log}", *extra)
    assert code == 0, err
    assert log.read_text() == "10\n"
    return out, log


def unfinished_bank_run(capsys, tmp_path: Path) -> tuple[Path, Path]:
    """A bank run cut after step 1 (the balance), as a crash leaves it: no transfer yet, no end."""
    out, log = bank_run(capsys, tmp_path)
    rewrite(out, lambda rows: rows.__setitem__(slice(4, None), []))
    log.write_text("")
    return out, log
