"""The real coding agents in .agents (installed pinned by .ci/run), set up to run offline.

Each function writes an agent's settings into a fresh home folder and returns the
environment that points it at `url` (a fake model, or a gateway in front of one):
telemetry, updates and error reports off, so only loopback connections are made.
`run` runs one non-interactive command in that home; `shown_everywhere` opens the
transcripts a run wrote in `show`, `replay` and `export`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Iterator

AGENTS = Path(__file__).resolve().parents[2] / ".agents" / "node_modules" / ".bin"
INSTALL = (
    "npm install --no-audit --no-fund --save-exact --prefix .agents "
    "@anthropic-ai/claude-code@2.1.197 @google/gemini-cli@0.61.0 opencode-ai@1.18.33 @openai/codex@0.171.0"
)


def claude_env(base_url: str, key: str) -> dict[str, str]:
    """Claude Code on the Anthropic Messages API at `base_url`, with only loopback traffic."""
    return {
        "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": key, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
    }


def codex_home(home: Path, base_url: str, key: str) -> dict[str, str]:
    """Codex CLI on a Responses API provider at `base_url` (ending in /v1), its key in `FAKE_MODEL_KEY`."""
    codex = home / ".codex"
    codex.mkdir(parents=True, exist_ok=True)
    (codex / "config.toml").write_text(
        'model = "fake-model"\n'
        'model_provider = "fake"\n'
        "check_for_update_on_startup = false\n"
        "[analytics]\n"
        "enabled = false\n"
        "[model_providers.fake]\n"
        'name = "Fake"\n'
        f"base_url = {json.dumps(base_url)}\n"
        'env_key = "FAKE_MODEL_KEY"\n'
        'wire_api = "responses"\n'
    )
    scratch = home / "tmp"  # Codex makes its sandbox helper only outside the temporary folder
    scratch.mkdir(exist_ok=True)
    return {"CODEX_HOME": str(codex), "FAKE_MODEL_KEY": key, "TMPDIR": str(scratch)}


def codex_argv(task: str) -> list[str]:
    return [str(AGENTS / "codex"), "exec", "--skip-git-repo-check", "-s", "workspace-write", "--disable", "plugins", task]


def gemini_home(home: Path, base_url: str, key: str) -> dict[str, str]:
    """Gemini CLI with an API key, on the Gemini API at `base_url` (the server's root)."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True}, "telemetry": {"enabled": False},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": key}


def gemini_argv(task: str) -> list[str]:
    return [str(AGENTS / "gemini"), "-p", task, "--approval-mode", "yolo", "--skip-trust"]


def run(argv: list[str], home: Path, work: Path, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`argv` in `work` with `home` as its home and only `env` (and PATH) in its environment."""
    return subprocess.run(argv, cwd=work, env=_environment(home, env), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@contextlib.contextmanager
def started(argv: list[str], home: Path, work: Path, env: dict[str, str], output: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`argv` started as `run` runs it, its output (stdout and stderr) written to `output` as it
    comes; killed on leaving if it still runs."""
    with output.open("wb") as out:
        agent = subprocess.Popen(argv, cwd=work, env=_environment(home, env), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield agent
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()


def _environment(home: Path, env: dict[str, str]) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb", **env}


def shown_everywhere(transcripts: list[Path]) -> str:
    """What `show`, `replay --headless --at end` and `export` print of each transcript (each must succeed)."""
    from tui.cli import main

    assert transcripts, "no transcript"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for argv in (["show"], ["replay", "--headless", "--at", "end"], ["export"]):
            for path in transcripts:
                assert main([*argv, str(path)]) == 0, (argv, path)
    return printed.getvalue()
