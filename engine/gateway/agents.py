"""Starting an agent pointed at the gateway: the settings each agent needs, and the child process.

`agent_launch` turns an agent's command line into what starts it against the
gateway: its environment (the upstream keys taken out, the gateway's URL and
the per-run token put in, in the variables that agent reads) and, for agents
configured by a file, that file in a private folder. The agent is known by
its command's name (or named with `kind`):

| agent | how it is pointed at the gateway |
| --- | --- |
| claude (Claude Code) | `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` = the token, telemetry, error reports, updates and nonessential traffic off |
| codex (Codex CLI) | `CODEX_HOME` = a folder whose `config.toml` names the gateway as the provider (`wire_api = "responses"`, the token in `AGENT_TUI_GATEWAY_KEY`), update checks and analytics off |
| gemini (Gemini CLI) | `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY` = the token, `GEMINI_CLI_SYSTEM_SETTINGS_PATH` = settings choosing the API key, usage statistics, telemetry and updates off |
| opencode | `OPENCODE_CONFIG` = a config with the gateway as its provider (the token read from `AGENT_TUI_GATEWAY_KEY`), updates and model fetches off |
| any other | `OPENAI_BASE_URL` (the gateway's `/v1`), `OPENAI_API_KEY` = the token |

`AgentChild` runs the command and hands each line of its output (stdout and
stderr together) to a callback: the headless gateway prints them, the cockpit
may show them in a pane.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from engine.model.config import KEY_VARIABLES

KINDS = ("claude", "codex", "gemini", "opencode", "openai")
UPSTREAM_KEYS = (
    *KEY_VARIABLES,
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CODEX_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_API_KEY",
    "AGENT_TUI_GATEWAY_TOKEN",
)
"""Variables that may hold a model's key or the gateway's own token: never in the child's environment."""
KEPT_LINES = 2000
"""Output lines of the agent kept by `AgentChild.lines`."""
TOKEN_VARIABLE = "AGENT_TUI_GATEWAY_KEY"
"""Where codex and opencode read the gateway's token from (their configuration names it)."""
QUIET = {
    "claude": {
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
    },
    "opencode": {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"},
}


@dataclass
class AgentLaunch:
    """How to start the agent: its command, the variables set for it and its whole environment."""

    kind: str
    argv: list[str]
    settings: dict[str, str]
    env: dict[str, str] = field(repr=False)
    interactive: bool
    """The agent wants the terminal (no prompt on its command line): start it in another one."""

    def paste_lines(self) -> list[str]:
        """Shell lines that start the agent in another terminal (the upstream keys unset there too)."""
        removed = [name for name in UPSTREAM_KEYS if name not in self.settings]
        lines = [f"unset {' '.join(dict.fromkeys(removed))}"]
        lines += [f"export {name}={shlex.quote(value)}" for name, value in self.settings.items()]
        lines.append(shlex.join(self.argv))
        return lines


def agent_kind(argv: Sequence[str], kind: str | None = None) -> str:
    """The agent a command line starts: `kind` when given, else known by the command's name."""
    if kind is not None:
        if kind not in KINDS:
            raise ValueError(f"unknown agent {kind!r} (known: {', '.join(KINDS)})")
        return kind
    name = Path(argv[0]).name.lower()
    return next((k for k in KINDS[:-1] if name == k or name.startswith(f"{k}-") or name == f"{k}.exe"), "openai")


def agent_launch(
    argv: Sequence[str],
    *,
    host: str,
    port: int,
    token: str,
    folder: Path,
    environ: Mapping[str, str],
    secrets: Sequence[str] = (),
    kind: str | None = None,
    model: str | None = None,
) -> AgentLaunch:
    """What starts `argv` against the gateway at `host:port` with `token`; configuration files
    go in `folder` (private to the operator). `secrets` (the upstream key) are kept out of the
    environment under any name."""
    if not argv:
        raise ValueError("give the agent's command after --, e.g. -- claude -p 'fix the tests'")
    chosen = agent_kind(argv, kind)
    origin = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    settings = _settings(chosen, origin, token, folder, model or "gateway")
    env = {k: v for k, v in environ.items() if k not in UPSTREAM_KEYS and not any(s and s in v for s in secrets)}
    env.update(settings)
    return AgentLaunch(chosen, list(argv), settings, env, _interactive(chosen, argv))


def _settings(kind: str, origin: str, token: str, folder: Path, model: str) -> dict[str, str]:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if kind == "claude":
        return {"ANTHROPIC_BASE_URL": origin, "ANTHROPIC_API_KEY": token, **QUIET["claude"]}
    if kind == "gemini":
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "telemetry": {"enabled": False},
        }
        path = folder / "gemini-settings.json"
        path.write_text(json.dumps(settings, indent=2))
        return {"GOOGLE_GEMINI_BASE_URL": origin, "GEMINI_API_KEY": token, "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(path)}
    if kind == "codex":
        home = folder / "codex"
        home.mkdir(mode=0o700, exist_ok=True)
        (home / "config.toml").write_text(
            'model_provider = "agent-tui"\n'
            f"model = {json.dumps(model)}\n"
            "check_for_update_on_startup = false\n\n"
            "[model_providers.agent-tui]\n"
            'name = "agent-tui gateway"\n'
            f"base_url = {json.dumps(origin + '/v1')}\n"
            f'env_key = "{TOKEN_VARIABLE}"\n'
            'wire_api = "responses"\n\n'
            "[analytics]\nenabled = false\n"
        )
        return {"CODEX_HOME": str(home), TOKEN_VARIABLE: token}
    if kind == "opencode":
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "agent-tui gateway",
            "options": {"baseURL": origin + "/v1", "apiKey": "{env:" + TOKEN_VARIABLE + "}"},
            "models": {model: {"name": model, "tool_call": True}},
        }
        config = {"provider": {"agent-tui": provider}, "model": f"agent-tui/{model}", "autoupdate": False, "share": "disabled"}
        path = folder / "opencode.json"
        path.write_text(json.dumps(config, indent=2))
        return {"OPENCODE_CONFIG": str(path), TOKEN_VARIABLE: token, **QUIET["opencode"]}
    return {"OPENAI_BASE_URL": origin + "/v1", "OPENAI_API_KEY": token}


def _interactive(kind: str, argv: Sequence[str]) -> bool:
    """Whether the agent runs in the terminal (its interactive mode) rather than on a prompt it was given."""
    args = list(argv[1:])
    if kind in ("claude", "gemini"):
        return not any(a in ("-p", "--print", "--prompt") or a.startswith(("--print=", "--prompt=")) for a in args)
    if kind == "codex":
        return not any(a in ("exec", "e") for a in args)
    if kind == "opencode":
        return "run" not in args
    return False


class AgentChild:
    """The agent's command as a child process; each line of its output goes to `on_output`."""

    def __init__(self, launch: AgentLaunch, on_output: Callable[[str], None], cwd: str | Path | None = None) -> None:
        self.launch = launch
        self.on_output = on_output
        self.cwd = cwd
        self.process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self.lines: deque[str] = deque(maxlen=KEPT_LINES)
        """Its last output lines, for a pane opened after they came."""
        self.exited = threading.Event()
        """Set once the child has exited and its output was read to the end."""

    def start(self, on_exit: Callable[[int], None] | None = None) -> None:
        """Start the child (OSError when its command cannot be run); `on_exit(code)` once it ends."""
        self.process = subprocess.Popen(
            self.launch.argv,
            env=self.launch.env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            bufsize=1,
        )
        process = self.process

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                line = line.rstrip("\r\n")
                self.lines.append(line)
                self.on_output(line)
            code = process.wait()
            self.exited.set()
            if on_exit is not None:
                on_exit(code)

        self._reader = threading.Thread(target=read, name="gateway-agent-output", daemon=True)
        self._reader.start()

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None and self.exited.is_set() else None

    def stop(self, grace: float = 5.0) -> None:
        """End the child if it still runs: SIGTERM, then SIGKILL after `grace` seconds."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def private_folder(prefix: str = "agent-") -> Path:
    """A folder only the operator can read, for an agent's configuration files (none holds the
    token: they name the variable it is in): under the data folder, not the temporary one
    (Codex makes its sandbox helper only outside it)."""
    import tempfile

    from engine.sessions.folders import user_data_dir

    base = user_data_dir() / "agents"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


__all__ = ["AgentChild", "AgentLaunch", "KINDS", "UPSTREAM_KEYS", "agent_kind", "agent_launch", "private_folder"]
