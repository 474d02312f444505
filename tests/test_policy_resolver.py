"""One function turns a policy name into the policy: built-in names, the scenario's policies,
the configuration's named model policies and the operator ("human")."""

from __future__ import annotations

import pytest

import scenarios
from engine.core.policy import HumanPolicy
from engine.model.policy import ModelConfig, ModelPolicy
from engine.sessions.policies import resolve_policy


def _setting():
    scenario = scenarios.get("calculator")
    task = scenario.task(None)
    return scenario, scenario.make_world(task, dict(scenario.options)), task


FLAGS = ModelConfig(model="flag-model", base_url="http://127.0.0.1:9/v1")
NAMED = {"cheap": ModelConfig(model="small", base_url="http://127.0.0.1:9/v1")}


def test_each_kind_of_name_becomes_its_policy() -> None:
    scenario, world, task = _setting()
    human = HumanPolicy()

    def resolve(name):
        return resolve_policy(name, scenario, world, task, human, model=FLAGS, named=NAMED)

    assert resolve("human") is human
    assert resolve("arithmetic").name == "arithmetic"
    model = resolve("model")
    assert isinstance(model, ModelPolicy) and model.config is FLAGS and model.name == "model:flag-model"
    again = resolve("model:flag-model")  # a resumed run's own model policy, by the name it recorded
    assert isinstance(again, ModelPolicy) and again.config is FLAGS
    cheap = resolve("cheap")
    assert isinstance(cheap, ModelPolicy) and cheap.config is NAMED["cheap"] and cheap.name == "cheap"
    policy = resolve("reader")
    assert resolve(policy) is policy


def test_a_scenario_policy_wins_over_a_configured_one_of_its_name() -> None:
    scenario, world, task = _setting()
    named = {"arithmetic": NAMED["cheap"]}
    assert not isinstance(resolve_policy("arithmetic", scenario, world, task, HumanPolicy(), named=named), ModelPolicy)


def test_names_nobody_knows_say_so() -> None:
    scenario, world, task = _setting()
    with pytest.raises(KeyError, match="has no policy 'nobody'"):
        resolve_policy("nobody", scenario, world, task, HumanPolicy(), named=NAMED)
    with pytest.raises(ValueError, match="the model policy needs a model"):
        resolve_policy("model", scenario, world, task, HumanPolicy())
