"""The model policy on the OpenAI Responses and Gemini wires (`wire = "responses"` / `"gemini"`),
against tests/support/fake_responses.py and tests/support/fake_gemini.py: the calculator run end to end, whole
and streamed, the key sent the wire's way, and named policies in the configuration file."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from engine.model.policy import ModelConfig, ModelPolicy
from engine.sessions.config import ConfigError, parse_config
from engine.sessions.run import new_run
from tests.support import fake_gemini
from tests.support.fake_responses import FakeResponses, Turn, function_outputs

KEY = "sk-wire-test-5b1f0c9e-never-show-me"
SUM = {"expression": "17 * 23 - 100"}


def run_calculator(cfg: ModelConfig, tmp_path: Path) -> tuple[object, list[str]]:
    sc = scenarios.get("calculator")
    run = new_run(sc, None, ModelPolicy(cfg), out=tmp_path / "run.jsonl", budget=sc.budget)
    deltas: list[str] = []
    run.engine.stream_listeners.append(deltas.append)
    assert run.engine.run() == "ended"
    run.close()
    return run.engine.state, deltas


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_the_model_policy_speaks_responses(tmp_path: Path, stream: bool) -> None:
    turns = [Turn(text="This needs arithmetic.", calls=[("calculator", SUM)]), Turn(text="The result is 291.")]
    with FakeResponses(turns) as fake:
        cfg = ModelConfig(model="m", base_url=fake.url + "/v1", api_key=KEY, wire="responses", stream=stream, timeout=10)
        state, deltas = run_calculator(cfg, tmp_path)
    assert state.ended.answer == "The result is 291."
    assert state.history[0].observations[0].text == "291"
    assert "".join(deltas) == "This needs arithmetic.The result is 291."
    assert (state.input_tokens, state.output_tokens, state.estimated_usage) == (240, 48, False)
    first, second = (r[2] for r in fake.requests)
    assert fake.requests[0][1]["authorization"] == f"Bearer {KEY}"
    assert first["store"] is False and bool(first.get("stream")) is stream
    assert "calculator" in [t["name"] for t in first["tools"]] and {t["type"] for t in first["tools"]} == {"function"}
    assert [i.get("type") for i in second["input"]] == ["message", "message", "message", "function_call", "function_call_output"]
    assert function_outputs(second)[0]["output"] == "291"
    assert KEY not in (tmp_path / "run.jsonl").read_text()


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_the_model_policy_speaks_gemini(tmp_path: Path, stream: bool) -> None:
    turns = [fake_gemini.Turn(text="This needs arithmetic.", calls=[("calculator", SUM)]), fake_gemini.Turn(text="The result is 291.")]
    with fake_gemini.FakeGemini(turns) as fake:
        cfg = ModelConfig(model="gemini-test", base_url=fake.url, api_key=KEY, wire="gemini", stream=stream, timeout=10)
        state, deltas = run_calculator(cfg, tmp_path)
    assert state.ended.answer == "The result is 291."
    assert state.history[0].observations[0].text == "291"
    assert "".join(deltas) == "This needs arithmetic.The result is 291."
    (call, headers, first), (_, _, second) = fake.requests
    assert call == f"gemini-test:{'streamGenerateContent' if stream else 'generateContent'}"
    assert headers["x-goog-api-key"] == KEY and "authorization" not in headers
    assert "systemInstruction" in first and "calculator" in [d["name"] for d in first["tools"][0]["functionDeclarations"]]
    assert [c["role"] for c in second["contents"]] == ["user", "model", "user"]
    assert second["contents"][2]["parts"] == [{"functionResponse": {"name": "calculator", "response": {"output": "291"}}}]


def test_a_named_policy_names_its_wire(tmp_path: Path) -> None:
    path = tmp_path / "agent-tui.toml"
    text = '[[policy]]\nname = "g"\nmodel = "gemini-test"\nbase_url = "http://127.0.0.1:9"\nwire = "gemini"\n'
    config = parse_config(text, path)
    assert config.policy("g").model_config({}).wire == "gemini"
    assert parse_config(text.replace('wire = "gemini"\n', ""), path).policy("g").model_config({}).wire == "chat"
    with pytest.raises(ConfigError, match=r"agent-tui.toml:5: .*no wire 'soap'"):
        parse_config(text.replace('"gemini"', '"soap"'), path)


def test_policy_model_names_its_wire_by_flag_or_environment(tmp_path: Path) -> None:
    import argparse

    from engine.model.config import config_from_env
    from tui.cli.model_flags import add_model_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    args = parser.parse_args(["--model", "gemini-test", "--base-url", "http://127.0.0.1:9", "--model-wire", "gemini"])
    assert config_from_args(args, env={}).wire == "gemini"
    assert config_from_env("m", env={"AGENT_TUI_MODEL_WIRE": "responses"}).wire == "responses"
    assert config_from_env("m", env={}).wire == "chat"
    with pytest.raises(ValueError, match="no wire 'soap'"):
        config_from_env("m", env={"AGENT_TUI_MODEL_WIRE": "soap"})


def test_a_bad_wire_flag_is_a_one_line_usage_error(capsys) -> None:
    from tui.cli import main

    assert main(["run", "calculator", "--headless", "--policy", "model", "--model", "m", "--model-wire", "soap"]) == 2
    err = capsys.readouterr().err
    assert "no wire 'soap'" in err and "Traceback" not in err
