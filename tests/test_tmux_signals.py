"""SIGTERM to the cockpit in a real terminal while an approved irreversible call runs.

The process leaves with the aborted exit code, the terminal is given back (tmux
sees the alternate screen off), and the transcript holds the call's UNKNOWN
OUTCOME and the run's end, as `show` prints them.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.tmux import Tmux, recording_exit
from tests.support.tmux import start_command

AGENT_TUI = [sys.executable, "-m", "tui.cli"]

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
    tmux.wait_given_back()
    events = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    decided = [e for e in events if e["type"] == "approval_decided"]
    assert [d["choice"] for d in decided] == ["approve"]
    observation = next(e for e in events if e["type"] == "observation" and e["tool"] == "transfer")
    assert observation["text"].startswith("UNKNOWN OUTCOME") and not observation["executed"]
    assert events[-1]["type"] == "run_ended" and events[-1]["outcome"] == "aborted"
    assert "SIGTERM" in events[-1]["reason"]


AS_THE_SCREEN_OPENS = """
import os, signal, sys
from textual.drivers.linux_driver import LinuxDriver
from tui.cli import main

opened = LinuxDriver.start_application_mode


def then_sigterm(self):
    opened(self)  # the alternate screen on, the terminal in raw mode: the app not mounted yet
    os.kill(os.getpid(), signal.SIGTERM)


LinuxDriver.start_application_mode = then_sigterm
sys.exit(main(sys.argv[1:]))
"""


def _paused_agent(tmp_path: Path) -> tuple[str, Path]:
    """An agent for `gateway -- AGENT` that writes its pid and waits for a signal."""
    script, pid = tmp_path / "paused_agent.py", tmp_path / "agent.pid"
    script.write_text(f"import os, signal\nopen({str(pid)!r}, 'w').write(str(os.getpid()))\nsignal.pause()\n")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}", pid


@pytest.mark.parametrize("what", ["run", "replay", "gateway", "runs"])
def test_sigterm_as_an_app_opens_gives_the_terminal_back(tmux: Tmux, tmp_path: Path, what: str) -> None:  # noqa: F811
    """SIGTERM once the screen is taken but before the app is mounted: each app closes and gives
    the terminal back (before, the signal killed agent-tui there and left the terminal in the
    alternate screen and raw mode); the cockpit's run ends aborted, the gateway's agent is stopped."""
    home, out = tmp_path / "home", tmp_path / "run.jsonl"
    if what in ("replay", "runs"):
        done = subprocess.run([*AGENT_TUI, "run", "support", "--headless", "--approve", "all", "--out", str(out)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "AGENT_TUI_HOME": str(home)})
        assert done.returncode == 0, done.stderr
    args = {
        "run": f"run support --out {shlex.quote(str(out))}",
        "replay": f"replay {shlex.quote(str(out))}",
        "runs": f"runs {shlex.quote(str(tmp_path))} --open",
    }
    if what == "gateway":
        agent, pid_file = _paused_agent(tmp_path)
        fake = FakeOpenAI().__enter__()
        args["gateway"] = f"gateway --upstream {fake.url} --listen 127.0.0.1:0 --out {shlex.quote(str(out))} -- {agent}"
    try:
        command = (f"env -u COLUMNS -u LINES AGENT_TUI_HOME={shlex.quote(str(home))} TERM=xterm-256color "
                   f"{shlex.quote(sys.executable)} -c {shlex.quote(AS_THE_SCREEN_OPENS)} {args[what]}")
        tmux("new-session", "-d", "-s", "cockpit", "-x", "120", "-y", "40", "sleep 600")
        tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
        rc_file = tmp_path / "rc"
        # the pane's shell stays: tmux 3.3a can lose the last line a pane wrote just before it died
        tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, rc_file) + "; sleep 600")
        code = tmux.wait_for_exit(rc_file)
    finally:
        if what == "gateway":
            fake.__exit__(None, None, None)
    tmux.wait_given_back()
    if what == "run":
        assert code == "5", tmux.screen()  # aborted
        ended = json.loads(out.read_text().splitlines()[-1])
        assert ended["type"] == "run_ended" and ended["reason"] == "terminated (SIGTERM)"
    elif what == "gateway":
        assert code == "0", tmux.screen()
        tmux.wait_for("outcome: no request came; no run")
        pid = int(pid_file.read_text())
        assert not Path(f"/proc/{pid}").exists(), "the agent was stopped and waited for"
    else:
        assert code == "143", tmux.screen()
        tmux.wait_for("agent-tui: terminated (SIGTERM)")
