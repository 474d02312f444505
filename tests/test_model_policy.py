"""The model policy against a real local chat completions server (tests/support/fake_openai.py)."""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path

import pytest

import scenarios
from engine import Budget, Decision, ScriptedPolicy
from engine.model.policy import ModelPolicy, Secret, config_from_env
from tui.cli.model_flags import add_model_arguments, config_from_args
from engine.core.policy import RunView
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript
from scenarios.support import support_policy
from tests.support.fake_openai import Cut, FakeOpenAI, Hang, Raw, Status, call, calls, refused_url, say
from tests.support.model_policy import KEY, config, run_until_failure, start_policy_run


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def assert_key_absent(*folders: Path) -> None:
    checked = 0
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                checked += 1
                assert KEY not in path.read_text(encoding="utf-8", errors="replace"), path
    assert checked


# -- full runs --------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_calculator_run_by_tool_calls(server, tmp_path, _isolated_home, stream):
    server.add(
        call("calculator", content="This needs arithmetic.", expression="17 * 23 - 100", usage=(120, 30)),
        say("The result is 291.", usage=(180, 10)),
    )
    cfg = config(server, stream=stream)
    run, deltas = start_policy_run("calculator", None, ModelPolicy(cfg), tmp_path, cfg=cfg)
    assert run.engine.run() == "ended"
    run.close()
    state = run.engine.state
    assert state.ended is not None and state.ended.outcome == "answer"
    assert state.ended.answer == "The result is 291."
    assert state.history[0].thought == "This needs arithmetic."
    assert state.history[0].observations[0].text == "291"
    assert "".join(deltas) == "This needs arithmetic.The result is 291."
    assert (state.input_tokens, state.output_tokens, state.estimated_usage) == (300, 40, False)
    assert state.cost == pytest.approx((300 * 0.5 + 40 * 1.5) / 1000)
    assert run.engine.header.policy == "model:test-model"

    first, second = server.requests
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.body["model"] == "test-model"
    assert bool(first.body.get("stream")) is stream
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in first.body["tools"]}
    assert offered["calculator"]["required"] == ["expression"]
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "tool"]
    tool_call = second.messages[2]["tool_calls"][0]
    assert json.loads(tool_call["function"]["arguments"]) == {"expression": "17 * 23 - 100"}
    assert second.messages[3] == {"role": "tool", "tool_call_id": tool_call["id"], "content": "291"}
    assert_key_absent(tmp_path, _isolated_home)


def test_support_irreversible_call_approved(server, tmp_path):
    server.add(
        call("get_order_status", content="First I check the order.", order_id="1187"),
        call("open_return_request", content="Delivered. I open a return.", order_id="1187"),
        say("I opened request R-1. A colleague will approve it."),
    )
    run, _ = start_policy_run("support", "return-1187", ModelPolicy(config(server)), tmp_path)
    assert run.engine.run() == "awaiting_approval"
    assert run.engine.state.pending.tool == "open_return_request"
    assert run.world.requests == []
    assert run.engine.approve() == "ready"
    assert run.engine.run() == "ended"
    assert run.world.requests == ["R-1 for 1187"]
    assert run.engine.state.ended.answer.startswith("I opened request R-1")
    last = server.requests[-1].messages[-1]
    assert last["role"] == "tool" and last["content"] == "R-1 for 1187 — waits for a colleague"


def test_support_rejection_reaches_the_model(server, tmp_path, _isolated_home):
    server.add(
        call("get_order_status", order_id="1187"),
        call("open_return_request", content="Delivered. I open a return.", order_id="1187", id="call_ret"),
        say("A colleague will look at the return with you."),
    )
    run, _ = start_policy_run("support", "return-1187", ModelPolicy(config(server)), tmp_path)
    assert run.engine.run() == "awaiting_approval"
    run.engine.reject("the customer must send a photo first")
    assert run.engine.run() == "ended"
    run.close()
    assert run.world.requests == []
    messages = server.requests[-1].messages
    assert messages[-2]["tool_calls"][0]["id"] == "call_ret"
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_ret",
        "content": "REJECTED by the operator: the customer must send a photo first",
    }
    assert_key_absent(tmp_path, _isolated_home)


def test_several_calls_in_one_reply_run_in_order_each_approved(server, tmp_path):
    server.add(
        calls(
            ("get_order_status", '{"order_id": "1187"}'),
            ("open_return_request", '{"order_id": "1187"}'),
            content="I check and open the return together.",
        ),
        say("Done: R-1."),
    )
    run, _ = start_policy_run("support", "return-1187", ModelPolicy(config(server)), tmp_path)
    assert run.engine.run() == "awaiting_approval"
    assert run.engine.state.history[0].observations[0].text.startswith("1187 — delivered")
    run.engine.approve()
    assert run.engine.run() == "ended"
    messages = server.requests[-1].messages
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["call_m0", "call_m1"]
    assert [(m["role"], m["tool_call_id"]) for m in messages[3:]] == [("tool", "call_m0"), ("tool", "call_m1")]


def test_edited_arguments_are_told_to_the_model(server, tmp_path):
    server.add(
        call("open_return_request", content="I open a return.", order_id="01187"),
        say("Return opened."),
    )
    run, _ = start_policy_run("support", "return-1187", ModelPolicy(config(server)), tmp_path)
    assert run.engine.run() == "awaiting_approval"
    run.engine.modify({"order_id": "1187"})
    assert run.engine.run() == "ended"
    result = server.requests[-1].messages[-1]["content"]
    assert result.startswith('[The operator edited the arguments before it ran: {"order_id": "1187"}]')
    assert result.endswith("R-1 for 1187 — waits for a colleague")


def test_swap_from_scripted_to_model_and_back(server, tmp_path):
    server.add(call("open_return_request", content="Delivered, so I open a return.", order_id="1187"))
    run, _ = start_policy_run("support", "return-1187", "scripted", tmp_path)
    engine = run.engine
    assert engine.step() == "ready"
    assert engine.state.history[0].actions[0].call_id == "s1.0"
    engine.swap_policy(ModelPolicy(config(server)))
    assert engine.step() == "awaiting_approval"
    engine.approve()
    engine.swap_policy(ScriptedPolicy("scripted", support_policy))
    assert engine.run() == "ended"
    assert engine.state.ended.answer.startswith("I opened request R-1")
    assert [s.policy for s in engine.state.history] == ["scripted", "model:test-model", "scripted"]
    (request,) = server.requests
    scripted_call = request.messages[2]["tool_calls"][0]
    assert scripted_call["id"] == "call_1_0"
    assert scripted_call["function"] == {"name": "get_order_status", "arguments": '{"order_id": "1187"}'}
    assert request.messages[3]["tool_call_id"] == "call_1_0"


def test_text_mode_uses_the_seed_format(server, tmp_path):
    server.add(
        say('Thought: I compute it.\nAction: calculator(expression="17 * 23 - 100")\nObservation: 5 (made up)'),
        say("Thought: I have it.\nFinal Answer: 291"),
    )
    run, deltas = start_policy_run("calculator", None, ModelPolicy(config(server, mode="text")), tmp_path)
    assert run.engine.run() == "ended"
    assert run.engine.state.ended.answer == "291"
    assert run.engine.state.history[0].observations[0].text == "291"
    first, second = server.requests
    assert "tools" not in first.body and first.body["stop"] == ["\nObservation:"]
    assert "calculator(expression: string)" in first.messages[0]["content"]
    assert second.messages[2]["content"] == 'Thought: I compute it.\nAction: calculator(expression="17 * 23 - 100")'
    assert second.messages[3] == {"role": "user", "content": "Observation: 291"}
    assert "".join(deltas).startswith("Thought: I compute it.")


def test_missing_usage_falls_back_to_the_estimate(server, tmp_path):
    server.add(call("calculator", expression="17 * 23 - 100", usage=None), say("291", usage=None))
    cfg = config(server)
    run, _ = start_policy_run("calculator", None, ModelPolicy(cfg), tmp_path, cfg=cfg)
    assert run.engine.run() == "ended"
    state = run.engine.state
    assert state.estimated_usage is True
    decisions = [e for e in run.engine.events if e.type == "decision"]
    assert all(d.usage.estimated and d.usage.input_tokens > 0 and d.usage.output_tokens > 0 for d in decisions)
    assert state.cost > 0


# -- faults that the engine answers as observations -----------------------------------


def test_unknown_tool_becomes_an_observation(server, tmp_path):
    server.add(call("teleport", content="I jump.", to="moon"), say("291"))
    run, _ = start_policy_run("calculator", None, ModelPolicy(config(server)), tmp_path)
    assert run.engine.run() == "ended"
    observation = run.engine.state.history[0].observations[0]
    assert observation.error and not observation.executed
    assert observation.text.startswith("ERROR: tool 'teleport' does not exist")
    assert server.requests[-1].messages[-1]["content"] == observation.text


def test_invalid_json_arguments_become_an_observation(server, tmp_path):
    server.add(
        calls(("calculator", '{"expression": "17 * 2'), ("calculator", '["17"]'), content="Two tries."),
        say("291"),
    )
    run, _ = start_policy_run("calculator", None, ModelPolicy(config(server)), tmp_path)
    assert run.engine.run() == "ended"
    first, second = run.engine.state.history[0].observations
    assert first.error and not first.executed
    assert first.text == 'ERROR: the arguments for calculator were not valid JSON: {"expression": "17 * 2'
    assert second.text == "ERROR: the arguments for calculator must be a JSON object, got list"
    messages = server.requests[-1].messages
    assert [c["function"]["arguments"] for c in messages[2]["tool_calls"]] == ["{}", "{}"]
    assert messages[3]["content"] == first.text
    assert run.engine.state.tool_calls == {}


def test_an_empty_reply_is_told_to_the_model(server, tmp_path):
    server.add(say(""), say("291"))
    run, _ = start_policy_run("calculator", None, ModelPolicy(config(server)), tmp_path)
    assert run.engine.run() == "ended"
    assert run.engine.state.history[0].parse_error == "ERROR: the decision had neither an action nor an answer"
    assert server.requests[-1].messages[-1]["role"] == "user"


# -- transport faults ---------------------------------------------------------------


def test_connection_refused(tmp_path, _isolated_home):
    url = refused_url()
    _, message = run_until_failure(None, tmp_path, config(url))
    assert message.startswith(f"cannot connect to the model server at {url}")
    assert_key_absent(tmp_path, _isolated_home)


def test_timeout(server, tmp_path):
    server.add(Hang())
    _, message = run_until_failure(server, tmp_path, config(server, timeout=0.2))
    assert message == f"the model server at {server.url} did not answer within 0.2 s (waiting for the reply)"


def test_rate_limit_is_retried_honouring_retry_after(server, tmp_path):
    server.add(Status(429, headers={"Retry-After": "0"}), Status(429, headers={"Retry-After": "0"}), say("291"))
    run, _ = start_policy_run("calculator", None, ModelPolicy(config(server, retry_backoff=30.0)), tmp_path)
    assert run.engine.run() == "ended"
    assert run.engine.state.ended.answer == "291"
    assert len(server.requests) == 3


def test_rate_limit_gives_up_after_the_bounded_retries(server, tmp_path):
    server.add(*[Status(429, "slow down")] * 3)
    _, message = run_until_failure(server, tmp_path, config(server))
    assert message == "rate limited by the model server (HTTP 429) after 2 retries: slow down"
    assert len(server.requests) == 3


def test_rate_limit_with_a_long_retry_after_stops_at_once(server, tmp_path):
    server.add(Status(429, "slow down", headers={"Retry-After": "3600"}))
    _, message = run_until_failure(server, tmp_path, config(server))
    assert message == "rate limited by the model server (HTTP 429); the server asks to wait 3600 s: slow down"
    assert len(server.requests) == 1


def test_server_error_is_retried_then_reported(server, tmp_path):
    server.add(Status(500), Status(502), Status(503, "overloaded"))
    _, message = run_until_failure(server, tmp_path, config(server))
    assert message == "the model server failed (HTTP 503) after 2 retries: overloaded"


def test_server_error_once_then_success(server, tmp_path):
    server.add(Status(503), say("291"))
    run, _ = start_policy_run("calculator", None, ModelPolicy(config(server)), tmp_path)
    assert run.engine.run() == "ended"
    assert run.engine.state.ended.outcome == "answer"


def test_refused_key_and_echoed_key_are_never_shown(server, tmp_path):
    server.add(Status(401, f"Incorrect API key provided: {KEY}"))
    _, message = run_until_failure(server, tmp_path, config(server))
    assert message.startswith("the model server refused the API key (HTTP 401)")
    server.add(Status(400, f"bad request with {KEY} inside"))
    _, message = run_until_failure(server, tmp_path / "again", config(server))
    assert message == "the model server rejected the request (HTTP 400): bad request with *** inside"


@pytest.mark.parametrize(
    "reply, expected",
    [
        (Raw('{"choices": [{"message": '), "the reply is not valid JSON"),
        (Raw('{"object": "nothing"}'), "the reply has no choices"),
        (Raw('data: {"choices": [\n\n', content_type="text/event-stream"), "malformed JSON in the stream"),
        (Cut(chunked=False), "the stream was cut before the reply was complete"),
        (Cut(chunked=True), "was cut before the reply was complete"),
    ],
    ids=["json", "shape", "stream-json", "stream-ended", "stream-broken"],
)
def test_unreadable_replies(server, tmp_path, reply, expected):
    server.add(reply)
    _, message = run_until_failure(server, tmp_path, config(server, max_retries=0))
    assert expected in message


def test_interactive_run_pauses_on_failure_and_can_retry_or_swap(server, tmp_path):
    server.add(Status(503, "down for a moment"), say("291"))
    policy = ModelPolicy(config(server, max_retries=0))
    run, _ = start_policy_run("calculator", None, policy, tmp_path, interactive=True)
    engine = run.engine
    assert engine.run() == "policy_failed"
    assert engine.state.last_policy_error == "the model server failed (HTTP 503): down for a moment"
    assert engine.run() == "ended"
    assert engine.state.ended.answer == "291"

    server.add(Status(503, "down again"))
    run2, _ = start_policy_run("calculator", None, policy, tmp_path / "two", interactive=True)
    assert run2.engine.run() == "policy_failed"
    run2.engine.swap_policy(run2.make_policy("arithmetic"))
    assert run2.engine.run() == "ended"
    assert run2.engine.state.ended.answer == "291"


def test_cancel_interrupts_a_request_in_flight(server, tmp_path):
    hang = Hang()
    server.add(hang)
    policy = ModelPolicy(config(server, timeout=60.0))
    run, _ = start_policy_run("calculator", None, policy, tmp_path, interactive=True)
    result: list[str] = []
    worker = threading.Thread(target=lambda: result.append(run.engine.step()))
    worker.start()
    assert hang.started.wait(10)
    policy.cancel()
    worker.join(10)
    assert not worker.is_alive()
    assert result == ["policy_failed"]
    assert run.engine.state.last_policy_error == "interrupted by the operator"
    hang.release.set()
    server.add(say("291"))
    assert run.engine.run() == "ended"


def test_cancel_with_nothing_in_flight_does_not_stick(server, tmp_path):
    server.add(say("291"))
    policy = ModelPolicy(config(server))
    policy.cancel()
    run, _ = start_policy_run("calculator", None, policy, tmp_path)
    assert run.engine.run() == "ended"
    assert run.engine.state.ended.answer == "291"


# -- configuration ------------------------------------------------------------------


def test_config_from_env_and_flags():
    env = {"AGENT_TUI_API_KEY": KEY, "OPENAI_API_KEY": "other", "AGENT_TUI_PRICE_IN": "0.25"}
    assert config_from_env(env=env) is None
    cfg = config_from_env("gpt-test", "http://127.0.0.1:9/v1", price_out="2", env=env)
    assert cfg is not None and cfg.api_key.reveal() == KEY
    assert (cfg.price_in_per_1k, cfg.price_out_per_1k, cfg.mode, cfg.stream) == (0.25, 2.0, "tools", True)
    assert cfg.policy_name == "model:gpt-test"
    assert config_from_env("m", env={"OPENAI_API_KEY": "fallback"}).api_key.reveal() == "fallback"
    assert config_from_env("m", env={}).api_key is None
    with pytest.raises(ValueError, match="input price"):
        config_from_env("m", env={"AGENT_TUI_PRICE_IN": "cheap"})

    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    args = parser.parse_args(["--model", "m2", "--base-url", "http://x/v1", "--model-mode", "text", "--no-stream", "--timeout", "7"])
    cfg2 = config_from_args(args, env={"AGENT_TUI_API_KEY": KEY})
    assert (cfg2.model, cfg2.base_url, cfg2.mode, cfg2.stream, cfg2.timeout) == ("m2", "http://x/v1", "text", False, 7.0)
    assert Budget().model_copy() == cfg2.with_prices(Budget())


def test_the_key_never_shows():
    cfg = config("http://user:pw@127.0.0.1:9/v1?api-key=abc")
    for text in (repr(cfg), str(cfg), repr(ModelPolicy(cfg)), json.dumps(cfg.public())):
        assert KEY not in text
    assert cfg.public()["base_url"] == "http://127.0.0.1:9/v1"
    assert str(Secret(KEY)) == "Secret('***')"
    with pytest.raises(TypeError):
        json.dumps({"key": cfg.api_key})


def test_messages_for_a_parse_error_step():
    from engine.model.wire import build_messages
    from engine.core.policy import ObservationView, StepView

    step = StepView(1, "scripted", "", [], None, "ERROR: invalid format", "I am not sure",
                    [ObservationView(None, {}, "ERROR: invalid format", True, False)])
    view = RunView(task="t", tools=[], history=[step], step=2)
    messages = build_messages(view, "tools")
    assert messages[2:] == [
        {"role": "assistant", "content": "I am not sure"},
        {"role": "user", "content": "ERROR: invalid format"},
    ]


def test_duplicate_and_odd_call_ids_are_made_consistent():
    from engine.core.events import Action
    from engine.model.wire import build_messages
    from engine.core.policy import ObservationView, StepView

    def step(n: int, call_id: str | None) -> StepView:
        return StepView(n, "m", "", [Action(tool="echo", args={}, call_id=call_id)], None, None, None,
                        [ObservationView("echo", {}, f"r{n}", False, True)])

    view = RunView(task="t", tools=[], history=[step(1, "call_0"), step(2, "call_0"), step(3, "s3.0")], step=4)
    messages = build_messages(view, "tools")
    ids = [m["tool_calls"][0]["id"] for m in messages if m.get("tool_calls")]
    assert ids == ["call_0", "call_2_0", "call_3_0"]
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ids


def test_args_error_action_is_answered_by_the_engine_never_run(tmp_path):
    from engine.core.events import Action

    def decide(view: RunView) -> Decision:
        if view.step == 1:
            return Decision(actions=[Action(tool="calculator", args_error="the arguments were garbled")])
        return Decision.final("done", "ok")

    run = new_run(scenarios.get("calculator"), None, ScriptedPolicy("s", decide), save=False)
    assert run.engine.run() == "ended"
    (observation,) = run.engine.state.history[0].observations
    assert (observation.text, observation.error, observation.executed) == ("ERROR: the arguments were garbled", True, False)
    assert Action(tool="calculator", args_error="x").render() == "calculator(<unreadable arguments>)"


def test_transcript_round_trips_an_args_error_action(server, tmp_path):
    server.add(calls(("calculator", "{oops")), say("291"))
    run, _ = start_policy_run("calculator", None, ModelPolicy(config(server)), tmp_path)
    run.engine.run()
    run.close()
    transcript = read_transcript(tmp_path / "run.jsonl")
    decision = next(e for e in transcript.events if e.type == "decision")
    assert decision.actions[0].args_error.startswith("the arguments for calculator were not valid JSON")


# -- the command line ----------------------------------------------------------------


def test_cli_headless_run_with_a_model(server, tmp_path, _isolated_home, monkeypatch, capsys):
    from tui.cli import main

    monkeypatch.setenv("AGENT_TUI_API_KEY", KEY)
    server.add(
        call("calculator", content="I compute.", expression="17 * 23 - 100", usage=(100, 10)),
        say("291", usage=(150, 5)),
    )
    out = tmp_path / "cli.jsonl"
    code = main(
        ["run", "calculator", "--headless", "--model", "test-model", "--base-url", server.url,
         "--price-in", "1", "--price-out", "2", "--out", str(out)]
    )
    assert code == 0
    transcript = read_transcript(out)
    assert transcript.header.policy == "model:test-model"
    assert (transcript.header.budget.price_in_per_1k, transcript.header.budget.price_out_per_1k) == (1.0, 2.0)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    printed = capsys.readouterr()
    assert KEY not in printed.out + printed.err
    assert_key_absent(tmp_path, _isolated_home)


def test_cli_model_policy_without_a_model_is_a_usage_error(monkeypatch, capsys):
    from tui.cli import EXIT_USAGE, main

    monkeypatch.delenv("AGENT_TUI_MODEL", raising=False)
    assert main(["run", "calculator", "--headless", "--policy", "model"]) == EXIT_USAGE
    assert "--policy model needs a model" in capsys.readouterr().err


def test_run_offers_the_model_policy_when_configured(server, tmp_path):
    cfg = config(server)
    run = new_run(scenarios.get("support"), "return-1187", "scripted", save=False, model=cfg)
    assert run.policy_names() == ["scripted", "human", "model"]
    assert run.make_policy("model").name == "model:test-model"
    assert run.engine.header.budget.price_in_per_1k == 0.5
    plain = new_run(scenarios.get("support"), "return-1187", "scripted", save=False)
    assert "model" not in plain.policy_names()
