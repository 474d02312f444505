"""Record a Claude Code session against the scripted fake model (tests/fake_anthropic.py).

    npm install --prefix /tmp/agents --save-exact @anthropic-ai/claude-code@2.1.197
    .venv/bin/python tests/data/traces/recorders/claude_code.py /tmp/agents/node_modules/.bin/claude OUT.jsonl

Claude Code runs offline in a fresh home folder, with only loopback traffic
(the settings of docs/agents.md), on one task with one Bash call; the session
file it writes is copied to OUT. The dummy key never reaches the file (checked).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from tests.fake_anthropic import FakeAnthropic, Turn  # noqa: E402

KEY = "sk-ant-dummy-recording-key"
TURNS = [
    Turn(text="I'll write the note.", tool_uses=[("Bash", {"command": "echo hello > note.txt", "description": "Write hello to note.txt"})]),
    Turn(text="I wrote hello to note.txt."),
]


def main(claude: str, out: str) -> int:
    home, work = Path(tempfile.mkdtemp(prefix="cc-home-")), Path(tempfile.mkdtemp(prefix="cc-work-"))
    with FakeAnthropic(TURNS) as fake:
        env = {
            "PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb",
            "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
        }
        done = subprocess.run(
            [claude, "-p", "Write hello to note.txt", "--allowedTools", "Bash"],
            cwd=work, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
        )
    if done.returncode != 0:
        print(done.stdout, done.stderr, file=sys.stderr)
        return 1
    (session,) = home.glob(".claude/projects/*/*.jsonl")
    if KEY in session.read_text():
        print("the key reached the session file", file=sys.stderr)
        return 1
    shutil.copyfile(session, out)
    print(f"{out}: {len(session.read_text().splitlines())} lines; note.txt holds {(work / 'note.txt').read_text()!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
