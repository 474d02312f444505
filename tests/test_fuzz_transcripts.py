"""Mutated transcripts: the reader, the fold, `show` and `replay --headless` never raise an uncaught
exception, and every failure names the file and the line.

AGENT_TUI_LONG=1 runs 10,000 mutants instead of 400.
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest

import scenarios
from engine.sessions.run import new_run
from engine.core.state import fold
from engine.stored.transcript import TranscriptError, read_transcript
from tui.cli import main

MUTANTS = 10_000 if os.environ.get("AGENT_TUI_LONG") else 400


def _sources(tmp_path: Path) -> list[bytes]:
    out = []
    for name, task, approve in [("support", "return-1187", "all"), ("library", None, "ask"), ("support", "courier-1042", "ask")]:
        path = tmp_path / f"{name}-{task}.jsonl"
        run = new_run(scenarios.get(name), task, None, out=path, approve=approve)
        run.engine.run()
        if run.engine.status == "awaiting_approval":
            run.engine.reject("no")
            run.engine.run()
        run.close()
        out.append(path.read_bytes())
    return out


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


LOCATED = re.compile(r"^.+?:(\d+:)? ")


def test_mutated_transcripts_fail_cleanly(tmp_path, capsys):
    sources = _sources(tmp_path)
    rng = random.Random(20261129)
    path = tmp_path / "mutant.jsonl"
    outcomes = {"read": 0, "refused": 0}
    for n in range(MUTANTS):
        data = mutate(rng.choice(sources), rng)
        if rng.random() < 0.3:
            data = mutate(data, rng)
        path.write_bytes(data)
        for strict in (True, False):
            try:
                transcript = read_transcript(path, strict=strict)
            except TranscriptError as exc:
                message = str(exc)
                assert message.startswith(str(path) + ":"), message
                if "empty" not in message and "no header" not in message:
                    assert re.match(rf"^{re.escape(str(path))}:\d+: ", message), message
                outcomes["refused"] += 1
                continue
            outcomes["read"] += 1
            for problem in transcript.errors:
                assert re.match(rf"^{re.escape(str(path))}:\d+: ", problem), problem
            fold(transcript.header, transcript.events)
        if n % 10 == 0:
            for command in (["show", str(path)], ["replay", str(path), "--headless"]):
                code = main(command)
                _, err = capsys.readouterr()
                assert code in (0, 2), (command, err)
                assert "Traceback" not in err
    assert outcomes["read"] > 0 and outcomes["refused"] > 0
