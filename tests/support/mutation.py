"""Mutating stored files (transcripts, traces) for the fuzz tests: weird values, cut and doubled lines."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"


TRACES = DATA / "traces"


SOURCES = {
    "chat": ["chat_pydantic_ai_tool_output_exchange.json", "chat_openai_cookbook_toy_chat_fine_tuning.jsonl"],
    "claude-code": [
        "claude_code_kvsankar_golden.jsonl",
        "claude_code_simonw_sample_session.jsonl",
        "claude_code_spotter_task_subagent.jsonl",
        "claude_code_2_1_197_recorded.jsonl",
        "claude_code_1_0_128_inline_task.jsonl",
    ],
    "codex": ["codex_kvsankar_with_escalation.jsonl", "codex_kvsankar_golden.jsonl", "codex_localpush_parallel_calls.jsonl"],
    "gemini-cli": ["gemini_cli_0_61_0_recorded.jsonl"],
    "opencode": ["opencode_1_18_33_export.json"],
    "swe-agent": ["swe_agent_function_calling_simple.traj"],
    "mini-swe-agent": [
        "mini_swe_agent_local.traj.json",
        "mini_swe_agent_github_issue.traj.json",
        "mini_swe_agent_gruckion_django_13670.traj.json",
    ],
    "inspect": [
        "inspect_ai_popularity_excerpt.json",
        "inspect_ai_message_deduplication.eval",
        "inspect_ai_browser_messages.json",
    ],
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
            target.writestr(_member(name), body)
    return out.getvalue()


def _member(name: str, compress_type: int = zipfile.ZIP_STORED) -> zipfile.ZipInfo:
    """A zip member with a fixed time: `writestr(name, ...)` stamps the clock's, and a mutant whose
    flipped bit or cut lands in it would then be another file at another time."""
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.compress_type = compress_type
    return info


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

    if data.startswith(b"PK\x03\x04"):
        source = zipfile.ZipFile(io.BytesIO(data))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for name in source.namelist():
                target.writestr(_member(name, zipfile.ZIP_DEFLATED), small(source.read(name)))
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


WEIRD_VALUES = [None, True, -1, 10**30, 1e308, "", "x" * 100_000, [], {}, [[[[[]]]]], "\x00", "\ud800"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    lines = data.splitlines(keepends=True)
    kind = rng.randrange(10)
    if kind == 0 and data:  # flip bytes
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        return bytes(buf)
    if kind == 1:  # cut at a random point
        return data[: rng.randrange(len(data) + 1)]
    if kind == 2 and lines:  # duplicate a line
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
        return b"".join(lines)
    if kind == 3 and len(lines) > 1:  # reorder
        rng.shuffle(lines)
        return b"".join(lines)
    if kind == 4 and lines:  # drop a line
        del lines[rng.randrange(len(lines))]
        return b"".join(lines)
    if kind in (5, 6) and lines:  # wrong types / huge values in a field
        i = rng.randrange(len(lines))
        try:
            obj = json.loads(lines[i])
        except ValueError:
            return data
        if isinstance(obj, dict) and obj:
            key = rng.choice(sorted(obj))
            obj[key] = rng.choice(WEIRD_VALUES)
            if kind == 6:
                obj[rng.choice(["type", "step", "format_version", "extra"])] = rng.choice(WEIRD_VALUES + ["run_ended", 2])
        lines[i] = json.dumps(obj).encode() + b"\n"
        return b"".join(lines)
    if kind == 7:  # invalid UTF-8 and NUL bytes
        pos = rng.randrange(len(data) + 1)
        return data[:pos] + rng.choice([b"\xff\xfe", b"\x00", b"\xc3", b"\xed\xa0\x80"]) + data[pos:]
    if kind == 8:  # a line that is not an object
        lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"[]\n", b"42\n", b'"s"\n', b"null\n", b"{\n"]))
        return b"".join(lines)
    return data.replace(b'"type": "', b'"type": "x', 1) if rng.random() < 0.5 else data + data
