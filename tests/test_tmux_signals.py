"""SIGTERM to the cockpit in a real terminal while an approved irreversible call runs.

The process leaves with the aborted exit code, the terminal is given back (tmux
sees the alternate screen off), and the transcript holds the call's UNKNOWN
OUTCOME and the run's end, as `show` prints them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.tmux import Tmux
from tests.support.tmux import start_command

pytestmark = pytest.mark.tmux

BANK = Path(__file__).parent / "data" / "bank_world.py"


def agent_tui_pid(tmux: Tmux) -> int:  # noqa: F811
    """The agent-tui process under the pane's shell."""
    shell = int(tmux("display-message", "-p", "-t", "cockpit", "#{pane_pid}").strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("no agent-tui process under the pane's shell")


def test_sigterm_during_an_approved_transfer_restores_the_terminal_and_records_the_unknown(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    out, log = tmp_path / "bank.jsonl", tmp_path / "transfers.log"
    rc_file = start_command(tmux, tmp_path, f"run {BANK} --out {out} --option log={log} --option slow=60")
    tmux.wait_for("n step")
    tmux.keys("n")
    tmux.wait_for("balance 100")
    tmux.keys("n")
    tmux.wait_for("Approve transfer")
    tmux.keys("a")
    deadline = time.monotonic() + 30
    while not Path(f"{log}.running").exists():
        assert time.monotonic() < deadline, f"the transfer never started; the screen:\n{tmux.screen()}"
        time.sleep(0.05)
    os.kill(agent_tui_pid(tmux), signal.SIGTERM)

    assert tmux.wait_for_exit(rc_file) == "5"  # aborted
    assert tmux("display-message", "-p", "-t", "cockpit", "#{alternate_on}").strip() == "0", "the terminal is given back"
    events = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    decided = [e for e in events if e["type"] == "approval_decided"]
    assert [d["choice"] for d in decided] == ["approve"]
    observation = next(e for e in events if e["type"] == "observation" and e["tool"] == "transfer")
    assert observation["text"].startswith("UNKNOWN OUTCOME") and not observation["executed"]
    assert events[-1]["type"] == "run_ended" and events[-1]["outcome"] == "aborted"
    assert "SIGTERM" in events[-1]["reason"]
