"""A model server cannot switch budgets off or hold a run: usage numbers are checked,
the whole reply has a deadline and a size cap, and the time budget stops a call in flight."""

from __future__ import annotations

import json
import threading
import time

import pytest

import scenarios
from engine import Budget, Decision
from engine.core.events import Usage
from engine.model import ModelConfig
from engine.sessions.run import new_run
from tests.support.fake_openai import FakeOpenAI, Hang, Reply, call, say
from tests.support.helpers import counting_run


def within(seconds: float, work):
    """Run `work()` in a thread and return its result; fail (instead of hanging the suite) after `seconds`."""
    box: dict[str, object] = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return box.get("value")


# -- 12. usage numbers are untrusted --------------------------------------------------


@pytest.mark.parametrize("tokens", [-(10**9), -1, 10**30])
def test_reported_usage_cannot_switch_the_token_budget_off(tokens):
    decisions = [
        Decision(thought=f"step {n}", actions=[Decision.act("", "echo", text=str(n)).actions[0]], usage=Usage(input_tokens=tokens, output_tokens=tokens, estimated=False))
        for n in range(40)
    ]
    run = counting_run(*decisions, budget=Budget(max_steps=40, max_tokens=300))
    assert run.engine.run() == "ended"
    end = run.engine.state.ended
    assert end.reason.startswith("tokens budget reached"), end.reason
    first = run.engine.events[0]
    assert first.usage.estimated and first.usage.input_tokens >= 0
    assert "[agent-tui: the reported usage was refused" in first.thought


def test_a_server_reporting_negative_usage_is_refused_and_said(capfd, tmp_path, monkeypatch):
    from tui.cli import main

    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path))
    with FakeOpenAI() as server:
        server.add(*[call("get_order_status", content="look", usage=(-(10**12), -5), order_id="1187") for _ in range(30)])
        code = main(["run", "support", "--headless", "--model", "m", "--base-url", server.url, "--max-tokens", "2000",
                     "--max-steps", "30", "--repetition", "off", "--price-in", "1", "--max-cost", "1"])
    out = capfd.readouterr().out
    assert code == 3
    assert "the reported usage was refused" in out
    assert "tokens budget reached" in out or "cost budget reached" in out


# -- 13. deadline, size cap, time budget ------------------------------------------------


class Drip(Reply):
    """A stream that sends one byte at a time, forever (until the client goes)."""

    def send(self, handler, request) -> None:
        handler.start_stream()
        event = "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]}) + "\n\n"
        try:
            while True:
                for ch in event:
                    handler.send_chunk(ch)
                    time.sleep(0.02)
        except OSError:
            pass


class Flood(Reply):
    """A proper streamed reply of `megabytes` of text."""

    def __init__(self, megabytes: int) -> None:
        self.megabytes = megabytes

    def send(self, handler, request) -> None:
        handler.start_stream()
        piece = "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "b" * 100_000}, "finish_reason": None}]}) + "\n\n"
        try:
            for _ in range(self.megabytes * 10):
                handler.send_chunk(piece)
            handler.send_chunk("data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) + "\n\n")
            handler.send_chunk("data: [DONE]\n\n")
            handler.end_stream()
        except OSError:
            pass


def model_run(server, **config):
    support = scenarios.get("support")
    model = ModelConfig(model="m", base_url=server.url, api_key="k", max_retries=0, **config)
    return new_run(support, None, "model", save=False, model=model, budget=config.pop("budget", None))


def test_a_server_dripping_bytes_is_cut_at_the_timeout():
    with FakeOpenAI() as server:
        server.add(Drip())
        run = model_run(server, timeout=1.0)
        within(30, run.engine.step)
    failure = run.engine.events[-2]
    assert failure.type == "policy_error"
    assert "did not finish its reply within 1 s" in failure.message


def test_a_reply_larger_than_the_cap_is_refused():
    with FakeOpenAI() as server:
        server.add(Flood(megabytes=20))
        run = model_run(server, timeout=60.0)
        within(60, run.engine.step)
    failure = run.engine.events[-2]
    assert failure.type == "policy_error" and "larger than 16 MB" in failure.message


def test_the_time_budget_stops_a_model_call_in_flight():
    with FakeOpenAI() as server:
        server.add(Hang())
        support = scenarios.get("support")
        model = ModelConfig(model="m", base_url=server.url, api_key="k", max_retries=0, timeout=60.0)
        run = new_run(support, None, "model", save=False, model=model, budget=Budget(max_steps=5, max_seconds=1.0))
        within(20, run.engine.step)
    assert run.engine.ended
    assert "the seconds budget ran out while waiting for the model" in run.engine.state.ended.reason


def test_a_normal_reply_still_arrives():
    with FakeOpenAI() as server:
        server.add(say("All done."))
        run = model_run(server, timeout=5.0)
        run.engine.step()
    assert run.engine.state.ended.answer == "All done."
