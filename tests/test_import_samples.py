"""Real traces from public repositories (tests/data/traces, see SOURCES.md) import with every
tool call, result and answer of the source: each count is read once straight from the source
file and once from the import, and both must equal the figure in SOURCES.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.stored.importers import load_runs
from engine.core.state import fold
from engine.stored.transcript import TranscriptError
from tests.support.samples import SAMPLES, import_counts, source_counts

TRACES = Path(__file__).resolve().parent / "data" / "traces"


# -- counting the source itself ---------------------------------------------------


@pytest.mark.parametrize("name, fmt, runs, calls, results, answers", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_real_sample_keeps_every_call_result_and_answer(name, fmt, runs, calls, results, answers):
    path = TRACES / name
    expected = (runs, calls, results, answers)
    assert source_counts(path, fmt) == expected
    imported = load_runs(path)
    assert {r.header.options["format"] for r in imported} == {fmt}
    assert import_counts(imported) == expected
    for run in imported:
        fold(run.header, run.events)  # replays like any run
        assert any(e.type == "decision" for e in run.events)


def _notes(run, kind: str) -> list[str]:
    return [e.text for e in run.events if e.type == "note" and e.kind == kind]


def test_a_multi_turn_chat_is_one_run_with_the_user_turns_shown_and_the_system_prompt_kept():
    runs = load_runs(TRACES / "chat_openai_cookbook_toy_chat_fine_tuning.jsonl")
    tennis = runs[1]
    assert tennis.header.task_text == "I lost my tennis match today."
    assert tennis.header.options["system_prompt"] == "You are a happy assistant that puts a positive spin on everything."
    assert _notes(tennis, "user") == ["But I trained so hard!", "I'm going to switch to golf.", "I don't even know how to play golf."]
    decisions = [e for e in tennis.events if e.type == "decision"]
    assert [d.thought for d in decisions[:3]] == ["It's ok, it happens to everyone.", "It will pay off next time.", "Golf is fun too!"]
    assert tennis.events[-1].answer == "It's easy to learn!"
    assert runs[2].header.options.get("system_prompt") is None  # the third conversation has none


def test_a_final_result_call_is_the_structured_answer_and_the_request_body_declares_the_tools():
    (run,) = load_runs(TRACES / "chat_pydantic_ai_tool_output_exchange.json")
    assert run.events[-1].type == "run_ended" and json.loads(run.events[-1].answer) == {"city": "Mexico City", "country": "Mexico"}
    assert [t.name for t in run.header.tools] == ["get_user_country", "final_result"]
    final = run.header.tools[1]
    assert {p["name"] for p in final.parameters} == {"city", "country"} and final.description.startswith("The final response")
    (body,) = load_runs(TRACES / "chat_pydantic_ai_tool_output_request.json")
    assert not any(e.type == "run_ended" for e in body.events) and body.header.options["model"] == "gpt-4o"


def test_claude_code_thinking_text_and_results_by_id():
    (run,) = load_runs(TRACES / "claude_code_kvsankar_golden.jsonl")
    step2 = [e for e in run.events if e.type == "decision"][1]
    assert step2.thought.startswith("The user wants me to modify the config.")
    assert "Let me update the port to 3000." in step2.thought
    observations = [(e.tool, e.text) for e in run.events if e.type == "observation"]
    assert observations == [("Read", '{"debug": true, "port": 8080}'), ("Edit", "File updated successfully")]
    (simonw,) = load_runs(TRACES / "claude_code_simonw_sample_session.jsonl")
    assert simonw.header.options["title"] and _notes(simonw, "user") == ["Now add a goodbye function"]


def test_codex_user_turns_context_and_unanswered_calls():
    (run,) = load_runs(TRACES / "codex_kvsankar_with_escalation.jsonl")
    assert run.header.task_text == "Create a test file"
    assert _notes(run, "user")[0] == "Yes, overwrite it with something else"
    assert "bookkeeping" in run.warnings[0] and "turn_context" in run.warnings[0]
    assert "the turn was aborted (user_cancelled)" in _notes(run, "system")
    first = [e for e in run.events if e.type == "decision"][0]
    assert first.thought == "Planning to create test.txt file\nI'll create a test file for you."


def test_a_codex_rollout_without_an_assistant_turn_is_refused_not_imported_empty():
    with pytest.raises(TranscriptError, match="no step could be read from this codex log: it has a task"):
        load_runs(TRACES / "codex_simonw_sample_session.jsonl")


def test_swe_agent_submission_and_mini_swe_agent_commands():
    (run,) = load_runs(TRACES / "swe_agent_test_repo.traj")
    assert run.events[-1].answer.lstrip().startswith("diff --git a/tests/missing_colon.py")
    assert run.header.options["system_prompt"].startswith("SETTING:")
    (mini,) = load_runs(TRACES / "mini_swe_agent_github_issue.traj.json")
    first = [e for e in mini.events if e.type == "decision"][0]
    assert first.actions[0].tool == "bash" and first.actions[0].args["command"].startswith("cat /Users/fuchur")
    errors = [e.error for e in mini.events if e.type == "observation"]
    assert errors[0] is True and errors[1] is False  # <returncode>1</returncode>, then 0
    (recorded,) = load_runs(TRACES / "mini_swe_agent_recorded_v2.traj.json")
    end = recorded.events[-1]
    assert end.type == "run_ended" and end.answer == "3\n" and end.reason == "Submitted"
    assert [a.args["command"] for e in recorded.events if e.type == "decision" for a in e.actions][1] == "wc -l < notes.txt"


def test_react_paper_prompt_is_six_runs_and_reflexion_keeps_its_reflections():
    runs = load_runs(TRACES / "react_paper_hotpotqa_webthink_simple6.txt")
    assert [r.events[-1].answer for r in runs] == [
        "1,800 to 7,000 ft", "Richard Nixon", "The Saimaa Gesture", "director, screenwriter, actor", "Arthur's Magazine", "yes",
    ]
    first = [e for e in runs[0].events if e.type == "decision"][0]
    assert first.actions[0].tool == "Search" and first.actions[0].args == {"input": "Colorado orogeny"}
    trials = load_runs(TRACES / "react_reflexion_reflections.txt")
    assert [any(e.type == "run_ended" for e in t.events) for t in trials] == [True, False]
    notes = _notes(trials[0], "unrecognised") + _notes(trials[1], "unrecognised")
    assert sum("Reflection: I " in n for n in notes) == 2
    assert "could not be mapped" in trials[0].warnings[0]


def test_langchain_verbose_log_reads_json_action_inputs():
    (run,) = load_runs(TRACES / "langchain_docs_debugging_verbose.txt")
    decisions = [e for e in run.events if e.type == "decision"]
    assert decisions[0].thought.startswith("First, I need to find out who directed")
    assert decisions[2].actions[0].args == {"operation": "subtract", "operands": [2023, 1970]}
    assert decisions[0].actions[0].args == {"input": "Director of 2023 film Oppenheimer"}


def _decisions(run) -> list:
    return [e for e in run.events if e.type == "decision"]


def test_claude_code_parallel_calls_are_one_step_and_the_task_subagent_lines_are_nested():
    """Claude Code 2.1 writes a Task sub-agent's messages into the main file as `progress` lines
    (`data.type` agent_progress): each is kept, nested under the Task step, none skipped."""
    (run,) = load_runs(TRACES / "claude_code_spotter_task_subagent.jsonl")
    first, task = _decisions(run)[:2]
    assert [a.tool for a in first.actions] == ["WebFetch", "WebSearch", "WebSearch", "WebSearch"]
    assert first.actions[2].args == {"query": "dialyxir igniter install elixir"}
    assert task.actions[0].tool == "Task" and task.actions[0].args["subagent_type"] == "Plan"
    nested = [e for e in run.events if e.type == "note" and e.kind == "subagent"]
    assert [n.step for n in nested] == [task.step] * 5
    assert nested[0].text.startswith("user: Draft bead content for setting up Credo")
    assert nested[1].text == 'action: Read({"file_path": "/home/marco/projects/spotter"})'
    assert nested[2].text == "observe: EISDIR: illegal operation on a directory, read"
    assert not _notes(run, "unrecognised")  # a stop_hook_summary line is bookkeeping, counted
    assert run.warnings == [f"{TRACES / 'claude_code_spotter_task_subagent.jsonl'}: 1 bookkeeping line without a message "
                            "was skipped (system stop_hook_summary ×1)"]
    assert _notes(run, "user") == ["create the beads"]
    assert run.events[-1].answer.startswith("## Beads Created")


def test_a_claude_code_subagent_file_is_read_as_its_own_run():
    (run,) = load_runs(TRACES / "claude_code_spotter_subagent_file.jsonl")
    assert run.header.task_text.startswith("Search hex.pm for the latest versions of these Elixir packages")
    first = _decisions(run)[0]
    assert [a.tool for a in first.actions] == ["WebSearch"] * 6
    assert first.actions[0].args["query"].startswith("hex.pm opentelemetry_api")
    results = [e.text for e in run.events if e.type == "observation" and e.step == 2]
    assert results[0].startswith("The latest stable version number is **1.5.0**")
    assert run.events[-1].answer.startswith("Perfect! I now have all the version information needed.")


def test_codex_desktop_parallel_calls_share_a_step_and_results_follow_their_call_ids():
    (run,) = load_runs(TRACES / "codex_localpush_parallel_calls.jsonl")
    assert [len(d.actions) for d in _decisions(run)] == [2, 4, 0]
    second = _decisions(run)[1]
    assert {a.tool for a in second.actions} == {"exec_command"}
    assert second.actions[3].call_id == "call_k76Y0IH8UQwIJv4p9DfctIv1"
    # the source redacted the arguments: kept, and said, not silently emptied
    assert second.actions[0].args_error.startswith("the arguments are not a JSON object: [REDACTED_ARGUMENTS len=93")
    outputs = [(e.step, e.index, e.text) for e in run.events if e.type == "observation"]
    assert outputs[5] == (second.step, 3, "[REDACTED_OUTPUT len=2462 sha=ee7320f8]")
    assert run.header.options["session_cli_version"] == "0.104.0-alpha.1"
    assert run.events[-1].answer == "[REDACTED_TEXT len=15927 sha=093a1686]"


def test_mini_swe_agent_runs_the_shell_block_only_and_a_format_error_runs_nothing():
    """A real SWE-bench run (gemini-3-pro, mini-swe-agent 1.15): a ```python block in the reasoning is
    prose, not a second command, and a reply with two ```bash blocks was refused by mini-swe-agent
    (its format error follows), so it ran nothing."""
    (run,) = load_runs(TRACES / "mini_swe_agent_gruckion_django_13670.traj.json")
    decisions = _decisions(run)
    assert [len(d.actions) for d in decisions] == [1] * 10 + [0] + [1] * 11
    second = decisions[1]
    assert second.actions[0].args["command"].startswith("cat <<'EOF' > reproduce_issue.py\nimport datetime")
    assert "```python" in second.thought and "cat <<'EOF'" not in second.thought
    refused = decisions[10]
    assert 'grep -n "def [a-zA-Z]" django/utils/dateformat.py' in refused.thought
    assert 'grep -i "year" django/utils/dateformat.py' in refused.thought
    (note,) = [e for e in run.events if e.type == "note"]
    assert note.kind == "system" and note.step == refused.step
    assert note.text.startswith("Please always provide EXACTLY ONE action in triple backticks, found 2 actions.")
    assert decisions[11].actions[0].args["command"] == 'grep -n -i "year" django/utils/dateformat.py'
    assert run.events[-1].answer.startswith("diff --git a/django/utils/dateformat.py b/django/utils/dateformat.py")


def test_langchain_coloured_console_output_without_observation_labels():
    """LangChain 0.1+ prints a tool's output in its colour with no `Observation:` label, glued to the
    model's next words; the colour codes are the only boundary (pinecone-io/examples, 2025)."""
    (run,) = load_runs(TRACES / "langchain_pinecone_sql_agent_coloured.txt")
    decisions = _decisions(run)
    assert [d.actions[0].tool for d in decisions[:4]] == ["sql_db_list_tables", "sql_db_schema", "sql_db_query_checker", "sql_db_query"]
    assert decisions[1].thought.startswith('There is a table named "stocks"')
    assert decisions[1].actions[0].args == {"input": "stocks"}
    observations = [e.text for e in run.events if e.type == "observation"]
    assert observations[0] == "stocks"
    assert observations[3] == "[('ABC', 232.0, '2023-01-03'), ('XYZ', 798.0, '2023-01-03'), ('ABC', 225.0, '2023-01-04'), ('XYZ', 795.0, '2023-01-04')]"
    assert not any("\x1b" in e.text for e in run.events if e.type == "observation")
    assert run.events[-1].answer.startswith("The multiplication of the ratio between stock prices for 'ABC' and 'XYZ'")
    # the notebook's own print after the chain is kept, and said
    assert _notes(run, "unrecognised") == ["a line after the final answer: Result: The multiplication of the ratio between "
                                           "stock prices for 'ABC' and 'XYZ' on January 3rd and January 4th is approximately 0.0823."]


def test_langchain_conversational_agent_answers_with_ai_and_the_docstore_agent_with_finish():
    (chat,) = load_runs(TRACES / "langchain_pinecone_conversational_agent.txt")
    first, last = _decisions(chat)
    assert first.thought == "Do I need to use a tool? Yes" and first.actions[0].args == {"input": "10,000, 8%, 5 years"}
    assert [e.text for e in chat.events if e.type == "observation"] == ["Answer: 14693.280768000006"]
    assert last.thought == "Do I need to use a tool? No"
    assert chat.events[-1].answer.startswith("The result of an investment of $10,000 growing at 8% annually for 5 years")
    (docstore,) = load_runs(TRACES / "langchain_pinecone_docstore_agent.txt")
    assert [(a.tool, a.args) for d in _decisions(docstore) for a in d.actions] == [
        ("Search", {"input": "Archimedes"}), ("Lookup", {"input": "last words"})]
    assert docstore.events[-1].answer == "Do not disturb my circles"
    assert "a line after the final answer: Spent a total of 6692 tokens" in _notes(docstore, "unrecognised")


def test_the_fever_prompt_keeps_its_instruction_as_every_runs_system_prompt():
    runs = load_runs(TRACES / "react_paper_fever_webthink_simple3.txt")
    assert [r.header.task_text for r in runs] == [
        "Nikolaj Coster-Waldau worked with the Fox Broadcasting Company.",
        "Stranger Things is set in Bloomington, Indiana.",
        "Beautiful reached number two on the Billboard Hot 100 in 2003.?",
    ]
    assert {r.header.options["system_prompt"] for r in runs} == {
        "Determine if there is Observation that SUPPORTS or REFUTES a Claim, or if there is NOT ENOUGH INFORMATION."
    }
    assert [r.events[-1].answer for r in runs] == ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
    first = [e for e in runs[1].events if e.type == "decision"][0]  # `Action 1:Search[...]`, no space after the colon
    assert first.thought.startswith("I should search for Stranger Things") and first.actions[0].args == {"input": "Stranger Things"}


def test_an_alfworld_game_is_a_run_of_commands_with_the_room_in_its_task():
    put_1, put_0 = load_runs(TRACES / "react_paper_alfworld_put_prompt.txt")
    assert put_1.header.options["system_prompt"] == "Interact with a household to solve a task. Here are two examples."
    assert put_1.header.task_text.startswith("You are in the middle of a room. Looking quickly around you, you see a cabinet 4,")
    assert put_1.header.task_text.endswith("\nYour task is to: find some apple and put it in sidetable.")
    assert put_0.header.task_text.endswith("\nYour task is to: put some spraybottle on toilet.")
    decisions = [e for e in put_0.events if e.type == "decision"]
    # two thoughts (each answered OK.) join the first command's step; OK. is no observation
    assert decisions[0].thought.startswith("To solve the task, I need to find and take a sparybottle")
    assert "\nFirst I need to find a spraybottle." in decisions[0].thought
    assert [a.args["command"] for d in decisions for a in d.actions][:3] == ["go to cabinet 1", "go to cabinet 2", "open cabinet 2"]
    observations = [e.text for e in put_0.events if e.type == "observation"]
    assert observations[0] == "On the cabinet 1, you see a cloth 1, a soapbar 1, a soapbottle 1." and "OK." not in observations
    # a thought the prompt left unanswered still joins the next command
    take = next(d for d in decisions if d.actions[0].args["command"] == "take spraybottle 2 from cabinet 2")
    assert take.thought == "Now I find a spraybottle (2). Next, I need to take it."
    # the prompt's closing line is kept, not dropped; a game has no answer
    assert _notes(put_0, "unrecognised") == ["a line after the last move: Here is the task."]
    assert not any(e.type == "run_ended" for e in put_0.events)


def test_a_bare_inspect_message_list_is_the_sample_it_was_taken_from():
    (log,) = load_runs(TRACES / "inspect_ai_browser_excerpt.json")
    (bare,) = load_runs(TRACES / "inspect_ai_browser_messages.json")
    assert bare.header.task_text == log.header.task_text
    def calls(run):
        return [(a.tool, a.args) for e in run.events if e.type == "decision" for a in e.actions]
    assert calls(bare) == calls(log) and calls(bare)[0] == ("web_browser_go", {"url": "https://www.aisi.gov.uk/"})
    assert [e.text for e in bare.events if e.type == "observation"] == [e.text for e in log.events if e.type == "observation"]
    assert bare.events[-1].answer == log.events[-1].answer
    assert not [e for e in bare.events if e.type == "note" and e.kind == "unrecognised"]


def test_claude_code_2_1_attachments_are_system_notes_and_nothing_is_left_unmapped():
    (run,) = load_runs(TRACES / "claude_code_2_1_197_recorded.jsonl")
    attached = [t for t in _notes(run, "system") if t.startswith("attachment (")]
    assert [t.splitlines()[0] for t in attached] == ["attachment (agent_listing_delta)", "attachment (skill_listing)"]
    assert "- Explore: Read-only search agent" in attached[0]
    assert not _notes(run, "unrecognised")
    decision = next(e for e in run.events if e.type == "decision")
    assert decision.actions[0].tool == "Bash" and decision.actions[0].args["command"] == "echo hello > note.txt"


def test_a_gemini_cli_chat_keeps_each_record_once_with_its_call_and_result():
    (run,) = load_runs(TRACES / "gemini_cli_0_61_0_recorded.jsonl")
    assert run.header.task_text == "Write hello to note.txt"
    assert run.header.options["system_prompt"].startswith("<session_context>\nThis is the Gemini CLI.")
    decisions = [e for e in run.events if e.type == "decision"]
    assert len(decisions) == 2  # the turn written twice (before and after its call ran) is one step
    assert decisions[0].thought == "I'll write the note."
    assert (decisions[0].actions[0].tool, decisions[0].actions[0].args["command"]) == ("run_shell_command", "echo hello > note.txt")
    (observed,) = [e for e in run.events if e.type == "observation"]
    assert "Output: (empty)" in observed.text and not observed.error
    assert run.events[-1].answer == "I wrote hello to note.txt."
    assert decisions[0].usage.input_tokens == 120 and not decisions[0].usage.estimated
    assert not _notes(run, "unrecognised")


def _gemini_chat(turns: int, rewritten_after: int) -> bytes:
    """A Gemini CLI chat of `turns` turns with a call each, whose first turn is written again, its
    call now done, after `rewritten_after` more records."""
    def turn(n: int, done: bool) -> dict:
        call = {"id": f"c{n}", "name": "read_file", "args": {"file_path": f"f{n}.txt"}, "status": "success" if done else "executing"}
        if done:
            call["result"] = [{"functionResponse": {"id": f"c{n}", "name": "read_file", "response": {"output": f"text {n}"}}}]
        return {"id": f"g{n}", "type": "gemini", "content": f"Reading {n}.", "toolCalls": [call]}

    lines = [{"sessionId": "s", "projectHash": "p", "startTime": "2026-12-01T00:00:00Z", "kind": "main"},
             {"id": "task", "type": "user", "content": [{"text": "Read the files."}]}, turn(0, done=False)]
    lines += [turn(n, done=True) for n in range(1, turns)]
    lines.insert(3 + rewritten_after, turn(0, done=True))
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@pytest.mark.parametrize("rewritten_after", [1, 255, 256, 600])
def test_a_gemini_cli_record_written_again_is_its_last_version_at_its_first_place(tmp_path, rewritten_after):
    """However many records stand between a record and its later version (within the records held
    as they are read, or past them, which reads the chat again), the step is the later version, first."""
    from engine.stored.importers.gemini_cli import WINDOW

    assert WINDOW == 256
    path = tmp_path / "chat.jsonl"
    path.write_bytes(_gemini_chat(700, rewritten_after))
    (run,) = load_runs(path)
    decisions = [e for e in run.events if e.type == "decision"]
    observed = [e for e in run.events if e.type == "observation"]
    assert len(decisions) == 700 and [d.thought for d in decisions[:2]] == ["Reading 0.", "Reading 1."]
    assert [o.text for o in observed[:2]] == ["text 0", "text 1"] and len(observed) == 700
    assert not _notes(run, "unrecognised")
