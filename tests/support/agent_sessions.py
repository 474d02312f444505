"""Run a real agent offline against a scripted fake model and keep the session file it writes.

    npm install --prefix .agents --save-exact @anthropic-ai/claude-code@2.1.197 @google/gemini-cli@0.61.0 opencode-ai@1.18.33 @openai/codex@0.171.0
    .venv/bin/python tests/support/agent_sessions.py claude .agents/node_modules/.bin/claude OUT.jsonl
    .venv/bin/python tests/support/agent_sessions.py gemini .agents/node_modules/.bin/gemini OUT.jsonl
    .venv/bin/python tests/support/agent_sessions.py opencode .agents/node_modules/.bin/opencode OUT.json
    .venv/bin/python tests/support/agent_sessions.py codex .agents/node_modules/.bin/codex OUT.jsonl

Each agent runs in a fresh home folder with only loopback traffic (telemetry,
updates and error reports off, the model's URL on 127.0.0.1), on one task with one shell call, against tests/support/fake_anthropic.py,
tests/support/fake_gemini.py, tests/support/fake_openai.py or tests/support/fake_responses.py (the settings
are tests/support/cli_agents.py's); the session file it writes (for
opencode, which keeps sessions in a database, what `opencode export` writes) is
copied to OUT. The dummy
key must not be in it (checked).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support import cli_agents, fake_anthropic, fake_gemini, fake_responses  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, call, say  # noqa: E402

TASK = "Write hello to note.txt"
KEY = "dummy-recording-key-0123456789"
SHELL = {"command": "echo hello > note.txt", "description": "Write hello to note.txt"}


def claude(binary: str, home: Path, work: Path) -> Path:
    turns = [fake_anthropic.Turn(text="I'll write the note.", tool_uses=[("Bash", SHELL)]), fake_anthropic.Turn(text="I wrote hello to note.txt.")]
    with fake_anthropic.FakeAnthropic(turns) as fake:
        env = cli_agents.claude_env(fake.url, KEY)
        _run([binary, "-p", TASK, "--allowedTools", "Bash"], home, work, env)
    (session,) = home.glob(".claude/projects/*/*.jsonl")
    return session


def gemini(binary: str, home: Path, work: Path, calls: int = 1) -> Path:
    """`calls`: how many turns make the shell call (each the same) before the answer."""
    turns = [fake_gemini.Turn(text="I'll write the note.", calls=[("run_shell_command", SHELL)])] * calls + [fake_gemini.Turn(text="I wrote hello to note.txt.")]
    with fake_gemini.FakeGemini(turns) as fake:
        env = cli_agents.gemini_home(home, fake.url, KEY)
        _run([binary, *cli_agents.gemini_argv(TASK)[1:]], home, work, env)
    (session,) = home.glob(".gemini/tmp/*/chats/session-*.json*")
    return session


def codex(binary: str, home: Path, work: Path, calls: int = 1) -> Path:
    """`calls`: how many turns make the shell call (each the same) before the answer."""
    turns = [fake_responses.Turn(text="I'll write the note.", calls=[("exec_command", {"cmd": SHELL["command"]})])] * calls + [fake_responses.Turn(text="I wrote hello to note.txt.")]
    with fake_responses.FakeResponses(turns) as fake:
        env = cli_agents.codex_home(home, fake.url + "/v1", KEY)
        _run([binary, *cli_agents.codex_argv(TASK)[1:]], home, work, env)
    (session,) = home.glob(".codex/sessions/*/*/*/rollout-*.jsonl")
    return session


def opencode(binary: str, home: Path, work: Path) -> Path:
    def turn(request):  # the title request has no tools; the main one is answered by how far it got
        if not request.body.get("tools"):
            return say("Write a note")
        if not any(m.get("role") == "tool" for m in request.messages):
            return call("bash", content="I'll write the note.", **SHELL)
        return say("I wrote hello to note.txt.")

    with FakeOpenAI() as fake:
        fake.add(*[turn] * 20)
        provider = {"npm": "@ai-sdk/openai-compatible", "name": "Fake", "options": {"baseURL": fake.url, "apiKey": KEY}, "models": {"m": {"name": "m", "tool_call": True}}}
        config = {"provider": {"fake": provider}, "model": "fake/m", "autoupdate": False, "share": "disabled", "permission": {"bash": "allow", "edit": "allow"}}
        (work / "opencode.json").write_text(json.dumps(config))
        env = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"}
        _run([binary, "run", TASK, "-m", "fake/m"], home, work, env)
    (work / "opencode.json").unlink()  # its key stays out of what follows
    (session,) = json.loads(_run([binary, "session", "list", "--format", "json"], home, work, env, check_note=False))
    out = home / "session.json"
    out.write_text(_run([binary, "export", session["id"]], home, work, env, check_note=False))
    return out


def _run(argv: list[str], home: Path, work: Path, env: dict[str, str], check_note: bool = True) -> str:
    done = cli_agents.run(argv, home, work, env)
    if done.returncode != 0 or (check_note and (work / "note.txt").read_text() != "hello\n"):
        raise SystemExit(f"{argv[0]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def main(agent: str, binary: str, out: str) -> int:
    binary = str(Path(binary).resolve())
    home, work = Path(tempfile.mkdtemp(prefix="rec-home-")), Path(tempfile.mkdtemp(prefix="rec-work-"))
    session = {"claude": claude, "gemini": gemini, "opencode": opencode, "codex": codex}[agent](binary, home, work)
    if KEY in session.read_text():
        print("the key reached the session file", file=sys.stderr)
        return 1
    shutil.copyfile(session, out)
    print(f"{out}: {len(session.read_text().splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
