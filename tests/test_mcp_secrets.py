"""The model's key never reaches an MCP server: a stdio server (third-party code) inherits
agent-tui's environment without the key variables (AGENT_TUI_API_KEY, OPENAI_API_KEY, a
configured policy's api_key_env) and without the gateway's token; a server's own `env` in the
configuration still sets what it is given there."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.mcp_helpers import NOTES_SCENARIO, ROOT, SERVER

SECRETS = {
    "AGENT_TUI_API_KEY": "sk-agent-tui-secret-1",
    "OPENAI_API_KEY": "sk-openai-secret-2",
    "MY_PROVIDER_KEY": "sk-provider-secret-3",
    "AGENT_TUI_GATEWAY_TOKEN": "gateway-token-secret-4",
}


def test_a_stdio_server_inherits_no_key(tmp_path: Path) -> None:
    dump, given = tmp_path / "env.txt", tmp_path / "given.txt"
    config = tmp_path / "agent-tui.toml"
    config.write_text(
        '[[policy]]\nname = "other"\nmodel = "m"\napi_key_env = "MY_PROVIDER_KEY"\n\n'
        f'[[mcp]]\nname = "given"\ncommand = "sh"\nargs = ["-c", {json.dumps(f"env > {given}; exec {sys.executable} {SERVER}")}]\n'
        'env = { OPENAI_API_KEY = "set-for-this-server" }\n'
    )
    inheriting = f"sh -c {shlex.quote(f'env > {dump}; exec {sys.executable} {SERVER}')}"
    env = {**os.environ, **SECRETS, "AGENT_TUI_TEST_MARKER": "inherited"}
    for mcp in (inheriting, "given"):
        done = subprocess.run(
            [sys.executable, "-m", "tui.cli", "run", NOTES_SCENARIO, "--task", "notes", "--policy", "notes", "--config", str(config),
             "--mcp", mcp, "--headless", "--approve", "none", "--out", str(tmp_path / f"{mcp[:5]}.jsonl")],
            capture_output=True, text=True, timeout=120, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stderr
    seen = dump.read_text()
    assert "AGENT_TUI_TEST_MARKER=inherited" in seen, "the rest of the environment is inherited"
    leaked = [name for name, value in SECRETS.items() if value in seen or f"{name}=" in seen]
    assert leaked == []
    configured = given.read_text()
    assert "OPENAI_API_KEY=set-for-this-server" in configured
    assert not [name for name, value in SECRETS.items() if value in configured]
