"""Real ACP agents on loopback fake models, driven as ACP runs (tests/test_acp_*.py).

`gemini_agent(turns)` serves tests/support/fake_gemini.py's model and gives the command and
environment that run `gemini --acp` (Gemini CLI 0.61.0 in .agents/) offline against
it, in a fresh home folder with the settings of tests/support/agent_sessions.py;
`claude_agent(turns)` does the same for claude-agent-acp 0.23.1 on tests/support/fake_anthropic.py,
`codex_agent(turns)` for codex-acp 0.16.0 (it needs bubblewrap) on tests/support/fake_responses.py, with
`approval_policy = "untrusted"` (without it Codex asks no permission at all).
`drive(run, answer)` steps a run headless, answering each approval with `answer(engine)`.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from tests.support import fake_anthropic, fake_gemini, fake_responses
from tests.support.cli_agents import claude_env

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".agents" / "node_modules" / ".bin"
KEY = "dummy-acp-key-0123456789"


@dataclass
class Agent:
    command: list[str]
    env: dict[str, str]
    work: Path
    fake: Any


@contextlib.contextmanager
def _folders() -> Iterator[tuple[Path, Path]]:
    """A fresh home and working folder for one agent, and beside them its run's transcript and log
    (`open_run`), all removed at the end (an agent may still be writing there: what is left goes too)."""
    with tempfile.TemporaryDirectory(prefix="acp-", ignore_cleanup_errors=True) as root:
        home, work = Path(root) / "home", Path(root) / "work"
        home.mkdir()
        work.mkdir()
        yield home, work


@contextlib.contextmanager
def gemini_agent(turns: list[fake_gemini.Turn]) -> Iterator[Agent]:
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True}, "telemetry": {"enabled": False},
    }
    with _folders() as (home, work), fake_gemini.FakeGemini(turns) as fake:
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        env = {"HOME": str(home), "GOOGLE_GEMINI_BASE_URL": fake.url, "GEMINI_API_KEY": KEY}
        yield Agent([str(BIN / "gemini"), "--acp", "--skip-trust"], env, work, fake)


@contextlib.contextmanager
def claude_agent(turns: list[fake_anthropic.Turn]) -> Iterator[Agent]:
    with _folders() as (home, work), fake_anthropic.FakeAnthropic(turns) as fake:
        env = {
            "HOME": str(home), **claude_env(fake.url, KEY), "CLAUDE_CODE_EXECUTABLE": str(BIN / "claude"),
            **({"IS_SANDBOX": "1"} if os.geteuid() == 0 else {}),
        }
        yield Agent([str(BIN / "claude-agent-acp")], env, work, fake)


@contextlib.contextmanager
def codex_agent(turns: list[fake_responses.Turn]) -> Iterator[Agent]:
    with _folders() as (home, work), fake_responses.FakeResponses(turns) as fake:
        (home / "config.toml").write_text(
            'model = "gpt-fake"\nmodel_provider = "fake"\napproval_policy = "untrusted"\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{fake.url}/v1"\nwire_api = "responses"\nenv_key = "FAKE_KEY"\n')
        env = {"HOME": str(home), "CODEX_HOME": str(home), "FAKE_KEY": KEY}
        yield Agent([str(BIN / "codex-acp")], env, work, fake)


def open_run(agent: Agent, task: str, **kwargs: Any) -> Any:
    from engine.acp.run import new_acp_run

    out = agent.work.parent / f"{agent.work.name}.jsonl"
    return new_acp_run(agent.command, task, cwd=agent.work, env=agent.env, out=out,
                       log_path=agent.work.parent / f"{agent.work.name}.log", **kwargs)


def drive(run: Any, answer: Callable[[Any], None], max_pauses: int = 30) -> list[tuple[str, dict[str, Any]]]:
    """Step `run` to its end, calling `answer(engine)` at each approval; the approvals asked (tool, args)."""
    engine = run.engine
    asked: list[tuple[str, dict[str, Any]]] = []
    try:
        for _ in range(max_pauses):
            status = engine.run()
            if status == "awaiting_approval":
                asked.append((engine.state.pending.tool, dict(engine.state.pending.args)))
                answer(engine)
            elif status != "ready":
                break
    finally:
        run.close()
    return asked


def approving(path: Path, seen: list[bool]) -> Callable[[Any], None]:
    """An answer that approves, first noting in `seen` whether `path` exists yet (a held write: not)."""

    def approve(engine: Any) -> None:
        seen.append(path.exists())
        engine.approve()

    return approve
