"""codex-acp 0.16.0 (Codex under it, sandboxed by bubblewrap) as an ACP run against a loopback
fake Responses model: its command waits for its permission request; a refusal ends its turn,
and the reason reaches the model in the next prompt."""

from __future__ import annotations

import json

from tests.support.acp_harness import codex_agent, drive, open_run
from tests.support.fake_responses import Turn

RUN_SHELL = [Turn(text="I'll run it.", calls=[("shell_command", {"command": "echo hi > made.txt"})]), Turn(text="Done.")]


def test_a_refused_command_never_runs_and_the_model_reads_the_reason():
    with codex_agent(RUN_SHELL) as agent:
        run = open_run(agent, "Make made.txt")
        answers = iter([lambda engine: engine.reject("use printf instead"), lambda engine: engine.abort("enough")])
        drive(run, lambda engine: next(answers)(engine))
        assert not (agent.work / "made.txt").exists()
        assert "use printf instead" in json.dumps(agent.fake.requests)
