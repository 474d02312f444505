"""The model policy against the fake chat completions server: a configuration, a run started and run until it fails."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import scenarios
from engine import Budget
from engine.core.events import PolicyFailed
from engine.model.policy import ModelConfig, ModelPolicy
from engine.sessions.run import Run, new_run

KEY = "sk-test-5b1f0c9e-never-show-me"


def config(server_or_url, **changes) -> ModelConfig:
    url = server_or_url if isinstance(server_or_url, str) else server_or_url.url
    base = ModelConfig(
        model="test-model",
        base_url=url,
        api_key=KEY,
        timeout=5.0,
        max_retries=2,
        retry_backoff=0.01,
        price_in_per_1k=0.5,
        price_out_per_1k=1.5,
    )
    return replace(base, **changes)


def start_policy_run(
    scenario: str,
    task: str | None,
    policy,
    tmp_path: Path,
    *,
    interactive: bool = False,
    budget: Budget | None = None,
    cfg: ModelConfig | None = None,
) -> tuple[Run, list[str]]:
    sc = scenarios.get(scenario)
    budget = budget or sc.budget
    if cfg is not None:
        budget = cfg.with_prices(budget)
    run = new_run(sc, task, policy, out=tmp_path / "run.jsonl", interactive=interactive, budget=budget)
    deltas: list[str] = []
    run.engine.stream_listeners.append(deltas.append)
    return run, deltas


def policy_errors(run: Run) -> list[str]:
    return [e.message for e in run.engine.events if isinstance(e, PolicyFailed)]


def run_until_failure(server, tmp_path, cfg: ModelConfig) -> tuple[Run, str]:
    run, _ = start_policy_run("calculator", None, ModelPolicy(cfg), tmp_path)
    assert run.engine.run() == "ended"
    run.close()
    (message,) = policy_errors(run)
    assert run.engine.state.ended.outcome == "stopped"
    assert run.engine.state.ended.reason == f"policy error: {message}"
    assert run.engine.state.step == 0
    assert KEY not in message
    return run, message
