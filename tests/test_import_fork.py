"""A model fork of an imported run sees the run as its source model saw it: the user's later
messages come after the steps they followed, in both of the model policy's modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.events import Action, DecisionMade, Header, Note, Observed
from engine.core.state import fold
from engine.model.policy import ModelConfig, ModelPolicy
from engine.model.wire import build_messages
from engine.core.policy import RunView
from engine.sessions.imported import imported_scenario
from engine.sessions.resume import fork_position, fork_run
from engine.stored.importers import load_runs
from tests.support.fake_openai import FakeOpenAI, say

TRACES = Path(__file__).resolve().parent / "data" / "traces"


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def _config(server: FakeOpenAI) -> ModelConfig:
    return ModelConfig(model="test-model", base_url=server.url, api_key="sk-fork-test", timeout=5.0, max_retries=0)


def test_a_model_fork_of_a_multi_turn_chat_is_sent_the_later_user_messages(server, tmp_path):
    tennis = load_runs(TRACES / "chat_openai_cookbook_toy_chat_fine_tuning.jsonl")[1]
    scenario = imported_scenario(tennis.header)
    server.add(say("Start with a lesson or two; the basics come quickly."))
    run = fork_run(scenario, tennis, fork_position(tennis, 3), ModelPolicy(_config(server)), out=tmp_path / "fork.jsonl")
    run.engine.run()
    run.close()
    (request,) = server.requests
    sent = [(m["role"], m["content"]) for m in request.messages[1:]]
    assert sent == [
        ("user", "I lost my tennis match today."),
        ("assistant", "It's ok, it happens to everyone."),
        ("user", "But I trained so hard!"),
        ("assistant", "It will pay off next time."),
        ("user", "I'm going to switch to golf."),
        ("assistant", "Golf is fun too!"),
        ("user", "I don't even know how to play golf."),
    ]
    assert run.engine.state.ended.answer == "Start with a lesson or two; the basics come quickly."


def test_a_user_message_after_tool_results_follows_them_and_never_stands_in_for_a_missing_one():
    """Codex: two calls never answered, then the user spoke; the user's words are not a tool result."""
    header = Header(scenario="imported", task="codex", task_text="Create a test file", policy="imported")
    events = [
        DecisionMade(step=1, policy="imported", thought="", actions=[
            Action(tool="shell", args={"command": "ls"}, call_id="a"), Action(tool="shell", args={"command": "pwd"}, call_id="b")]),
        Observed(step=1, index=0, tool="shell", args={"command": "ls"}, text="notes.txt", error=False, executed=True),
        Note(step=1, kind="user", text="Yes, overwrite it"),
        Note(step=1, kind="system", text="<environment_context>...</environment_context>"),
    ]
    state = fold(header, events)
    view = RunView(task=header.task_text, tools=[], history=state.history, step=2)
    tools = build_messages(view, "tools")[2:]
    assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in tools[1:]] == [
        ("tool", tools[0]["tool_calls"][0]["id"], "notes.txt"),
        ("tool", tools[0]["tool_calls"][1]["id"], tools[2]["content"]),
        ("user", None, "Yes, overwrite it"),
    ]
    assert "Yes, overwrite it" not in tools[2]["content"]
    text = build_messages(view, "text")[2:]
    assert [m["role"] for m in text] == ["assistant", "user", "user"] and text[-1]["content"] == "Yes, overwrite it"


def test_user_messages_before_the_first_step_reach_a_model_fork_with_the_task(server, tmp_path):
    """Codex Desktop: the user's messages after the first one and before any step (redacted by the source)."""
    (run,) = load_runs(TRACES / "codex_localpush_parallel_calls.jsonl")
    before = [e.text for e in run.events[: next(i for i, e in enumerate(run.events) if e.type == "decision")]
              if e.type == "note" and e.kind == "user"]
    assert before == ["[REDACTED_TEXT len=108 sha=fc56d2e9]", "[REDACTED_TEXT len=115 sha=a83ebe6f]"]
    server.add(say("done"))
    fork = fork_run(imported_scenario(run.header), run, fork_position(run, 1), ModelPolicy(_config(server)),
                    out=tmp_path / "fork.jsonl")
    fork.engine.run()
    fork.close()
    (request,) = server.requests
    assert request.messages[1] == {"role": "user", "content": "\n\n".join([run.header.task_text, *before])}
    assert [m["role"] for m in request.messages[2:]] == ["assistant", "tool", "tool"]
