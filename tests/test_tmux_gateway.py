"""The installed `agent-tui gateway` in a real terminal, an agent in another process.

The cockpit starts in step mode: each agent request waits for `n`. A rule lets
read_file through; the first delete is approved (`a`) and runs in the agent;
the second is rejected with a reason typed in the dialog, never runs, and the
agent finishes with the upstream's answer to the rejection. `q` ends the
gateway with the run's outcome line and exit code.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, call, say
from tests.support.tmux import Tmux, installed_agent_tui, recording_exit

pytestmark = pytest.mark.tmux
AGENT = Path(__file__).parent / "data" / "gateway_agent.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_gateway(tmux: Tmux, tmp_path: Path, flags: str, size: tuple[int, int]) -> Path:  # noqa: F811
    """`agent-tui gateway FLAGS` in a pane of `size`; the file its exit status goes to."""
    command = f"env -u COLUMNS -u LINES TERM=xterm-256color {shlex.quote(installed_agent_tui())} gateway {flags}"
    tmux("new-session", "-d", "-s", "cockpit", "-x", str(size[0]), "-y", str(size[1]), "sleep 600")
    tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
    rc_file = tmp_path / "rc"
    tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, rc_file))
    return rc_file


def test_gateway_cockpit_step_approve_reject(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    (folder / "old.txt").write_text("stale")
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ntool = "read_*"\neffect = "allow"\n')
    out = tmp_path / "gw.jsonl"
    port = _free_port()
    with FakeOpenAI() as fake:
        fake.add(
            call("read_file", path="notes.txt", id="c1"),
            call("delete_file", path="old.txt", id="c2"),
            call("delete_file", path="notes.txt", id="c3"),
            say("Removed old.txt and kept notes.txt."),
        )
        rc_file = _start_gateway(tmux, tmp_path, f"--upstream {fake.url} --listen 127.0.0.1:{port} --rules {shlex.quote(str(rules))} --out {shlex.quote(str(out))}", (120, 40))
        tmux.wait_for("waiting for the agent")

        result = tmp_path / "agent.json"
        agent = subprocess.Popen([sys.executable, str(AGENT), f"http://127.0.0.1:{port}/v1", str(folder), str(result)])
        try:
            tmux.wait_for("request held")
            assert len(fake.requests) == 0, "step mode holds the request until n"
            tmux.keys("n")
            tmux.wait_for("keep me")  # read_file passed by the rule; the agent sent its result
            tmux.wait_for("request held")
            tmux.keys("n")
            tmux.wait_for_all("Approve delete_file", "old.txt")
            tmux.keys("a")
            tmux.wait_for("deleted old.txt")
            tmux.wait_for("request held")
            tmux.keys("n")
            tmux.wait_for_all("Approve delete_file", "notes.txt")
            tmux.keys("r")
            tmux.wait_for("Why?")
            tmux.keys("-l", "notes.txt is still needed")
            tmux.keys("Enter")
            tmux.wait_for("Removed old.txt and kept notes.txt.")
            agent.wait(30)
        finally:
            agent.kill()
        tmux.keys("q")
        assert tmux.wait_for_exit(rc_file) == "0"
        screen = tmux.screen()
        assert "outcome: answer after 4 steps: Removed old.txt and kept notes.txt." in screen
        assert fake.requests[3].messages[-1]["content"] == "REJECTED by the operator: notes.txt is still needed"
    assert json.loads(result.read_text()) == {
        "answer": "Removed old.txt and kept notes.txt.",
        "seen": ["read_file", "delete_file"],
    }
    assert not (folder / "old.txt").exists() and (folder / "notes.txt").exists()
    assert '"run_ended"' in out.read_text().splitlines()[-1]


def test_gateway_cockpit_at_80x24_shows_a_held_call_and_approves_it_with_a(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    """At 80x24 the gateway cockpit is the cockpit: the held call worded in its header, the
    approval dialog, `a` to approve, `?` for help and its key in the footer."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    (folder / "old.txt").write_text("stale")
    out = tmp_path / "gw.jsonl"
    port = _free_port()
    with FakeOpenAI() as fake:
        fake.add(call("delete_file", path="old.txt", id="c1"), say("Removed old.txt."))
        rc_file = _start_gateway(tmux, tmp_path, f"--upstream {fake.url} --listen 127.0.0.1:{port} --out {shlex.quote(str(out))}", (80, 24))
        tmux.wait_for_all("waiting for the agent", "? help")
        tmux.keys("?")
        tmux.wait_for("agent-tui keys")
        tmux.keys("q")
        tmux.wait_until(lambda shown: "agent-tui keys" not in shown, "the help did not close")
        result = tmp_path / "agent.json"
        agent = subprocess.Popen([sys.executable, str(AGENT), f"http://127.0.0.1:{port}/v1", str(folder), str(result)])
        try:
            tmux.wait_for("request held")
            tmux.keys("n")
            screen = tmux.wait_for_all("Approve delete_file", "old.txt", "awaiting approval: delete_file")
            assert "awaiting_approval" not in screen
            tmux.keys("a")
            tmux.wait_for("approved by operator")
            tmux.wait_for("request held")
            tmux.keys("n")
            tmux.wait_for("Removed old.txt.")
            agent.wait(30)
        finally:
            agent.kill()
        tmux.keys("q")
        assert tmux.wait_for_exit(rc_file) == "0"
    assert not (folder / "old.txt").exists() and (folder / "notes.txt").exists()


HELD_AGENT = """
import os, sys
import httpx
open(sys.argv[1], "w").write(str(os.getpid()))
httpx.post(os.environ["OPENAI_BASE_URL"] + "/chat/completions", trust_env=False, timeout=600,
           headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
           json={"model": "m", "messages": [{"role": "user", "content": "Tidy the folder."}]})
"""


def test_sigterm_closes_the_gateway_cockpit_ends_the_run_and_stops_the_agent(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    """SIGTERM to `agent-tui gateway -- AGENT` while the agent's request is held: the terminal is
    given back, the agent it started is stopped (before, SIGTERM killed agent-tui outright: the
    screen stayed, the agent ran on, the run had no end), and the run ends saying why."""
    agent, pid_file, out = tmp_path / "agent.py", tmp_path / "agent.pid", tmp_path / "gw.jsonl"
    agent.write_text(HELD_AGENT)
    with FakeOpenAI() as fake:
        command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))} {shlex.quote(str(pid_file))}"
        rc_file = _start_gateway(tmux, tmp_path, f"--upstream {fake.url} --listen 127.0.0.1:0 --out {shlex.quote(str(out))} -- {command}", (120, 40))
        tmux.wait_for("request held")
        agent_pid = int(pid_file.read_text())
        shell = int(tmux("display-message", "-p", "-t", "cockpit", "#{pane_pid}").strip())
        (gateway_pid,) = map(int, subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split())
        os.kill(gateway_pid, signal.SIGTERM)
        assert tmux.wait_for_exit(rc_file) == "5"  # aborted
    tmux.wait_given_back()
    assert not Path(f"/proc/{agent_pid}").exists(), "the agent was stopped and waited for"
    tmux.wait_for("outcome: aborted after 0 steps: the gateway stopped (SIGTERM)")
    ended = json.loads(out.read_text().splitlines()[-1])
    assert ended["type"] == "run_ended" and ended["reason"] == "the gateway stopped (SIGTERM)"
