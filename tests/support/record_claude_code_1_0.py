"""Record a Claude Code 1.0.x session whose two Task sub-agents are written inline (`isSidechain: true`).

    npm install --no-audit --no-fund --prefix /tmp/cc10 @anthropic-ai/claude-code@1.0.128
    .venv/bin/python tests/support/record_claude_code_1_0.py /tmp/cc10/node_modules/.bin/claude OUT.jsonl

Not run by the test suite (.ci/run installs only the pinned 2.x agents). Claude Code
runs `-p TASK` in a fresh home folder with only loopback traffic (the settings of
tests/support/cli_agents.py's `claude_env`), against tests/support/fake_anthropic.py scripted
per conversation, told apart by the first user message:

- the main agent: two `Task` calls in one step (sub-agents A and B), then the answer;
- sub-agent A: `Bash ls`, `Glob *.txt`, `Read notes.txt`, then its answer;
- sub-agent B: `Write done.txt`, `Bash cat done.txt`, then its answer.

Each turn is chosen by how many tool results its conversation holds. The session
file is copied to OUT; the dummy key must not be in it (checked), nor the sub-agents'
work missing (B's file must exist).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support import cli_agents  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, Turn, _tool_results  # noqa: E402

KEY = "sk-ant-dummy-recording-key"
TASK = "Survey this folder with two helpers, then sum up."
PROMPT_A = "Helper A: list this folder and read notes.txt, then say what it holds."
PROMPT_B = "Helper B: write done to done.txt, check it with cat, then say so."


def scripts(work: Path) -> dict[str, list[Turn]]:
    """Each conversation's turns, by the prompt that opens it ("" the main agent's)."""
    task = {"subagent_type": "general-purpose"}
    return {
        "": [
            Turn(text="I'll send two helpers.", tool_uses=[
                ("Task", {"description": "Survey the folder", "prompt": PROMPT_A, **task}),
                ("Task", {"description": "Write a marker", "prompt": PROMPT_B, **task}),
            ]),
            Turn(text="The folder holds notes.txt (two lines) and now done.txt (done)."),
        ],
        PROMPT_A: [
            Turn(text="Listing first.", tool_uses=[("Bash", {"command": "ls -a", "description": "List the folder"})]),
            Turn(tool_uses=[("Glob", {"pattern": "*.txt", "path": str(work)})]),
            Turn(tool_uses=[("Read", {"file_path": str(work / "notes.txt")})]),
            Turn(text="notes.txt holds two lines: alpha and beta."),
        ],
        PROMPT_B: [
            Turn(tool_uses=[("Write", {"file_path": str(work / "done.txt"), "content": "done\n"})]),
            Turn(tool_uses=[("Bash", {"command": "cat done.txt", "description": "Show done.txt"})]),
            Turn(text="done.txt holds done."),
        ],
    }


def _opening(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return json.dumps(messages[0].get("content")) if messages else ""


class ByConversation(FakeAnthropic):
    """The fake model answering each conversation (main or a sub-agent) from its own script."""

    def __init__(self, by_prompt: dict[str, list[Turn]]) -> None:
        super().__init__(by_prompt[""])
        self.by_prompt = by_prompt

    def turn(self, body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            return super().turn(body)
        opening = _opening(body)
        turns = next((t for prompt, t in self.by_prompt.items() if prompt and prompt in opening), self.turns)
        return turns[min(_tool_results(body), len(turns) - 1)]


def record(binary: str, home: Path, work: Path) -> Path:
    (work / "notes.txt").write_text("alpha\nbeta\n")
    with ByConversation(scripts(work)) as fake:
        env = cli_agents.claude_env(fake.url, KEY)
        done = cli_agents.run([binary, "-p", TASK, "--allowedTools", "Task Bash Glob Read Write"], home, work, env)
    if done.returncode != 0 or (work / "done.txt").read_text() != "done\n":
        raise SystemExit(f"{binary} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    (session,) = home.glob(".claude/projects/*/*.jsonl")
    return session


def main(binary: str, out: str) -> int:
    home, work = Path(tempfile.mkdtemp(prefix="rec-home-")), Path(tempfile.mkdtemp(prefix="rec-work-"))
    session = record(str(Path(binary).resolve()), home, work)
    text = session.read_text()
    if KEY in text:
        print("the key reached the session file", file=sys.stderr)
        return 1
    shutil.copyfile(session, out)
    sidechain = sum(1 for line in text.splitlines() if json.loads(line).get("isSidechain") is True)
    print(f"{out}: {len(text.splitlines())} lines, {sidechain} of them isSidechain")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
