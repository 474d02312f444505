"""Foreign formats: the seeds' text traces and OpenAI-style chat logs import to the expected steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.stored.importers import detect_format, load_any
from engine.stored.replay import Timeline
from engine.core.state import fold
from engine.stored.transcript import TranscriptError

DATA = Path(__file__).resolve().parent / "data"


def _steps(transcript):
    """(step, thought, [calls], [(observation, error)], answer) per decision."""
    out = []
    for e in transcript.events:
        if e.type == "decision":
            out.append([e.step, e.thought, [(a.tool, a.args) for a in e.actions], [], e.answer])
        elif e.type == "observation":
            out[-1][3].append((e.text, e.error))
    return [tuple(s) for s in out]


def test_seed_000_hallucinating_trace():
    t = load_any(DATA / "trace_000_hallucinating.txt")
    assert t.header.scenario == "imported" and t.header.options["format"] == "trace"
    assert t.header.task_text == "How many copies of Il Gattopardo are available?"
    steps = _steps(t)
    assert len(steps) == 5
    assert steps[0][2] == [("web_search", {"input": "Il Gattopardo copies"})]
    assert steps[0][3][0][1] is True and "does not exist" in steps[0][3][0][0]
    assert steps[1] == (2, "I need the total copies.", [("catalog", {"input": "Il Gattopardo"})], [("5", False)], None)
    assert steps[3][2] == [("calc", {"input": "5 - 3"})] and steps[3][3] == [("2", False)]
    assert steps[4] == (5, "I have the number.", [], [], "2")
    end = t.events[-1]
    assert end.type == "run_ended" and end.outcome == "answer" and end.answer == "2" and end.step == 5
    assert [tool.name for tool in t.header.tools] == ["catalog", "loans", "calc"]
    state = fold(t.header, t.events)
    assert state.tool_calls == {"catalog": 1, "loans": 1, "calc": 1}
    assert state.input_tokens > 0 and state.output_tokens > 0


def test_seed_000_stuck_trace_ends_unfinished_on_the_repeated_action():
    t = load_any(DATA / "trace_000_stuck.txt")
    steps = _steps(t)
    assert [s[0] for s in steps] == [1, 2]
    assert steps[0][2] == steps[1][2] == [("catalog", {"input": "Il Gattopardo"})]
    assert steps[1][3] == []
    assert not any(e.type == "run_ended" for e in t.events)


def test_seed_001_trace_with_keyword_arguments_and_answer():
    t = load_any(DATA / "trace_001_cases.txt")
    steps = _steps(t)
    assert steps == [
        (1, "I need to know how many cases are open.", [("search_cases", {"status": "open"})], [("47 cases", False)], None),
        (2, "Now I need how many of them are older than a week.",
         [("search_cases", {"status": "open", "older_than_days": 7})], [("12 cases", False)], None),
        (3, "I have what I need.", [], [], "12 of the 47 open cases are older than a week."),
    ]
    assert t.header.task_text == ""


def test_seed_004_calculator_trace():
    t = load_any(DATA / "trace_004_calculator.txt")
    steps = _steps(t)
    assert steps[0][2] == [("calculator", {"expression": "17 * 23 - 100"})] and steps[0][3] == [("291", False)]
    assert steps[-1][4] == "291" and t.events[-1].answer == "291"


def test_multi_line_fields_continue_the_line_above(tmp_path):
    path = tmp_path / "multi.txt"
    path.write_text(
        "Question: Two\n  lines?\n"
        "Thought: first line\nsecond line\n"
        "Action: search[x]\n"
        "Observation: row 1\nrow 2\n\n"
        "Final Answer: done\nreally\n"
    )
    t = load_any(path)
    steps = _steps(t)
    assert t.header.task_text == "Two\nlines?"
    assert steps[0][1] == "first line\nsecond line" and steps[0][3] == [("row 1\nrow 2", False)]
    assert steps[1][4] == "done\nreally"


def test_openai_chat_log_as_a_list():
    t = load_any(DATA / "chat_calculator.json")
    assert t.header.options["format"] == "chat"
    assert t.header.task_text == "What is 17 * 23, minus 100?"
    steps = _steps(t)
    assert steps[0][2] == [("calculator", {"expression": "17 * 23 - 100"})]
    assert steps[0][3] == [("291", False)]
    assert steps[1][4] == "17 * 23 is 391, minus 100 is 291."
    decision = t.events[0]
    assert decision.actions[0].call_id == "call_1"


def test_openai_chat_log_as_an_object_with_parallel_calls_and_bad_arguments():
    t = load_any(DATA / "chat_support.json")
    steps = _steps(t)
    assert [a[0] for a in steps[0][2]] == ["get_order_status", "estimate_delivery"]
    observations = [e for e in t.events if e.type == "observation" and e.step == 1]
    assert [(o.index, o.tool) for o in observations] == [(0, "get_order_status"), (1, "estimate_delivery")]
    assert steps[1][1] == "It was delivered. I open a return request."
    bad = t.events[[e.type for e in t.events].index("decision", 3)].actions[0]
    assert bad.tool == "open_return_request" and bad.args_error and "not a JSON object" in bad.args_error
    assert t.events[-1].type == "run_ended"


def test_chat_log_in_the_trace_style_of_seed_001(tmp_path):
    messages = [
        {"role": "system", "content": "Answer in the format..."},
        {"role": "user", "content": "How many open cases?"},
        {"role": "assistant", "content": "Thought: I search.\nAction: search_cases(status=\"open\")"},
        {"role": "user", "content": "Observation: 47 cases"},
        {"role": "assistant", "content": "Thought: Done.\nAnswer: 47"},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages, indent=2))
    steps = _steps(load_any(path))
    assert steps == [
        (1, "I search.", [("search_cases", {"status": "open"})], [("47 cases", False)], None),
        (2, "Done.", [], [], "47"),
    ]


def test_chat_log_as_json_lines(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"role": "user", "content": "hi"}\n'
        '{"role": "assistant", "content": null, "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{}"}}]}\n'
        '{"role": "tool", "tool_call_id": "1", "content": "ok"}\n'
        '{"role": "assistant", "content": "bye"}\n'
    )
    assert _steps(load_any(path)) == [(1, "", [("f", {})], [("ok", False)], None), (2, "", [], [], "bye")]


@pytest.mark.parametrize(
    "content, where, message",
    [
        ("", "", "the file is empty"),
        ("Hello there\nThought: x\n", ":1:", "found 'Hello there'; tried: agent-tui transcript; OpenAI chat"),
        ("Thought: x\nAction: ???\n", ":2:", "expected 'Action: tool[argument]'"),
        ("Observation: 5\n", ":1:", "an Observation: before any Thought:"),
        ("Thought: a\nFinal Answer: 1\nThought: b\n", ":3:", "goes on after its final answer"),
        ('[\n  {"role": "user", "content": "q"},\n  {"role": "robot"}\n]', ":", "it has a task, 1 unrecognised note but no assistant turn"),
        ('{"messages": [\n  {"content": "q"}\n]}', ":", "it has 1 unrecognised note but no assistant turn"),
        ('[{"role": "user",\n "content": }]', ":2:", "not JSON"),
        ('{"type": "header", "format_version": 4}\n', ":1:", "format version 4 is newer"),
        ("42\n", ":1:", "found '42'; tried:"),
        ('{"id": 3, "input": "x"}\n{"id": 4}\n', ":1:", 'found an object with keys "id", "input"; tried:'),
        ('{"timestamp": "t", "type": "session_meta", "payload": {}}\n', ":1:", "a Codex rollout with no message (found \"type\": \"session_meta\")"),
    ],
)
def test_unknown_or_broken_input_names_file_line_and_what_was_expected(tmp_path, content, where, message):
    path = tmp_path / "input.txt"
    path.write_text(content)
    with pytest.raises(TranscriptError) as info:
        load_any(path)
    text = str(info.value)
    assert text.startswith(f"{path}{where}") and message in text


def test_format_is_detected_or_forced(tmp_path):
    assert detect_format("x", "Question: q\n") == "trace"
    assert detect_format("x", '[{"role": "user"}]') == "chat"
    assert detect_format("x", '{"type": "header"}\n') == "jsonl"
    path = tmp_path / "trace.log"
    path.write_text((DATA / "trace_004_calculator.txt").read_text())
    assert len(load_any(path, "trace").events) == 4
    with pytest.raises(TranscriptError, match=r"trace.log:1: not an agent-tui transcript; it reads as text trace"):
        load_any(path, "jsonl")
    with pytest.raises(TranscriptError, match=r"trace.log:1: not OpenAI chat messages .*; it reads as text trace"):
        load_any(path, "chat")


def test_imports_replay_like_any_run():
    t = load_any(DATA / "trace_000_hallucinating.txt")
    timeline = Timeline(t.header, t.events)
    assert timeline.steps() == 5
    assert [m.kind for m in timeline.markers()] == ["error", "end"]
    assert timeline.state_at(len(timeline)) == fold(t.header, t.events)


def test_show_and_replay_open_foreign_formats(capsys):
    from tui.cli import main

    assert main(["show", str(DATA / "trace_000_stuck.txt")]) == 0
    out = capsys.readouterr().out
    assert "agent-tui · imported · trace" in out and out.strip().endswith("outcome: unfinished (the log ends here)")
    assert main(["replay", str(DATA / "chat_calculator.json"), "--headless"]) == 0
    assert "outcome: answer after 2 steps: 17 * 23 is 391, minus 100 is 291." in capsys.readouterr().out
    assert main(["show", str(DATA / "chat_calculator.json"), "--format", "trace"]) == 2
    assert "chat_calculator.json:1:" in capsys.readouterr().err


# -- the new formats: what is kept, nested, matched ----------------------------------

TRACES = DATA / "traces"


def _write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_parts_that_cannot_be_mapped_are_kept_raw_and_counted_in_one_warning(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([
        {"role": "user", "content": "q"},
        {"role": "robot", "content": "beep"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "zz", "content": "stray result"},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ], indent=1))
    t = load_any(path)
    notes = [(e.kind, e.text) for e in t.events if e.type == "note"]
    assert notes == [("unrecognised", 'a message with "role": "robot": beep'),
                     ("unrecognised", "a tool result for call 'zz' that no earlier message made: stray result")]
    (warning,) = t.warnings
    assert warning.startswith(f"{path}: 2 parts could not be mapped") and '1 × a message with "role": "robot" (line 6)' in warning
    assert "1 × a tool result for call 'zz' that no earlier message made (line 23)" in warning
    assert [e.text for e in t.events if e.type == "observation"] == ["ok"] and t.events[-1].answer == "done"


def test_claude_code_sidechain_is_nested_under_the_task_call(tmp_path):
    def line(kind, content, side=False, mid=None):
        message = {"role": kind, "content": content}
        if mid:
            message["id"] = mid
        return {"type": kind, "isSidechain": side, "sessionId": "s", "message": message}

    path = _write(tmp_path, "session.jsonl", [
        line("user", "Find the bug"),
        line("assistant", [{"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "search the code"}}], mid="m1"),
        line("user", "search the code", side=True),
        line("assistant", [{"type": "tool_use", "id": "g1", "name": "Grep", "input": {"pattern": "bug"}}], side=True, mid="m2"),
        line("user", [{"type": "tool_result", "tool_use_id": "g1", "content": "a.py:3"}], side=True),
        line("assistant", [{"type": "text", "text": "It is in a.py"}], side=True, mid="m3"),
        line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "It is in a.py"}]),
        line("assistant", [{"type": "text", "text": "The bug is in a.py line 3."}], mid="m4"),
        {"type": "queue-operation", "operation": "dequeue", "sessionId": "s"},
    ])
    t = load_any(path)
    types = [(e.type, getattr(e, "kind", None)) for e in t.events]
    assert types == [("decision", None), ("note", "subagent"), ("note", "subagent"), ("note", "subagent"), ("note", "subagent"),
                     ("observation", None), ("decision", None), ("run_ended", None)]
    nested = [e.text for e in t.events if e.type == "note"]
    assert nested == ["user: search the code", 'action: Grep({"pattern": "bug"})', "observe: a.py:3", "says: It is in a.py"]
    assert all(e.step == 1 for e in t.events if e.type == "note")
    assert "queue-operation ×1" in t.warnings[0]


def test_claude_code_sidechains_of_two_task_calls_in_one_step_each_name_their_call(tmp_path):
    """Claude Code 1.0 writes each sub-agent inline as its own `parentUuid` chain, its root the Task's
    prompt: each chain is nested under the step of its Task call and says which of the step's calls it
    is, even when the two chains' lines are interleaved and the second call's chain comes first."""
    def line(kind, content, uuid, parent=None, side=False, mid=None):
        message = {"role": kind, "content": content, **({"id": mid} if mid else {})}
        return {"type": kind, "isSidechain": side, "sessionId": "s", "uuid": uuid, "parentUuid": parent, "message": message}

    tasks = [{"type": "tool_use", "id": f"t{n}", "name": "Task", "input": {"description": f"job {n}", "prompt": f"do job {n}"}}
             for n in (1, 2)]
    path = _write(tmp_path, "session.jsonl", [
        line("user", "Do both jobs", "u0"),
        line("assistant", tasks, "a0", "u0", mid="m1"),
        line("user", "do job 2", "b1", side=True),
        line("user", "do job 1", "c1", side=True),
        line("assistant", [{"type": "tool_use", "id": "g1", "name": "Grep", "input": {"pattern": "one"}}], "c2", "c1", side=True, mid="m2"),
        line("assistant", [{"type": "text", "text": "job 2 done"}], "b2", "b1", side=True, mid="m3"),
        line("user", [{"type": "tool_result", "tool_use_id": "g1", "content": "a.py"}], "c3", "c2", side=True),
        line("assistant", [{"type": "text", "text": "job 1 done"}], "c4", "c3", side=True, mid="m4"),
        line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "job 1 done"},
                      {"type": "tool_result", "tool_use_id": "t2", "content": "job 2 done"}], "u1", "a0"),
        line("assistant", [{"type": "text", "text": "Both done."}], "a1", "u1", mid="m5"),
    ])
    t = load_any(path)
    nested = [e.text for e in t.events if e.type == "note"]
    assert nested == ["Task 2 (job 2): user: do job 2", "Task 1 (job 1): user: do job 1", 'Task 1 (job 1): action: Grep({"pattern": "one"})',
                      "Task 2 (job 2): says: job 2 done", "Task 1 (job 1): observe: a.py", "Task 1 (job 1): says: job 1 done"]
    assert all(e.step == 1 for e in t.events if e.type == "note") and t.events[-1].answer == "Both done."


def test_codex_parallel_calls_are_one_step_and_results_match_by_call_id(tmp_path):
    def item(payload):
        return {"timestamp": "t", "type": "response_item", "payload": payload}

    path = _write(tmp_path, "rollout.jsonl", [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "x", "instructions": "Be brief."}},
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}),
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Compare a and b"}]}),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Read both"}], "encrypted_content": "x"}),
        item({"type": "function_call", "name": "read", "arguments": '{"path": "a"}', "call_id": "ca"}),
        item({"type": "function_call", "name": "read", "arguments": '{"path": "b"}', "call_id": "cb"}),
        item({"type": "function_call_output", "call_id": "cb", "output": "B"}),
        item({"type": "function_call_output", "call_id": "ca", "output": {"content": "A", "success": False}}),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "They differ."}]}),
    ])
    t = load_any(path)
    decisions = [e for e in t.events if e.type == "decision"]
    assert len(decisions) == 2 and [a.args for a in decisions[0].actions] == [{"path": "a"}, {"path": "b"}]
    assert [(e.index, e.text, e.error) for e in t.events if e.type == "observation"] == [(0, "A", True), (1, "B", False)]
    assert t.header.options["system_prompt"] == "Be brief." and t.header.task_text == "Compare a and b"
    assert [e.kind for e in t.events if e.type == "note"] == ["system"]
    assert t.events[-1].answer == "They differ."


def test_a_zip_that_is_not_an_inspect_log_says_it_is_a_zip(tmp_path):
    import zipfile

    path = tmp_path / "logs.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.txt", "x")
        archive.writestr("b/c.json", "{}")
    with pytest.raises(TranscriptError) as info:
        load_any(path)
    assert str(info.value) == f"{path}:1: a zip archive (2 files: a.txt, b/c.json), not an Inspect AI .eval log (expected header.json and samples/*.json)"
    with pytest.raises(TranscriptError, match="a zip archive, not a Codex CLI rollout JSONL"):
        load_any(path, "codex")


@pytest.mark.parametrize("member", ["samples/1_epoch_1.json", "header.json"])
def test_an_eval_member_over_the_line_cap_is_refused_without_unpacking_it_whole(tmp_path, member):
    """A member is one line of JSON, packed: a few kB on disk can unpack to gigabytes.
    One over the transcript line cap is refused as a line over the cap is."""
    import zipfile

    from engine.stored.reader import MAX_LINE_BYTES

    sample = {"id": 1, "epoch": 1, "input": "hi", "messages": [{"role": "user", "content": "hi"},
                                                               {"role": "assistant", "content": "hello"}]}
    path = tmp_path / "bomb.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        members = {"header.json": json.dumps({"version": 2, "eval": {"task": "t"}}), "samples/1_epoch_1.json": json.dumps(sample)}
        members[member] = "{" + " " * MAX_LINE_BYTES + '"id": 1, "epoch": 1, "messages": []}'
        for name, text in members.items():
            archive.writestr(name, text)
    assert path.stat().st_size < 1_000_000
    with pytest.raises(TranscriptError, match=f"{member} in the archive is longer than 32 MiB"):
        load_any(path)


@pytest.mark.parametrize("name, fmt", [
    ("claude_code_kvsankar_golden.jsonl", "claude-code"), ("codex_kvsankar_golden.jsonl", "codex"),
    ("swe_agent_test_repo.traj", "swe-agent"), ("mini_swe_agent_local.traj.json", "mini-swe-agent"),
    ("inspect_ai_message_deduplication.eval", "inspect"), ("inspect_ai_browser_excerpt.json", "inspect"),
    ("react_paper_hotpotqa_webthink_simple6.txt", "react"), ("langchain_docs_debugging_verbose.txt", "langchain"),
    ("chat_pydantic_ai_tool_output_exchange.json", "chat"),
])
def test_formats_are_detected_from_content_not_the_file_name(tmp_path, name, fmt):
    path = tmp_path / "renamed.log"
    path.write_bytes((TRACES / name).read_bytes())
    assert load_any(path).header.options["format"] == fmt
    assert load_any(path, fmt).header.options["format"] == fmt


def test_a_forced_format_that_does_not_fit_is_refused_with_the_line(tmp_path):
    with pytest.raises(TranscriptError, match=r"codex_kvsankar_golden.jsonl:1: not a Claude Code session JSONL; it reads as Codex"):
        load_any(TRACES / "codex_kvsankar_golden.jsonl", "claude-code")
    with pytest.raises(TranscriptError, match=r"swe_agent_test_repo.traj:1: not a ReAct numbered text .*; it reads as SWE-agent"):
        load_any(TRACES / "swe_agent_test_repo.traj", "react")


def test_a_file_of_several_runs_opens_its_first_and_says_how_many():
    t = load_any(TRACES / "inspect_ai_popularity_excerpt.json")
    assert t.header.options["sample_id"] == 1 and t.events[-1].answer == "Yes"
    path = TRACES / "inspect_ai_popularity_excerpt.json"
    assert t.warnings[-1] == (f"{path} holds 3 runs; this is run 1 of 3 (open another with --run 2 .. --run 3; "
                              f"`agent-tui show {path} --runs` lists them)")


def test_the_warning_counts_unmapped_parts_by_kind_and_names_where_they_stand(tmp_path):
    path = tmp_path / "chat.json"
    messages = [{"role": "user", "content": "q"}] + [{"role": "robot", "content": f"beep {i}"} for i in range(12)]
    messages += [{"role": "oracle", "content": "hm"}, {"role": "assistant", "content": "done"}]
    path.write_text(json.dumps(messages, indent=1))
    t = load_any(path)
    assert sum(e.type == "note" and e.kind == "unrecognised" for e in t.events) == 13, "every part is kept"
    (warning,) = t.warnings
    assert warning == (f'{path}: 13 parts could not be mapped and are kept as \'unrecognised\' notes: '
                       f'12 × a message with "role": "robot" (line 6, line 10, line 14, …); '
                       f'1 × a message with "role": "oracle" (line 54)')
