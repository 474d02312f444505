"""Mutated foreign traces: every importer, the fold, the plain printer and the chat export take
2,000 mutants of each format without an uncaught exception, and every refusal names the file.

The mutants come from the transcript fuzzer's line mutator (flipped bytes, cuts, duplicated,
reordered and dropped lines, wrong types, invalid UTF-8) and, for JSON documents, from
replacing one value anywhere in the tree. AGENT_TUI_LONG=1 runs 20,000 of each.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from engine.core.state import fold
from engine.stored.chat_export import chat_messages
from engine.stored.importers import runs_from_bytes
from engine.stored.transcript import TranscriptError
from tests.test_fuzz_transcripts import WEIRD_VALUES, mutate
from tui.plain import event_lines, header_lines

MUTANTS = 20_000 if os.environ.get("AGENT_TUI_LONG") else 2_000
DATA = Path(__file__).resolve().parent / "data"
TRACES = DATA / "traces"
SOURCES = {
    "chat": ["chat_pydantic_ai_tool_output_exchange.json", "chat_openai_cookbook_toy_chat_fine_tuning.jsonl"],
    "claude-code": ["claude_code_kvsankar_golden.jsonl", "claude_code_simonw_sample_session.jsonl",
                    "claude_code_spotter_task_subagent.jsonl", "claude_code_2_1_197_recorded.jsonl"],
    "codex": ["codex_kvsankar_with_escalation.jsonl", "codex_kvsankar_golden.jsonl", "codex_localpush_parallel_calls.jsonl"],
    "gemini-cli": ["gemini_cli_0_61_0_recorded.jsonl"],
    "opencode": ["opencode_1_18_33_export.json"],
    "swe-agent": ["swe_agent_function_calling_simple.traj"],
    "mini-swe-agent": ["mini_swe_agent_local.traj.json", "mini_swe_agent_github_issue.traj.json",
                       "mini_swe_agent_gruckion_django_13670.traj.json"],
    "inspect": ["inspect_ai_popularity_excerpt.json", "inspect_ai_message_deduplication.eval", "inspect_ai_browser_messages.json"],
    "react": ["react_reflexion_reflections.txt", "react_paper_fever_webthink_simple3.txt"],
    "alfworld": ["react_paper_alfworld_put_prompt.txt"],
    "langchain": ["langchain_docs_debugging_verbose.txt", "langchain_pinecone_sql_agent_coloured.txt"],
    "trace": ["../trace_000_hallucinating.txt", "../trace_001_cases.txt"],
}


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a JSON tree (bounded, so a big document stays quick)."""
    out = [path]
    if isinstance(value, dict):
        for key, item in list(value.items())[:40]:
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:40]):
            out += _paths(item, (*path, index))
    return out


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    value[head] = _replace(value[head], rest, new)
    return value


def mutate_tree(data: bytes, rng: random.Random) -> bytes:
    """One value anywhere in a JSON document (or in one JSON line) replaced by a weird one."""
    lines = data.splitlines(keepends=True)
    try:
        doc = json.loads(data)
        whole = True
    except (ValueError, RecursionError):
        whole = False
        if not lines:
            return data
        index = rng.randrange(len(lines))
        try:
            doc = json.loads(lines[index])
        except (ValueError, RecursionError):
            return data
    path = rng.choice(_paths(doc))
    new = rng.choice([*WEIRD_VALUES, "user", "assistant", "tool", "function_call", "tool_use", "tool_result", {"role": "tool"}])
    doc = _replace(doc, path, new)
    text = json.dumps(doc).encode()
    if whole:
        return text
    lines[index] = text + b"\n"
    return b"".join(lines)


def mutate_zip(data: bytes, rng: random.Random) -> bytes:
    """An .eval archive with one member's JSON mutated, or its bytes damaged."""
    import io
    import zipfile

    if rng.random() < 0.3:
        return mutate(data, rng)
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        names = source.namelist()
        victim = rng.choice(names)
        for name in names:
            body = source.read(name)
            if name == victim:
                body = mutate_tree(body, rng) if rng.random() < 0.7 else mutate(body, rng)
            target.writestr(name, body)
    return out.getvalue()


def _trim(value: Any) -> Any:
    if isinstance(value, list):
        return [_trim(v) for v in value[:8]]
    if isinstance(value, dict):
        return {k: _trim(v) for k, v in value.items()}
    return value[:300] if isinstance(value, str) else value


def small(data: bytes) -> bytes:
    """A short version of a sample with the same structure (lists of 8, strings of 300 characters,
    14 lines), so 2,000 mutants take seconds, not minutes."""
    import io
    import zipfile

    if data.startswith(b"PK\x03\x04"):
        source = zipfile.ZipFile(io.BytesIO(data))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for name in source.namelist():
                target.writestr(name, small(source.read(name)))
        return out.getvalue()
    try:
        return json.dumps(_trim(json.loads(data))).encode()
    except ValueError:
        pass
    lines = data.splitlines()[:14]
    try:
        return b"".join(json.dumps(_trim(json.loads(line))).encode() + b"\n" for line in lines if line.strip())
    except ValueError:
        return b"".join(line[:300] + b"\n" for line in lines)


def mutant(fmt: str, data: bytes, rng: random.Random, *, twice: bool = True) -> bytes:
    """A mutant of a sample of `fmt`: an archive's member, a JSON value or the lines changed, and
    (`twice`) one time in five mutated again."""
    if data.startswith(b"PK\x03\x04"):
        data = mutate_zip(data, rng)
    elif rng.random() < 0.5 and fmt not in ("react", "langchain", "trace", "alfworld"):
        data = mutate_tree(data, rng)
    else:
        data = mutate(data, rng)
    if twice and rng.random() < 0.2:
        data = mutate(data, rng)
    return data


def _check(name: str, data: bytes, outcomes: dict[str, int]) -> None:
    try:
        runs = runs_from_bytes(name, data)
    except TranscriptError as exc:
        assert str(exc).startswith(name), str(exc)
        outcomes["refused"] += 1
        return
    outcomes["read"] += 1
    for run in runs:
        fold(run.header, run.events)
        lines = header_lines(run.header)
        for event in run.events:
            lines += event_lines(event)
        chat_messages(run.header, run.events)
        assert lines


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_mutated_foreign_traces_are_read_or_refused_cleanly(fmt):
    rng = random.Random(f"import-fuzz-{fmt}")
    name = f"mutant.{fmt}"
    sources = [small((TRACES / f).read_bytes()) for f in SOURCES[fmt]]
    assert all(runs_from_bytes(name, data) for data in sources)  # the seeds themselves import
    outcomes = {"read": 0, "refused": 0}
    for _ in range(MUTANTS):
        _check(name, mutant(fmt, rng.choice(sources), rng), outcomes)
    assert outcomes["read"] > 0 and outcomes["refused"] > 0, outcomes
