"""The real trace samples (tests/data/traces) and their counts of calls, results and answers, counted from each format's documentation independently of the importers."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

# file, format, runs, tool calls, results, answers (as in SOURCES.md)
SAMPLES = [
    ("chat_openai_cookbook_toy_chat_fine_tuning.jsonl", "chat", 3, 0, 0, 3),
    ("chat_pydantic_ai_tool_output_request.json", "chat", 1, 1, 1, 0),
    ("chat_pydantic_ai_tool_output_exchange.json", "chat", 1, 2, 1, 1),
    ("claude_code_simonw_sample_session.jsonl", "claude-code", 1, 2, 2, 1),
    ("claude_code_kvsankar_golden.jsonl", "claude-code", 1, 2, 2, 1),
    ("claude_code_spotter_task_subagent.jsonl", "claude-code", 1, 6, 6, 1),
    ("claude_code_spotter_subagent_file.jsonl", "claude-code", 1, 12, 12, 1),
    ("claude_code_2_1_197_recorded.jsonl", "claude-code", 1, 1, 1, 1),
    ("claude_code_1_0_128_inline_task.jsonl", "claude-code", 1, 2, 2, 1),
    ("codex_kvsankar_golden.jsonl", "codex", 1, 1, 1, 1),
    ("gemini_cli_0_61_0_recorded.jsonl", "gemini-cli", 1, 1, 1, 1),
    ("opencode_1_18_33_export.json", "opencode", 1, 1, 1, 1),
    ("codex_kvsankar_with_escalation.jsonl", "codex", 1, 4, 2, 0),
    ("codex_localpush_parallel_calls.jsonl", "codex", 1, 6, 6, 1),
    ("swe_agent_function_calling_simple.traj", "swe-agent", 1, 5, 5, 0),
    ("swe_agent_test_repo.traj", "swe-agent", 1, 4, 4, 1),
    ("mini_swe_agent_github_issue.traj.json", "mini-swe-agent", 1, 10, 10, 1),
    ("mini_swe_agent_local.traj.json", "mini-swe-agent", 1, 2, 2, 1),
    ("mini_swe_agent_recorded_v2.traj.json", "mini-swe-agent", 1, 3, 2, 1),
    ("mini_swe_agent_gruckion_django_13670.traj.json", "mini-swe-agent", 1, 21, 21, 1),
    ("inspect_ai_message_deduplication.eval", "inspect", 1, 5, 5, 1),
    ("inspect_ai_browser_excerpt.json", "inspect", 1, 4, 4, 1),
    ("inspect_ai_popularity_excerpt.json", "inspect", 3, 0, 0, 3),
    ("inspect_ai_browser_messages.json", "inspect", 1, 4, 4, 1),
    ("inspect_scout_websearch_addition.eval", "inspect", 1, 0, 0, 1),
    ("react_paper_hotpotqa_webthink_simple6.txt", "react", 6, 14, 14, 6),
    ("react_reflexion_reflections.txt", "react", 2, 8, 8, 1),
    ("react_paper_fever_webthink_simple3.txt", "react", 3, 5, 5, 3),
    ("react_paper_alfworld_put_prompt.txt", "alfworld", 2, 18, 18, 0),
    ("langchain_docs_debugging_verbose.txt", "langchain", 1, 4, 4, 1),
    ("langchain_pinecone_sql_agent_coloured.txt", "langchain", 1, 4, 4, 1),
    ("langchain_pinecone_conversational_agent.txt", "langchain", 1, 1, 1, 1),
    ("langchain_pinecone_docstore_agent.txt", "langchain", 1, 2, 2, 1),
]


def _chat_counts(conversations: list[list[dict]]) -> tuple[int, int, int, int]:
    calls = results = answers = 0
    for messages in conversations:
        calls += sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
        results += sum(1 for m in messages if m.get("role") == "tool")
        last = messages[-1]
        final = [c for c in last.get("tool_calls") or [] if c["function"]["name"] == "final_result"]
        answers += 1 if last.get("role") == "assistant" and (final or not last.get("tool_calls")) else 0
    return len(conversations), calls, results, answers


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def source_counts(path: Path, fmt: str) -> tuple[int, int, int, int]:
    """(runs, tool calls, results, answers) read from the source file without the importer."""
    name = path.name
    if fmt == "chat":
        if name.endswith(".jsonl"):
            return _chat_counts([row["messages"] for row in _jsonl(path)])
        data = json.loads(path.read_text())
        if "request" in data:
            return _chat_counts([data["request"]["messages"] + [data["response"]["choices"][0]["message"]]])
        return _chat_counts([data["messages"]])
    if fmt == "claude-code":
        rows = [r for r in _jsonl(path) if r.get("type") in ("user", "assistant")]
        if not all(r.get("isSidechain") for r in rows):  # a main session: its inline sub-agents' lines are nested, not steps
            rows = [r for r in rows if not r.get("isSidechain")]
        blocks = [(r["type"], b) for r in rows if isinstance(r["message"]["content"], list) for b in r["message"]["content"]]
        calls = sum(1 for kind, b in blocks if kind == "assistant" and b["type"] == "tool_use")
        results = sum(1 for kind, b in blocks if kind == "user" and b["type"] == "tool_result")
        last = rows[-1]
        answer = last["type"] == "assistant" and all(b["type"] == "text" for b in last["message"]["content"])
        return 1, calls, results, int(answer)
    if fmt == "codex":
        items = [r["payload"] for r in _jsonl(path) if r["type"] == "response_item"]
        calls = sum(1 for p in items if p["type"] == "function_call")
        results = sum(1 for p in items if p["type"] == "function_call_output")
        answer = items[-1]["type"] == "message" and items[-1]["role"] == "assistant"
        return 1, calls, results, int(answer)
    if fmt == "gemini-cli":
        # the records after the session line, and those a `$set` holds; a record written again under its id replaces it
        records: dict[str, dict] = {}
        for row in _jsonl(path)[1:]:
            for record in row["$set"].get("messages", []) if "$set" in row else [row]:
                records[record["id"]] = record
        turns = [r for r in records.values() if r["type"] == "gemini"]
        calls = {c["id"] for r in turns for c in r.get("toolCalls", [])}
        answered = {
            p["functionResponse"]["id"]
            for r in records.values()
            for p in (r["content"] if isinstance(r["content"], list) else [])
            if "functionResponse" in p
        }
        answered |= {c["id"] for r in turns for c in r.get("toolCalls", []) if c.get("result")}
        return 1, len(calls), len(answered & calls), int(not turns[-1].get("toolCalls"))
    if fmt == "opencode":
        # opencode export: messages of parts; a tool part is a call, answered once its state is completed or error
        messages = json.loads(path.read_text())["messages"]
        tools = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
        last = [p["type"] for p in messages[-1]["parts"]]
        answer = messages[-1]["info"]["role"] == "assistant" and "text" in last and "tool" not in last
        return 1, len(tools), sum(1 for p in tools if p["state"]["status"] in ("completed", "error")), int(answer)
    if fmt == "swe-agent":
        data = json.loads(path.read_text())
        history = data["history"]
        calls = sum(len(m.get("tool_calls") or []) for m in history if m["role"] == "assistant")
        results = sum(len(m["tool_call_ids"]) for m in history if m["role"] == "tool")
        answer = bool((data.get("info") or {}).get("submission"))
        return 1, calls, results, int(answer)
    if fmt == "mini-swe-agent":
        data = json.loads(path.read_text())
        messages = data["messages"] if isinstance(data, dict) else data

        # mini-swe-agent runs a message's command only when it holds exactly one shell block (its action_regex)
        def ran(m: dict) -> bool:
            return (
                m["role"] == "assistant"
                and len(re.findall(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", m["content"], re.S)) == 1
            )

        calls = sum(1 for m in messages if ran(m))
        results = sum(1 for prev, m in zip(messages, messages[1:]) if ran(prev) and m["role"] == "user")
        answer = any("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in m["content"] for m in messages if m["role"] == "assistant")
        return 1, calls, results, int(answer)
    if fmt == "inspect":
        if name.endswith(".eval"):
            with zipfile.ZipFile(path) as archive:
                samples = [json.loads(archive.read(n)) for n in archive.namelist() if n.startswith("samples/")]
        else:
            data = json.loads(path.read_text())
            # a log holds samples; a bare list is one sample's messages saved on its own
            samples = [{"messages": data}] if isinstance(data, list) else data["samples"]
        calls = sum(len(m.get("tool_calls") or []) for s in samples for m in s["messages"] if m["role"] == "assistant")
        results = sum(1 for s in samples for m in s["messages"] if m["role"] == "tool")
        answers = sum(1 for s in samples if s["messages"][-1]["role"] == "assistant" and not s["messages"][-1].get("tool_calls"))
        return len(samples), calls, results, answers
    text = path.read_text()
    if fmt == "react":
        # the paper's prompts: `Question:` (HotpotQA) or `Claim:` (FEVER) per run, numbered fields
        # whose colon the FEVER prompt sometimes writes with no space after it
        finishes = len(re.findall(r"^Action \d+: ?Finish\[", text, re.M))
        actions = len(re.findall(r"^Action \d+:", text, re.M))
        observations = len(re.findall(r"^Observation \d+:", text, re.M))
        return len(re.findall(r"^(?:Question|Claim):", text, re.M)), actions - finishes, observations, finishes
    if fmt == "alfworld":
        # ReAct's alfworld.ipynb: the game prints a reply line after each command; `> think:` is answered
        # `OK.` (or nothing) and is no command; a game has no answer, it ends when the task is done
        lines = text.splitlines()
        moves = [i for i, line in enumerate(lines) if line.startswith("> ") and not line.startswith("> think:")]
        replies = sum(1 for i in moves if i + 1 < len(lines) and lines[i + 1].strip() and not lines[i + 1].startswith(">"))
        return len(re.findall(r"^Your task is to: ", text, re.M)), len(moves), replies, 0
    if "\x1b[" in text:
        # LangChain's coloured console output: the model's words in green (32;1), each tool's output in its colour
        segments = re.findall(r"\x1b\[([0-9;]*)m\x1b\[1;3m(.*?)\x1b\[0m", text, re.S)
        model = "\n".join(body for colour, body in segments if colour == "32;1")
        finishes = len(re.findall(r"^Action: Finish\[", model, re.M))
        actions = len(re.findall(r"^Action: ", model, re.M)) - finishes
        answers = finishes + len(re.findall(r"^(?:Final Answer|AI): ", model, re.M))
        return 1, actions, sum(1 for colour, _ in segments if colour != "32;1"), answers
    actions = len(re.findall(r"^\s*Action: ", text, re.M))
    observations = len(re.findall(r"^\s*Observation: ", text, re.M))
    return 1, actions, observations, len(re.findall(r"^\s*Final Answer: ", text, re.M))


def import_counts(runs) -> tuple[int, int, int, int]:
    calls = sum(len(e.actions) for r in runs for e in r.events if e.type == "decision")
    results = sum(1 for r in runs for e in r.events if e.type == "observation")
    answers = sum(1 for r in runs for e in r.events if e.type == "run_ended" and e.outcome == "answer")
    return len(runs), calls, results, answers
