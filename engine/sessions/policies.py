"""The one place a policy name becomes a policy, for new, resumed and forked runs and swaps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.core.policy import HumanPolicy, Policy
from engine.core.scenario import Scenario, Task, World

if TYPE_CHECKING:
    from engine.model.config import ModelConfig


def make_policy(
    policy: str | Policy, scenario: Scenario, world: World, task: Task, human: HumanPolicy, model: ModelConfig | None = None
) -> Policy:
    """`policy` itself when it is one; else by name: "human" is the operator, "model" the
    configured endpoint (the scenario's own "model" policy when no endpoint is configured),
    any other name the scenario's. KeyError for a name the scenario does not have,
    ValueError for "model" with no endpoint and no such policy."""
    if not isinstance(policy, str):
        return policy
    if policy == "human":
        return human
    if policy == "model" and (model is not None or "model" not in scenario.policies):
        if model is None:
            raise ValueError("the model policy needs a model: give --model NAME or set AGENT_TUI_MODEL")
        from engine.model.policy import ModelPolicy

        return ModelPolicy(model)
    return scenario.policy(policy, world, task)
