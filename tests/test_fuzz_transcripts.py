"""Mutated transcripts: the reader, the fold, `show` and `replay --headless` never raise an uncaught
exception, and every failure names the file and the line.

AGENT_TUI_LONG=1 runs 10,000 mutants instead of 400.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path


import scenarios
from engine.sessions.run import new_run
from engine.core.state import fold
from engine.stored.transcript import TranscriptError, read_transcript
from tui.cli import main
from tests.support.mutation import mutate

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
