"""The research scenario (seed 003): four iterations, a capped page, a budget in tokens and dollars."""

from __future__ import annotations

import pytest

from engine.sessions.run import new_run
from engine.core.state import estimate_tokens
from engine.core.tools import DEFAULT_OBSERVATION_CAP, execute
from scenarios import research

DOCS = "https://www.postgresql.org/docs/17/logical-replication.html"
NOTES = "https://www.postgresql.org/docs/17/release-17.html"


def careful_run():
    run = new_run(research.SCENARIO, "pg17-cdc", "careful", save=False)
    run.engine.run()
    return run


def test_careful_policy_finishes_with_the_nuance_in_four_iterations():
    state = careful_run().engine.state
    assert state.step == 4
    calls = [a.render().split("(")[0] for s in state.history for a in s.actions]
    assert calls == ["web_search", "read_page", "read_page", "finish"]
    assert [s.actions[0].args.get("url") for s in state.history[1:3]] == [DOCS, NOTES]
    assert state.ended.outcome == "answer"
    assert state.ended.reason == "finish called"
    answer = state.ended.answer
    assert answer.startswith("Not as a module called CDC.")
    assert "logical replication" in answer and "Debezium" in answer
    assert DOCS in answer and NOTES in answer
    assert state.tool_calls == {"web_search": 1, "read_page": 2}


def test_search_returns_three_results_one_official():
    world = research.ResearchWorld(research.load_corpus())
    text = world.web_search("Postgres 17 native CDC")
    urls = [line.strip() for line in text.splitlines() if line.strip().startswith("http")]
    assert len(urls) == 3
    assert [u for u in urls if "postgresql.org" in u] == [DOCS]
    assert world.web_search("zzzz qqqq") == "no results for 'zzzz qqqq'"


def test_the_long_page_arrives_cut_at_4000_characters_with_a_marker():
    state = careful_run().engine.state
    page = next(p for p in research.load_corpus() if p.url == DOCS)
    assert len(page.text) > DEFAULT_OBSERVATION_CAP == 4000
    observed = state.history[1].observations[0]
    marker = f"\n[... truncated: {len(page.text) - 4000} more characters]"
    assert observed.text == page.text[:4000] + marker
    assert not observed.error and observed.executed
    short = state.history[2].observations[0]
    assert "truncated" not in short.text and len(short.text) < 4000


def test_the_truncation_flag_is_recorded_on_the_event():
    run = careful_run()
    reads = [e for e in run.engine.events if e.type == "observation" and e.tool == "read_page"]
    assert [e.truncated for e in reads] == [True, False]


def test_cost_follows_the_price_table_and_grows_faster_than_the_steps():
    state = careful_run().engine.state
    per_step = state.input_tokens_per_step
    assert per_step[0] == estimate_tokens(research.QUESTION)
    assert all(b > a for a, b in zip(per_step, per_step[1:]))
    price_in, price_out = research.PRICES[research.DEFAULT_TIER]
    expected = (state.input_tokens * price_in + state.output_tokens * price_out) / 1000
    assert state.cost == pytest.approx(expected)
    assert 0 < state.cost < research.SCENARIO.budget.max_cost


def test_a_tight_token_budget_stops_the_run_before_the_answer():
    run = new_run(research.SCENARIO, None, "careful", save=False, budget=research.budget_for(max_tokens=1000))
    run.engine.run()
    ended = run.engine.state.ended
    assert ended.outcome == "stopped"
    assert ended.reason.startswith("tokens budget reached")
    assert run.engine.state.step == 3


def test_a_tight_dollar_budget_stops_the_run_too():
    run = new_run(research.SCENARIO, None, "careful", save=False, budget=research.budget_for("large", max_cost=0.01))
    run.engine.run()
    assert run.engine.state.ended.reason.startswith("cost budget reached")


def test_unknown_tier_is_refused():
    with pytest.raises(KeyError, match="small, medium, large"):
        research.budget_for("huge")


def test_hasty_policy_trusts_the_blog_and_fails_the_score():
    run = new_run(research.SCENARIO, None, "hasty", save=False)
    run.engine.run()
    state = run.engine.state
    assert state.step == 2
    assert state.ended.answer == "Yes: Postgres 17 finally has CDC built in! (blog)"
    score = research.bench_score(run.task, {}, state.history, state.ended.outcome)
    assert score["success"] is False
    good = careful_run().engine.state
    assert research.bench_score(run.task, {}, good.history, good.ended.outcome)["success"] is True


def test_reading_an_unknown_url_is_an_error_observation():
    world = research.ResearchWorld(research.load_corpus())
    tool = next(t for t in world.tools if t.name == "read_page")
    result = execute(tool, {"url": "https://nowhere.example/x"})
    assert result.error and result.text.startswith("ERROR: no page at https://nowhere.example/x")
