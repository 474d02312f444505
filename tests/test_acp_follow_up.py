"""The operator's follow-up after an ACP agent ended its turn: given up front (`--follow-up TEXT`,
repeated) each is the agent's next prompt in the same session; in the cockpit the agent's answer
is held (`agent.answer`): approved it ends the run, a prompt edited in or the reason of a
rejection is the next prompt. The fake agent (tests/support/fake_acp_agent.py) echoes each
prompt; Gemini CLI and claude-agent-acp are driven against their loopback fake models."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engine.acp.run import new_acp_run
from engine.acp.tools import ANSWER, PROMPT
from tests.support.acp_harness import claude_agent, drive, gemini_agent, open_run
from tui.cli import main

FAKE = Path(__file__).parent / "support" / "fake_acp_agent.py"


def _run(tmp_path, behaviour="echo", **kwargs):
    work = tmp_path / "work"
    work.mkdir()
    return new_acp_run([sys.executable, str(FAKE), behaviour], "do it", cwd=work, out=tmp_path / "run.jsonl",
                       log_path=tmp_path / "agent.log", **kwargs)


def _prompts(events) -> list[str]:
    return [a.args["text"] for e in events if e.type == "decision" for a in e.actions if a.tool == PROMPT]


def test_follow_ups_given_up_front_are_the_next_prompts_of_the_same_run(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run.jsonl"
    monkeypatch.chdir(tmp_path)
    command = f"{sys.executable} {FAKE} echo"
    code = main(["run", "--acp", command, "-t", "do it", "--follow-up", "and the tests", "--follow-up", "then the docs",
                 "--headless", "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    lines = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    ended = [e for e in lines if e["type"] == "run_ended"]
    assert len(ended) == 1 and ended[0]["outcome"] == "answer" and ended[0]["answer"] == "you said: then the docs"
    decisions = [e for e in lines if e["type"] == "decision"]
    assert [a["args"]["text"] for d in decisions for a in d["actions"] if a["tool"] == PROMPT] == ["and the tests", "then the docs"]
    assert "you said: do it" in decisions[0]["thought"] and "follow-up 1 of 2" in decisions[0]["thought"]
    assert "you said: and the tests" in decisions[1]["thought"]
    for argv in (["show", str(out)], ["replay", str(out), "--headless"], ["export", str(out)]):
        assert main(argv) == 0, argv
        shown = capsys.readouterr().out
        assert "and the tests" in shown and "then the docs" in shown, argv


def test_a_follow_up_with_a_run_that_is_not_an_agents_is_refused(tmp_path, capsys):
    code = main(["run", "--headless", "--follow-up", "more", "-o", str(tmp_path / "x.jsonl")])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "--follow-up goes with --acp" in last


def test_an_empty_follow_up_is_refused(tmp_path, capsys):
    code = main(["run", "--acp", f"{sys.executable} {FAKE} echo", "-t", "x", "--follow-up", " ", "--headless",
                 "-o", str(tmp_path / "x.jsonl")])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "--follow-up needs the prompt's text" in last


def test_in_the_cockpit_the_answer_waits_and_a_prompt_or_a_reason_is_the_next_turn(tmp_path, capsys):
    run = _run(tmp_path, interactive=True)
    engine = run.engine
    try:
        assert engine.run() == "awaiting_approval"
        assert engine.state.pending.tool == ANSWER and engine.state.pending.args == {"answer": "you said: do it"}
        engine.modify({"answer": "you said: do it", "prompt": "now the tests"})
        assert engine.run() == "awaiting_approval"
        assert engine.state.pending.args == {"answer": "you said: now the tests"}
        engine.reject("and the docs")
        assert engine.run() == "awaiting_approval"
        assert engine.state.pending.args == {"answer": "you said: and the docs"}
        engine.approve()
        assert engine.run() == "ended"
    finally:
        run.close()
    assert engine.state.ended.outcome == "answer" and engine.state.ended.answer == "you said: and the docs"
    assert _prompts(engine.events) == []  # the operator's prompts are the held answers' edit and reason
    asked = [(e.args or {}).get("prompt") for e in engine.events if e.type == "approval_decided" and e.choice == "modify"]
    assert asked == ["now the tests"]
    for argv in (["show", str(run.path)], ["replay", str(run.path), "--headless"], ["export", str(run.path)]):
        assert main(argv) == 0, argv
        shown = capsys.readouterr().out
        assert "now the tests" in shown and "and the docs" in shown, argv


def test_an_edited_answer_is_the_runs_answer(tmp_path):
    run = _run(tmp_path, interactive=True)
    try:
        assert run.engine.run() == "awaiting_approval"
        run.engine.modify({"answer": "the operator's words"})
        assert run.engine.run() == "ended"
    finally:
        run.close()
    assert run.engine.state.ended.answer == "the operator's words"


def test_a_headless_run_without_follow_ups_ends_with_the_answer_as_before(tmp_path):
    run = _run(tmp_path)
    try:
        assert run.engine.run() == "ended"
    finally:
        run.close()
    assert run.engine.state.ended.answer == "you said: do it"
    assert not [e for e in run.engine.events if e.type == "approval_requested"]


def test_gemini_reads_a_follow_up_in_the_same_session():
    from tests.support.fake_gemini import Turn

    with gemini_agent([Turn(text="First answer.")]) as agent:  # the fake answers by calls made: the same again
        run = open_run(agent, "Say something", follow_ups=["Say more"])
        drive(run, lambda engine: engine.approve())
        assert run.engine.state.ended is not None and run.engine.state.ended.outcome == "answer"
        conversation = [(c["role"], c["parts"][-1].get("text")) for c in agent.fake.requests[-1][2]["contents"]]
        assert conversation[-3:] == [("user", "Say something"), ("model", "First answer."), ("user", "Say more")]  # one session
        assert _prompts(run.engine.events) == ["Say more"]


def test_claude_reads_the_operators_follow_up_held_in_the_cockpit():
    from tests.support.fake_anthropic import Turn

    with claude_agent([Turn(text="First answer.")]) as agent:  # the fake answers by calls made: the same again
        run = open_run(agent, "Say something", interactive=True)
        answers = iter([lambda engine: engine.reject("Say more"), lambda engine: engine.approve()])
        asked = drive(run, lambda engine: next(answers)(engine))
        assert [(tool, args["answer"]) for tool, args in asked] == [(ANSWER, "First answer."), (ANSWER, "First answer.")]
        assert run.engine.state.ended.outcome == "answer" and run.engine.state.ended.answer == "First answer."
        messages = [m for m in agent.fake.requests[-1][2]["messages"]]
        said = [(m["role"], _texts(m["content"])) for m in messages]
        assert said[-1][0] == "user" and "Say more" in said[-1][1]
        assert any(role == "assistant" and "First answer." in text for role, text in said)  # one session


def _texts(content) -> str:
    if isinstance(content, str):
        return content
    return " ".join(block.get("text", "") for block in content if isinstance(block, dict))


def test_the_cost_the_agent_reports_is_the_runs_cost_step_by_step(tmp_path):
    run = _run(tmp_path, "costly", follow_ups=["again"])
    try:
        assert run.engine.run() == "ended"
    finally:
        run.close()
    decisions = [e for e in run.engine.events if e.type == "decision"]
    assert [d.cost for d in decisions] == [0.25, 0.25]  # the session's total of 0.25, then 0.5
    assert run.engine.state.cost == 0.5
    assert [d.usage.input_tokens for d in decisions] == [1000, 2000] and not decisions[0].usage.estimated


def test_a_cost_budget_stops_the_run_before_the_next_prompt_is_sent(tmp_path):
    from engine.core.events import Budget

    prompts = tmp_path / "prompts.txt"
    run = _run(tmp_path, "costly", follow_ups=["again", "and again", "once more"], budget=Budget(max_steps=50, max_cost=0.3),
               env={"FAKE_ACP_PROMPTS": str(prompts)})
    try:
        assert run.engine.run() == "ended"
    finally:
        run.close()
    ended = run.engine.state.ended
    assert ended.outcome == "stopped" and "cost budget reached: $0.5000 of $0.3000" in ended.reason, ended.reason
    assert [e.kind for e in run.engine.events if e.type == "budget_warning"] == ["cost"]
    assert prompts.read_text().splitlines() == ["do it", "again"]  # "and again" never sent


def test_a_cost_in_another_currency_is_said_and_not_counted(tmp_path):
    run = _run(tmp_path, "costly", env={"FAKE_ACP_CURRENCY": "EUR"})
    try:
        assert run.engine.run() == "ended"
    finally:
        run.close()
    assert run.engine.state.cost == 0
    assert "reports its cost in 'EUR', not dollars" in "".join(e.thought for e in run.engine.events if e.type == "decision")


def test_claudes_reported_cost_counts_and_its_cost_budget_stops_the_run():
    from engine.core.events import Budget
    from tests.support.fake_anthropic import Turn

    with claude_agent([Turn(text="First answer.")]) as agent:
        run = open_run(agent, "Say something", follow_ups=["Say more", "And more"], budget=Budget(max_steps=50, max_cost=0.002))
        drive(run, lambda engine: engine.approve())
        costs = [e.cost for e in run.engine.events if e.type == "decision"]
        assert len(costs) == 2 and all(c is not None and c > 0 for c in costs)  # Claude Code's total_cost_usd, turn by turn
        ended = run.engine.state.ended
        assert ended.outcome == "stopped" and ended.reason.startswith("cost budget reached"), ended.reason
        assert run.engine.state.cost == pytest.approx(sum(costs))
        assert "And more" not in json.dumps(agent.fake.requests, default=str)
