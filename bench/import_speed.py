"""Importing a 100,000-line file of each foreign format, next to `show` of an agent-tui transcript of as many lines.

    python bench/import_speed.py [--lines 100000] [--runs 3] [--only FORMAT ...] [--stages]

For each format a file of about `--lines` lines is written in that format's
own shape, in the fewest lines it takes (one tool call and its result a step,
with fresh call ids), then timed: `agent-tui import FILE -o OUT.jsonl` (read,
map, write the transcript) next to `agent-tui show TRANSCRIPT` of an agent-tui
transcript of the same number of lines made by the real engine
(bench/worlds/lookup_world.py), and to `show` of the transcript the import
wrote (the same run). Each figure is the median wall and CPU time of `--runs`
fresh processes taken in turns (a first, untimed run of each writes Python's
bytecode cache). The goal: each import within 2x the show. A transcript "of the
same size" read as bytes, not lines, is timed too: `show` of an engine
transcript of as many bytes as the format's file (`x bytes`).

Three formats are also written as their real programs write them, line for
line (`-recorded`; tests/test_import_speed_files.py compares the lines' keys
with the programs' own): Claude Code 2.1.197, three lines a step of about 870
bytes each (a gemini-cli line is 300, an engine line 234), Codex CLI 0.171,
seven lines a step of about 600 bytes, and Gemini CLI 0.61, five lines a step
(the turn written twice, the result repeated, two updates). With
`gemini-cli`, a line a step, its floor is timed in the same rounds:
`bench/bare_import.py`, the same file written as a transcript with no mapping
at all (parsed, four objects a step built and written by the one writer).

An import checks a file of JSON lines of 8 MB or more for what only the exact
JSON reading gets right in a child process, on the other core, while it reads on
(`engine.core.jsontext.PlainCheck`), and a Gemini CLI chat of 8 MB or more is read
and written by two processes, a half each (`engine.stored.importers.halves`): the
CPU figures count the child's time too.

`--stages`: each format's import in this process instead, stage by stage (CPU,
collector off, the least of `--runs`): reading, detecting, parsing and mapping
the file with the first look at its calls (`made_runs`; not the check's child),
making the events, serialising them, freeing them and what was read.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, NamedTuple
from uuid import UUID

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.commands import make_transcript, wall  # noqa: E402
from bench.options import at_least  # noqa: E402

AGENT_TUI = [sys.executable, "-m", "tui.cli"]
TASK = "Read every file and count the words."


def _uuids(seed: str) -> Callable[[], str]:
    """Random uuids (version 4) as the agents write them, the same for the same seed."""
    rng = random.Random(seed)
    return lambda: str(UUID(int=rng.getrandbits(128), version=4))


def _claude(steps: int) -> Iterator[str]:
    def row(kind: str, content: object, n: int) -> str:
        return json.dumps({"type": kind, "uuid": f"u{n}", "sessionId": "s", "version": "2.1.197", "isSidechain": False,
                           "message": {"role": kind, "content": content, **({"id": f"msg{n}", "model": "claude"} if kind == "assistant" else {})}})
    yield row("user", TASK, 0)
    for n in range(steps):
        yield row("assistant", [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {"file_path": f"/data/f{n}.txt"}}], n)
        yield row("user", [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"file {n}: 42 words"}], n)


def _claude_recorded(steps: int) -> Iterator[str]:
    """A session as Claude Code 2.1.197 writes one (tests/test_import_speed_files.py compares its
    lines with the recorded sample's, key by key): the task, then three lines a step, the model's
    text and its call (one message, a line each block, the usage repeated) and the call's result;
    every line with its uuid, its parent's, the session's and the working folder. The ids are
    random (seeded), as real ones are: a quarter of them hold an `e` and three digits."""
    uuid = _uuids("claude-code-recorded")

    session, clock = uuid(), "2026-12-01T14:51:26.262Z"
    where = {"userType": "external", "entrypoint": "sdk-cli", "cwd": "/tmp/cc-work", "sessionId": session, "version": "2.1.197", "gitBranch": "HEAD"}
    usage = {"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 24,
             "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard",
             "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}, "inference_geo": "", "iterations": [], "speed": "standard"}

    def assistant(parent: str, me: str, message_id: str, block: dict) -> str:
        message = {"id": message_id, "type": "message", "role": "assistant", "model": "claude-opus-4-8", "content": [block],
                   "stop_reason": "tool_use", "stop_sequence": None, "usage": usage, "stop_details": None}
        return json.dumps({"parentUuid": parent, "isSidechain": False, "message": message, "type": "assistant", "uuid": me, "timestamp": clock, **where},
                          separators=(",", ":"))

    parent = uuid()
    yield json.dumps({"parentUuid": None, "isSidechain": False, "promptId": uuid(), "type": "user", "message": {"role": "user", "content": TASK},
                      "uuid": parent, "timestamp": clock, "permissionMode": "default", "promptSource": "sdk", **where}, separators=(",", ":"))
    for n in range(steps):
        text, call, result = uuid(), uuid(), uuid()
        message_id, tool_id = f"msg_{uuid().replace('-', '')[:24]}", f"toolu_{uuid().replace('-', '')[:24]}"
        yield assistant(parent, text, message_id, {"type": "text", "text": f"I'll read f{n}.txt."})
        yield assistant(text, call, message_id, {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": f"/data/f{n}.txt"}})
        yield json.dumps({"parentUuid": call, "isSidechain": False, "promptId": uuid(), "type": "user",
                          "message": {"role": "user", "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": "42 words", "is_error": False}]},
                          "uuid": result, "timestamp": clock, "toolUseResult": {"stdout": "42 words", "stderr": "", "interrupted": False, "isImage": False,
                                                                               "noOutputExpected": False},
                          "sourceToolAssistantUUID": call, **where}, separators=(",", ":"))
        parent = result


def _codex(steps: int) -> Iterator[str]:
    def item(payload: dict) -> str:
        return json.dumps({"timestamp": "2026-12-01T00:00:00Z", "type": "response_item", "payload": payload})
    yield json.dumps({"timestamp": "2026-12-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s", "cwd": "/data"}})
    yield item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]})
    for n in range(steps):
        yield item({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["wc", "-w", f"f{n}.txt"]}), "call_id": f"call_{n}"})
        yield item({"type": "function_call_output", "call_id": f"call_{n}", "output": f"42 f{n}.txt"})


def _codex_recorded(steps: int) -> Iterator[str]:
    """A rollout as Codex CLI 0.171 writes one (tests/test_import_speed_files.py compares it with a
    fresh rollout of the real binary, line by line): the session and the task, then seven lines a
    step: the agent's message as an event, the message and the call as response items, the turn's
    token usage, the command's execution as an event, the call's output, a token count."""
    uuid = _uuids("codex-recorded")

    thread, turn, clock, ordinal = uuid(), uuid(), "2026-12-07T06:25:45.335Z", 0

    def line(kind: str, payload: dict, **more: object) -> str:
        nonlocal ordinal
        ordinal += 1
        return json.dumps({"timestamp": clock, "ordinal": ordinal - 1, "type": kind, "payload": payload, **more}, separators=(",", ":"))

    usage = {"input_tokens": 120, "cached_input_tokens": 0, "cache_write_input_tokens": 0, "output_tokens": 24, "reasoning_output_tokens": 0, "total_tokens": 144}
    limits = {"limit_id": "codex", **dict.fromkeys(("limit_name", "primary", "secondary", "credits", "individual_limit", "spend_control_reached",
                                                     "plan_type", "rate_limit_reached_type"))}
    yield line("session_meta", {"session_id": thread, "id": thread, "timestamp": clock, "cwd": "/data", "originator": "codex_exec", "cli_version": "0.171.0"})
    yield line("response_item", {"type": "message", "id": f"msg_{uuid()}", "role": "user", "content": [{"type": "input_text", "text": TASK}]})
    for n in range(1, steps + 1):
        said, call_id, command = f"I'll count the words of f{n}.txt.", f"call_{n}_0", f"wc -w f{n}.txt"
        done = {"started_at_ms": 1796624745334, "completed_at_ms": 1796624745335}
        yield line("event_msg", {"type": "item_completed", "thread_id": thread, "turn_id": turn,
                                 "item": {"type": "AgentMessage", "id": f"msg_{n}", "content": [{"type": "Text", "text": said}]}, **done})
        yield line("response_item", {"type": "message", "status": "completed", "id": f"msg_{n}", "role": "assistant",
                                     "content": [{"type": "output_text", "text": said, "annotations": []}],
                                     "internal_chat_message_metadata_passthrough": {"turn_id": turn, "content_item_kinds": ["unknown"]}},
                   metadata={"history_sequence": 3 * n + 1, "sampled_through_sequence": 3 * n,
                             "retained_source": {"id": {"message_id": f"msg_{n}", "turn_id": turn, "role": "assistant"}, "revision": f"retained_{uuid()}", "complete": True},
                             "client_authored": False, "user_input_order": 1, "model_search_state": "unused"})
        yield line("response_item", {"type": "function_call", "status": "completed", "id": f"fc_{n}_0", "name": "exec_command",
                                     "arguments": json.dumps({"cmd": command}), "call_id": call_id, "internal_chat_message_metadata_passthrough": {"turn_id": turn}},
                   metadata={"history_sequence": 3 * n + 2, "sampled_through_sequence": 3 * n, "client_authored": False, "user_input_order": 2, "model_search_state": "unused"})
        yield line("token_usage_record", {"thread_id": thread, "turn_id": turn, "session_id": thread, "root_turn_id": turn, "response_id": f"resp_{n}",
                                          "usage": usage, "turn_token_usage": usage, "thread_token_usage": usage})
        yield line("event_msg", {"type": "item_completed", "thread_id": thread, "turn_id": turn,
                                 "item": {"type": "CommandExecution", "id": call_id, "process_id": str(1000 + n), "command": ["/bin/bash", "-lc", command],
                                          "cwd": "file:///data", "parsed_cmd": [{"type": "unknown", "cmd": command}], "source": "unified_exec_startup",
                                          "status": "completed", "aggregated_output": "42", "exit_code": 0, "duration": {"secs": 0, "nanos": 4776}}, **done})
        yield line("response_item", {"type": "function_call_output", "id": f"fco_{uuid()}", "call_id": call_id,
                                     "output": "Chunk ID: 4ac14a\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\n42\n",
                                     "internal_chat_message_metadata_passthrough": {"turn_id": turn, "create_time": 1796624745.418834}},
                   metadata={"history_sequence": 3 * n + 3, "sampled_through_sequence": 3 * n, "client_authored": False,
                             "fallback_token_limit_override": 3000, "model_search_state": "unused"})
        yield line("event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage, "last_usage_includes_reasoning": False,
                                                                 "model_context_window": 258400}, "rate_limits": limits})


def _gemini(steps: int) -> Iterator[str]:
    """A chat in the fewest lines the importer reads: a line a step, the turn with its call and
    result (no update, no turn written twice; Gemini CLI 0.61 writes five lines a step, as
    `_gemini_recorded` does)."""
    yield json.dumps({"sessionId": "s", "projectHash": "p", "startTime": "2026-12-01T00:00:00Z", "kind": "main"})
    yield json.dumps({"id": "task", "type": "user", "content": [{"text": TASK}]})
    for n in range(steps):
        call = {"id": f"c{n}", "name": "read_file", "args": {"file_path": f"f{n}.txt"}, "status": "success",
                "result": [{"functionResponse": {"id": f"c{n}", "name": "read_file", "response": {"output": "42 words"}}}]}
        yield json.dumps({"id": f"g{n}", "type": "gemini", "content": "", "toolCalls": [call], "tokens": {"input": 10, "output": 5}})


def _gemini_recorded(steps: int) -> Iterator[str]:
    """A chat as Gemini CLI 0.61 writes it (tests/test_import_speed_files.py compares it with a
    fresh chat of the real binary, line by line): the session, its context and the task (each
    followed by an update of the chat), then five lines a step: the model's turn, an update, the
    turn written again with its call and the call's result, the result again in a user record
    (which the import skips: the call holds it), an update. A 100,000-line chat is 20,000 steps."""
    clock = "2026-12-01T00:00:00.000Z"

    def update(**values: object) -> str:
        return json.dumps({"$set": values})

    yield json.dumps({"sessionId": "s", "projectHash": "p", "startTime": clock, "lastUpdated": clock, "kind": "main"})
    context = {"id": "context", "timestamp": clock, "type": "user", "content": [{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}
    yield update(messages=[context], lastUpdated=clock)
    yield json.dumps({"id": "task", "timestamp": clock, "type": "user", "content": [{"text": TASK}]})
    yield update(lastUpdated=clock)
    tokens = {"input": 10, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": 15}
    for n in range(steps):
        turn = {"id": f"g{n}", "timestamp": clock, "type": "gemini", "content": "", "thoughts": [], "tokens": tokens, "model": "gemini"}
        result = [{"functionResponse": {"id": f"c{n}", "name": "read_file", "response": {"output": "42 words"}}}]
        call = {"id": f"c{n}", "name": "read_file", "args": {"file_path": f"f{n}.txt"}, "result": result, "status": "success",
                "timestamp": clock, "resultDisplay": "", "description": f"f{n}.txt", "displayName": "ReadFile", "renderOutputAsMarkdown": True}
        yield json.dumps(turn)
        yield update(lastUpdated=clock)
        yield json.dumps({**turn, "toolCalls": [call]})
        yield json.dumps({"id": f"r{n}", "timestamp": clock, "type": "user", "content": result})
        yield update(lastUpdated=clock)


def _react(steps: int) -> Iterator[str]:
    yield f"Question: {TASK}"
    for n in range(1, steps + 1):
        yield f"Thought {n}: I read file {n}."
        yield f"Action {n}: Lookup[f{n}.txt]"
        yield f"Observation {n}: 42 words"


def _alfworld(steps: int) -> Iterator[str]:
    yield "You are in the middle of a room. Looking quickly around you, you see a cabinet 1."
    yield "Your task is to: look in every cabinet."
    for n in range(steps):
        yield f"> open cabinet {n}"
        yield f"You open the cabinet {n}. In it, you see nothing."


def _opencode(steps: int) -> Iterator[str]:
    messages = [{"info": {"id": "m0", "role": "user"}, "parts": [{"type": "text", "text": TASK}]}]
    for n in range(steps):
        tool = {"type": "tool", "tool": "read", "callID": f"c{n}", "state": {"status": "completed", "input": {"filePath": f"f{n}.txt"}, "output": "42 words"}}
        messages.append({"info": {"id": f"m{n + 1}", "role": "assistant"}, "parts": [{"type": "step-start"}, tool, {"type": "step-finish", "tokens": {"input": 10, "output": 5}}]})
    yield from json.dumps({"info": {"id": "ses_bench", "title": "bench"}, "messages": messages}, indent=1).splitlines()


class Shape(NamedTuple):
    """A file the bench writes: its suffix, its writer (the lines of so many steps), how many lines a
    step takes, and the format it is in."""

    suffix: str
    writer: Callable[[int], Iterator[str]]
    per_step: float
    fmt: str


FORMATS: dict[str, Shape] = {
    "claude-code": Shape(".jsonl", _claude, 2, "claude-code"),
    "claude-code-recorded": Shape(".jsonl", _claude_recorded, 3, "claude-code"),
    "codex": Shape(".jsonl", _codex, 2, "codex"),
    "codex-recorded": Shape(".jsonl", _codex_recorded, 7, "codex"),
    "gemini-cli": Shape(".jsonl", _gemini, 1, "gemini-cli"),
    "gemini-cli-recorded": Shape(".jsonl", _gemini_recorded, 5, "gemini-cli"),
    "react": Shape(".txt", _react, 3, "react"),
    "alfworld": Shape(".txt", _alfworld, 2, "alfworld"),
    "opencode": Shape(".json", _opencode, 31, "opencode"),
}


def stages(path: Path, runs: int) -> dict[str, float]:
    """The least CPU time of each stage of importing `path` in this process, over `runs` rounds."""
    from engine.core.sink import event_line
    from engine.stored.importers import made_runs

    data = path.read_bytes()
    least: dict[str, float] = {}
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(runs):
            clock = [time.process_time()]
            made = made_runs(str(path), data)
            clock.append(time.process_time())
            events = [event for run in made for event in run.events]
            clock.append(time.process_time())
            for event in events:
                event_line(event)
            clock.append(time.process_time())
            del made, events
            clock.append(time.process_time())
            for name, start, end in zip(("read, map, first look", "events", "serialise", "free"), clock, clock[1:]):
                least[name] = min(least.get(name, end - start), end - start)
    finally:
        if was_enabled:
            gc.enable()
    return least


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=at_least(100), default=100_000)
    parser.add_argument("--runs", type=at_least(1), default=3)
    parser.add_argument("--only", nargs="*", choices=sorted(FORMATS), default=sorted(FORMATS))
    parser.add_argument("--stages", action="store_true", help="each import's stages in this process, not the commands")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        transcript = folder / "engine.jsonl"
        make_transcript(transcript, max(1, args.lines // 3))  # three lines a step: decision, tool_started, observation
        lines = sum(1 for _ in transcript.open("rb"))
        files = {}
        for fmt in args.only:
            suffix, writer, per_step, _ = FORMATS[fmt]
            path = folder / f"{fmt}{suffix}"
            path.write_text("\n".join(writer(max(1, int(args.lines / per_step)))) + "\n")
            files[fmt] = path
        if args.stages:
            print(f"least CPU of {args.runs} round{'s' if args.runs != 1 else ''} in this process, collector off:")
            for fmt, path in files.items():
                least = stages(path, args.runs)
                print(f"{fmt:<20} " + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in least.items())
                      + f"; in all {sum(least.values()):.3f} s")
            return 0
        bytes_a_step = transcript.stat().st_size / max(1, args.lines // 3)
        sized = {}  # an engine transcript of as many bytes as each format's file
        for fmt, path in files.items():
            sized[fmt] = folder / f"engine-as-{fmt}.jsonl"
            make_transcript(sized[fmt], max(1, round(path.stat().st_size / bytes_a_step)))
        show = [*AGENT_TUI, "show", str(transcript)]
        imports = {fmt: [*AGENT_TUI, "import", str(path), "-o", str(folder / f"out-{fmt}.jsonl")] for fmt, path in files.items()}
        if "gemini-cli" in files:  # its floor, timed in the same rounds
            imports["bare"] = [sys.executable, str(ROOT / "bench" / "bare_import.py"), str(files["gemini-cli"]), str(folder / "out-bare.jsonl")]
        wall(show)  # the bytecode cache
        times: dict[str, list[tuple[float, float]]] = {"show": [], **{fmt: [] for fmt in files}}
        for _ in range(args.runs):
            times["show"].append(wall(show))
            for fmt, command in imports.items():
                for out in (folder / f"out-{fmt}.jsonl", *folder.glob(f"out-{fmt}-[0-9]*.jsonl")):  # its runs, not another shape's
                    out.unlink(missing_ok=True)
                times.setdefault(fmt, []).append(wall(command))
            for fmt in files:
                times.setdefault(f"show {fmt}", []).append(wall([*AGENT_TUI, "show", str(folder / f"out-{fmt}.jsonl")]))
                times.setdefault(f"bytes {fmt}", []).append(wall([*AGENT_TUI, "show", str(sized[fmt])]))
        base_wall = statistics.median(t[0] for t in times["show"])
        base_cpu = statistics.median(t[1] for t in times["show"])
        print(f"show of an agent-tui transcript of {lines:,} lines ({transcript.stat().st_size / 1e6:.1f} MB): {base_wall:.2f} s wall,"
              f" {base_cpu:.2f} s CPU (median of {args.runs})")
        print(f"{'format':<20} {'lines':>8} {'MB':>6} {'import wall':>12} {'x show':>7} {'import CPU':>11} {'x show':>7}"
              f" {'its show CPU':>13} {'x it':>6} {'show, as many bytes':>20} {'x bytes':>8}")
        for fmt, path in files.items():
            count = sum(1 for _ in path.open("rb"))
            w = statistics.median(t[0] for t in times[fmt])
            c = statistics.median(t[1] for t in times[fmt])
            own = statistics.median(t[1] for t in times[f"show {fmt}"])
            same_bytes = statistics.median(t[1] for t in times[f"bytes {fmt}"])
            print(f"{fmt:<20} {count:>8,} {path.stat().st_size / 1e6:>6.1f} {w:>10.2f} s {w / base_wall:>6.2f}x {c:>9.2f} s {c / base_cpu:>6.2f}x"
                  f" {own:>11.2f} s {c / own:>5.2f}x {same_bytes:>18.2f} s {c / same_bytes:>7.2f}x")
        if "bare" in times:
            w = statistics.median(t[0] for t in times["bare"])
            c = statistics.median(t[1] for t in times["bare"])
            print(f"{'(gemini floor)':<20} {'':>8} {'':>6} {w:>10.2f} s {w / base_wall:>6.2f}x {c:>9.2f} s {c / base_cpu:>6.2f}x"
                  f"   gemini-cli's file with no mapping (bench/bare_import.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
