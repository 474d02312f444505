"""What real Claude Code and Codex files record beyond messages and calls: each turn's token usage
(kept as recorded, not estimated), a server tool's result, Codex's compaction summaries, aborted
turns and the undo feature's git snapshots (bookkeeping, not "unrecognised")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.stored.importers import runs_from_bytes

TRACES = Path(__file__).resolve().parent / "data" / "traces"


def _decisions(run) -> list:
    return [e for e in run.events if e.type == "decision"]


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (TRACES / name).read_text().splitlines() if line.strip()]


def _import(name: str, lines: list[dict]) -> object:
    (run,) = runs_from_bytes(name, "".join(json.dumps(line) + "\n" for line in lines).encode())
    return run


def test_claude_code_usage_is_each_steps_recorded_token_count():
    lines = _lines("claude_code_kvsankar_golden.jsonl")
    recorded = [line["message"]["usage"] for line in lines if line["type"] == "assistant"]
    run = _import("session.jsonl", lines)
    usages = [d.usage for d in _decisions(run)]
    assert [u.estimated for u in usages] == [False] * len(recorded)
    assert [(u.input_tokens, u.output_tokens) for u in usages] == [
        (r["input_tokens"] + r["cache_creation_input_tokens"] + r["cache_read_input_tokens"], r["output_tokens"])
        for r in recorded
    ]


@pytest.mark.parametrize("bad", [10**30, -5, True, "100", None, 1.5])
def test_an_implausible_usage_count_is_left_estimated(bad):
    lines = _lines("claude_code_kvsankar_golden.jsonl")
    first = next(line for line in lines if line["type"] == "assistant")
    first["message"]["usage"]["input_tokens"] = bad
    usage = _decisions(_import("session.jsonl", lines))[0].usage
    assert usage.estimated and usage.input_tokens < 10**6


def test_codex_token_count_is_the_last_steps_usage():
    lines = _lines("codex_kvsankar_golden.jsonl")
    last = next(line["payload"]["info"]["last_token_usage"] for line in lines if line["payload"].get("type") == "token_count")
    run = _import("rollout.jsonl", lines)
    usage = _decisions(run)[-1].usage
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (last["input_tokens"], last["output_tokens"], False)
    assert not any("token_count" in w for w in run.warnings)


def test_codex_compaction_snapshots_and_aborted_turns_are_kept_in_place():
    lines = _lines("codex_kvsankar_golden.jsonl")
    stamp = lines[-1]["timestamp"]
    lines[6:6] = [
        {"timestamp": stamp, "type": "response_item", "payload": {"type": "ghost_snapshot", "ghost_commit": {
            "id": "3f1c2a", "parent": "9e8d7c", "preexisting_untracked_files": [], "preexisting_untracked_dirs": []}}},
        {"timestamp": stamp, "type": "compacted", "payload": {"message": "Summary: read config.json, port 8080.",
                                                              "replacement_history": []}},
        {"timestamp": stamp, "type": "response_item", "payload": {"type": "compaction", "encrypted_content": "gAAAAB"}},
        {"timestamp": stamp, "type": "event_msg", "payload": {"type": "turn_aborted", "reason": "interrupted"}},
    ]
    run = _import("rollout.jsonl", lines)
    notes = [e.text for e in run.events if e.type == "note" and e.kind == "system"]
    assert "the conversation before this point was compacted: Summary: read config.json, port 8080." in notes
    assert "the conversation before this point was compacted (its summary is encrypted)" in notes
    assert "the turn was aborted (interrupted)" in notes
    assert not any(e.type == "note" and e.kind == "unrecognised" for e in run.events)
    assert "response_item ghost_snapshot ×1" in run.warnings[0]


def test_claude_code_server_tool_results_answer_their_calls():
    lines = _lines("claude_code_kvsankar_golden.jsonl")
    first = next(line for line in lines if line["type"] == "assistant")
    first["message"]["content"][:0] = [
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "port 8080"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
         "content": [{"type": "web_search_result", "title": "Ports", "url": "https://example.org", "encrypted_content": "x"}]},
    ]
    run = _import("session.jsonl", lines)
    observed = [e for e in run.events if e.type == "observation" and e.tool == "web_search"]
    assert len(observed) == 1 and "Ports" in observed[0].text
    assert not any(e.type == "note" and e.kind == "unrecognised" for e in run.events)


def _inspect_sample() -> dict:
    data = json.loads((TRACES / "inspect_ai_browser_excerpt.json").read_text())
    return data


def _inspect(data: dict) -> object:
    (run,) = runs_from_bytes("log.json", json.dumps(data).encode())
    return run


def test_inspect_sample_error_ends_the_run_stopped_with_its_message():
    data = _inspect_sample()
    data["samples"][0]["error"] = {"message": "RuntimeError('sandbox died')", "traceback": "Traceback ...",
                                   "traceback_ansi": "\x1b[31mTraceback\x1b[0m"}
    end = _inspect(data).events[-1]
    assert (end.type, end.outcome, end.reason) == ("run_ended", "stopped", "error: RuntimeError('sandbox died')")


def test_inspect_sample_limit_ends_the_run_stopped_with_its_kind():
    data = _inspect_sample()
    data["samples"][0]["limit"] = {"type": "token", "limit": 100000}
    end = _inspect(data).events[-1]
    assert (end.outcome, end.reason) == ("stopped", "token limit (100000)")


def test_inspect_scores_are_kept_as_a_note_and_the_answer_stands():
    data = _inspect_sample()
    data["samples"][0]["scores"] = {"match": {"value": "C", "answer": "Yes", "explanation": "matched the target"}}
    run = _inspect(data)
    notes = [e.text for e in run.events if e.type == "note" and e.kind == "system"]
    assert notes == ["score match: C\n  answer: Yes\n  explanation: matched the target"]
    assert run.events[-1].outcome == "answer"


def test_inspect_server_tool_use_redacted_reasoning_and_tool_error_messages_are_kept():
    data = _inspect_sample()
    messages = data["samples"][0]["messages"]
    assistant = next(m for m in messages if m["role"] == "assistant")
    assistant["content"] = [
        {"type": "reasoning", "reasoning": "EqQBCkYIBRgCKkC0ZW5jcnlwdGVk", "summary": "Looking the page up.", "redacted": True},
        {"type": "tool_use", "tool_type": "web_search", "id": "ws_1", "name": "web_search",
         "arguments": "{\"query\": \"inspect ai\"}", "result": "3 results: inspect.aisi.org.uk", "error": None},
        {"type": "text", "text": "Going to the page."},
    ]
    tool = next(m for m in messages if m["role"] == "tool")
    tool["error"] = {"type": "timeout", "message": "Command timed out after 180 seconds."}
    run = _inspect(data)
    first = next(e for e in run.events if e.type == "decision")
    assert first.thought.startswith("Looking the page up.") and "EqQB" not in first.thought
    assert [a.tool for a in first.actions][:1] == ["web_search"] and first.actions[0].args == {"query": "inspect ai"}
    observed = [e for e in run.events if e.type == "observation"]
    assert observed[0].tool == "web_search" and observed[0].text == "3 results: inspect.aisi.org.uk"
    failed = next(e for e in observed if e.tool != "web_search")
    assert failed.error and failed.text.endswith("Command timed out after 180 seconds.")


def test_an_estimated_usage_counts_every_word_before_it_when_recorded_usages_stand_between():
    """A step without recorded tokens is estimated from the context's words before it, as the fold
    counts them: the words of recorded steps, their notes and results too (the builder counts
    them only up to the last estimated step)."""
    from engine.core.state import RunState, estimate_tokens
    from engine.stored.importers.build import Draft, new_action

    draft = Draft("mixed", "test")
    draft.user("count the words of every file")
    for number in range(6):
        step = draft.new_step(f"step {number} reads a file")
        draft.call(step, new_action(tool="read", args={"path": f"f {number}.txt"}, call_id=f"c{number}"))
        draft.result(f"c{number}", f"file {number} holds {number} words and more")
        if number % 3 != 2:
            step.record_usage(100 + number, 10)
        draft.note("user", f"note after step {number}")
    made = draft.made()
    state = RunState.start(made.header)
    estimated = 0
    for event in made.events:
        if event.type == "decision" and event.usage.estimated:
            assert event.usage.input_tokens == estimate_tokens(state.context_words), event.step
            estimated += 1
        state.apply(event)
    assert estimated == 2
