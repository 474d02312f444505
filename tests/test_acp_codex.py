"""codex-acp 0.16.0 (Codex under it, sandboxed by bubblewrap) as an ACP run against a loopback
fake Responses model: its command waits for its permission request; a refusal ends its turn,
and the reason reaches the model in the next prompt."""

from __future__ import annotations

import json
import subprocess
import sys

from engine.acp.run import start_agent
from tests.support.acp_harness import ROOT, codex_agent, drive, open_run
from tests.support.mcp_helpers import session_members, wait_session_gone
from tests.support.fake_responses import Turn

RUN_SHELL = [Turn(text="I'll run it.", calls=[("shell_command", {"command": "echo hi > made.txt"})]), Turn(text="Done.")]


def test_a_refused_command_never_runs_and_the_model_reads_the_reason():
    with codex_agent(RUN_SHELL) as agent:
        run = open_run(agent, "Make made.txt")
        answers = iter([lambda engine: engine.reject("use printf instead"), lambda engine: engine.abort("enough")])
        drive(run, lambda engine: next(answers)(engine))
        assert not (agent.work / "made.txt").exists()
        assert "use printf instead" in json.dumps(agent.fake.requests)


def test_closing_the_agent_stops_every_process_it_started():
    """codex-acp's launcher (node) runs the binary that does the work, which does not exit when its
    stdin ends: closing the agent stops it too, not only the launcher."""
    with codex_agent(RUN_SHELL) as agent:
        process = start_agent(agent.command, agent.work, env=agent.env, log_path=agent.work.parent / "agent.log")
        guard = process.guard_pid
        try:
            assert guard is not None and any("codex-acp-linux" in line for line in session_members(guard)), session_members(guard or 0)
        finally:
            process.close()
        assert wait_session_gone(guard) == []


def test_an_agent_tui_killed_outright_leaves_none_of_the_agents_processes():
    """SIGKILL of agent-tui: the guard is told (its parent-death signal) and stops the agent's whole group."""
    with codex_agent(RUN_SHELL) as agent:
        program = (
            "import json, sys, time\n"
            "from pathlib import Path\n"
            "from engine.acp.run import start_agent\n"
            "command, work, env, log = json.loads(sys.argv[1])\n"
            "process = start_agent(command, work, env=env, log_path=Path(log))\n"
            "print(process.guard_pid, flush=True)\n"
            "time.sleep(600)\n"
        )
        arguments = json.dumps([agent.command, str(agent.work), agent.env, str(agent.work.parent / "agent.log")])
        holder = subprocess.Popen([sys.executable, "-c", program, arguments], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            guard = int(holder.stdout.readline())
            assert any("codex-acp-linux" in line for line in session_members(guard)), session_members(guard)
        finally:
            holder.kill()
            holder.wait()
            holder.stdout.close()
        assert wait_session_gone(guard) == []
