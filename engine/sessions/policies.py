"""The one place a policy name becomes a policy: new, resumed and forked runs, swaps, the viewer's forks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from engine.core.policy import HumanPolicy, Policy
from engine.core.scenario import Scenario, Task, World

if TYPE_CHECKING:
    from engine.model.config import ModelConfig


def model_of(
    name: str, scenario: Scenario, model: ModelConfig | None = None, named: Mapping[str, ModelConfig] | None = None
) -> tuple[ModelConfig, str | None] | None:
    """The endpoint a name runs on and the name its policy goes by (None: the config's own
    `model:NAME`), or None for a name that is not a model policy here: "model" with the flags'
    endpoint (unless the scenario has a "model" policy and no endpoint is given), the flags'
    endpoint by its own name, or a configured model policy whose name the scenario does not use."""
    if model is not None and name in ("model", model.policy_name):
        return model, None
    if named and name in named and name not in scenario.policies:
        return named[name], name
    return None


def resolve_policy(
    policy: str | Policy,
    scenario: Scenario,
    world: World,
    task: Task,
    human: HumanPolicy,
    *,
    model: ModelConfig | None = None,
    named: Mapping[str, ModelConfig] | None = None,
) -> Policy:
    """`policy` itself when it is one; else by name: "human" is the operator, a model policy
    (see `model_of`) its endpoint, any other name the scenario's. KeyError for a name the
    scenario does not have, ValueError for "model" with no endpoint and no such policy."""
    if not isinstance(policy, str):
        return policy
    if policy == "human":
        return human
    endpoint = model_of(policy, scenario, model, named)
    if endpoint is not None:
        from engine.model.policy import ModelPolicy

        return ModelPolicy(endpoint[0], name=endpoint[1])
    if policy == "model" and "model" not in scenario.policies:
        raise ValueError("the model policy needs a model: give --model NAME or set AGENT_TUI_MODEL")
    return scenario.policy(policy, world, task)
