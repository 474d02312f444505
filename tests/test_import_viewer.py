"""Imported runs in the viewer: the system prompt at the top, the answer once, user turns and
nested sub-agent work shown, `f` offered only where a fork can run, and a fork of an imported run
whose every tool call asks the operator."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.policy import Decision, ScriptedPolicy
from engine.core.events import Action
from engine.sessions.imported import imported_scenario
from engine.sessions.resume import ResumeError, fork_run
from engine.stored.importers import load_any
from engine.stored.replay import Timeline
from tui.replay_app import ReplayApp, _fork_from, imported_fork_policies
from tui.widgets.transcript import TranscriptPane

pytestmark = pytest.mark.anyio
TRACES = Path(__file__).resolve().parent / "data" / "traces"


def _timeline(name: str) -> Timeline:
    t = load_any(TRACES / name)
    return Timeline(t.header, t.events, path=str(TRACES / name))


def pane_rows(app) -> list[str]:
    pane = app.query_one(TranscriptPane)
    return [pane.render_line(y).text for y in range(pane.size.height)]


async def test_the_system_prompt_is_at_the_top_user_turns_show_and_the_answer_shows_once():
    timeline = _timeline("chat_openai_cookbook_toy_chat_fine_tuning.jsonl")
    app = ReplayApp(timeline, len(timeline))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        rows = pane_rows(app)
        system = next(i for i, r in enumerate(rows) if "System" in r)
        first_step = next(i for i, r in enumerate(rows) if "It's great that you're getting exercise" in r)
        assert system < first_step and "puts a positive spin on" in rows[system]
        answers = [r for r in rows if "It's great that you're getting exercise outdoors!" in r]
        assert len(answers) == 1 and "Answer" in answers[0]
        rule = next(i for i, r in enumerate(rows) if "run ended: answer after 1 step" in r)
        assert not any("Answer" in r for r in rows[rule:])


async def test_sub_agent_work_and_later_user_messages_are_shown(tmp_path):
    import json

    lines = [
        {"type": "user", "message": {"role": "user", "content": "Find it"}},
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "look"}}]}},
        {"type": "assistant", "isSidechain": True, "message": {"id": "m2", "role": "assistant", "content": [
            {"type": "text", "text": "searching the tree"}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "found"}]}},
        {"type": "user", "message": {"role": "user", "content": "thanks, and now?"}},
        {"type": "assistant", "message": {"id": "m3", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    t = load_any(path)
    app = ReplayApp(Timeline(t.header, t.events), len(t.events))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = "\n".join(pane_rows(app))
        assert "Sub-agent" in text and "says: searching the tree" in text
        assert "User" in text and "thanks, and now?" in text
        assert text.index("searching the tree") < text.index("found") < text.index("thanks, and now?")


async def test_fork_is_offered_only_where_it_can_run():
    timeline = _timeline("codex_kvsankar_golden.jsonl")
    without = ReplayApp(timeline)
    async with without.run_test(size=(120, 40)):
        assert without.check_action("fork", ()) is False
    offered = ReplayApp(timeline, fork=_fork_from, policy_names=["human"])
    async with offered.run_test(size=(120, 40)):
        assert offered.check_action("fork", ()) is True


def test_an_imported_run_forks_with_the_operator_or_a_configured_model(monkeypatch):
    for name in ("AGENT_TUI_MODEL",):
        monkeypatch.delenv(name, raising=False)
    assert imported_fork_policies() == ["human"]
    monkeypatch.setenv("AGENT_TUI_MODEL", "some-model")
    assert imported_fork_policies() == ["human", "model"]


def test_a_fork_of_an_imported_run_declares_its_tools_and_asks_for_every_call(tmp_path):
    t = load_any(TRACES / "claude_code_kvsankar_golden.jsonl")
    scenario = imported_scenario(t.header)
    tools = {tool.name: tool for tool in scenario.make_world(scenario.task(None), {}).tools}
    assert set(tools) == {"Read", "Edit"} and all(tool.kind == "irreversible" for tool in tools.values())
    assert {p.name for p in tools["Edit"].params} == {"file_path", "old_string", "new_string"}
    position = next(i for i, e in enumerate(t.events) if e.type == "decision" and e.step == 2)
    decisions = iter([
        Decision(thought="read it again", actions=[Action(tool="Read", args={"file_path": "/x", "limit": 5})]),
        Decision(thought="check", actions=[Action(tool="Read", args={"file_path": "/y"})]),
        Decision(answer="done"),
    ])
    policy = ScriptedPolicy("scripted", lambda view: next(decisions))
    run = fork_run(scenario, t, position, policy, out=tmp_path / "fork.jsonl", interactive=True)
    engine = run.engine
    engine.run()
    assert engine.status == "awaiting_approval" and engine.state.pending.tool == "Read"
    engine.approve()
    engine.run()
    first = [e for e in engine.events if e.type == "observation"][-1]
    assert "nothing ran" in first.text and first.args == {"file_path": "/x", "limit": 5}
    assert engine.status == "awaiting_approval"
    engine.reject("the file says port 3000")
    engine.run()
    second = [e for e in engine.events if e.type == "observation"][-1]
    assert "the file says port 3000" in second.text and not second.executed
    assert engine.state.ended is not None and engine.state.ended.answer == "done"
    run.close()
    with pytest.raises(ResumeError, match="not resumed"):
        from engine.sessions.resume import resume_run

        resume_run(scenario, t, None)


def test_run_fork_of_an_imported_log_needs_a_policy(tmp_path, capsys):
    from tui.cli import main

    source = TRACES / "codex_kvsankar_golden.jsonl"
    assert main(["run", "--fork", str(source), "--at", "1", "--headless"]) == 2
    assert "give --policy human or --policy model" in capsys.readouterr().err
    assert main(["run", "--resume", str(source), "--headless"]) == 2
    assert "not resumed or verified" in capsys.readouterr().err
