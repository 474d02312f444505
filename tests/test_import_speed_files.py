"""bench/import_speed.py times imports of files it writes in each format's shape: each of those
files is read as the format it claims, with every call and result, so the figures are of real work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.import_speed import FORMATS
from engine.stored.importers import load_runs
from tests.support.samples import import_counts


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_generated_file_is_read_as_its_format_with_every_call(fmt: str, tmp_path: Path) -> None:
    shape = FORMATS[fmt]
    path = tmp_path / f"five{shape.suffix}"
    path.write_text("\n".join(shape.writer(5)) + "\n")
    runs = load_runs(path)
    assert {r.header.options["format"] for r in runs} == {shape.fmt}
    assert import_counts(runs)[:3] == (1, 5, 5)


def test_the_stages_of_each_import_are_timed_in_the_benchs_own_process(capsys: pytest.CaptureFixture[str]) -> None:
    """`--stages` times an import's stages in one process (no command is run): a line a format,
    each stage named with its seconds."""
    from bench.import_speed import main

    assert main(["--stages", "--runs", "1", "--lines", "100", "--only", "gemini-cli", "codex"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("least CPU of 1 round in this process")
    assert [line.split()[0] for line in lines[1:]] == ["gemini-cli", "codex"]
    for line in lines[1:]:
        for stage in ("read, map, first look", "events", "serialise", "free", "in all"):
            assert f"{stage} " in line and " s" in line


def test_the_floor_of_a_gemini_import_writes_the_calls_and_results_the_import_writes(tmp_path: Path) -> None:
    """`bench/bare_import.py` (no mapping) writes each step's call and result as `agent-tui import`
    does, so the floor the bench prints next to the import is of the same work."""
    import subprocess
    import sys

    from bench.import_speed import ROOT, _gemini
    from tests.support.samples import import_counts

    source = tmp_path / "chat.jsonl"
    source.write_text("\n".join(_gemini(40)) + "\n")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bare_import.py"), str(source), str(tmp_path / "bare.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (imported,) = load_runs(source)
    (bare,) = load_runs(tmp_path / "bare.jsonl")
    assert import_counts([bare])[:3] == import_counts([imported])[:3] == (1, 40, 40)

    def essentials(events: list) -> list[str]:
        return [json.dumps(e.model_dump(include={"type", "step", "actions", "tool", "args", "text", "error", "usage"}), sort_keys=True)
                for e in events if e.type in ("decision", "observation")]

    assert essentials(bare.events) == essentials(imported.events)
    assert bare.header.task_text == imported.header.task_text


def _skeleton(value: object, key: str | None = None) -> object:
    """What a JSON line is made of: its keys, nested, each value's type (a call's arguments aside:
    Gemini CLI's `args`, Claude Code's `input`)."""
    if key in ("args", "input") and isinstance(value, dict):
        return "arguments"
    if isinstance(value, dict):
        return {k: _skeleton(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_skeleton(v) for v in value]
    return type(value).__name__


def _fresh_session(agent: str, tmp_path: Path) -> Path:
    """The session file the installed real `agent` (`gemini`, `codex`) writes for three shell calls
    against its fake model (tests/support/agent_sessions.py)."""
    import tempfile

    from tests.support import agent_sessions as record
    from tests.support.cli_agents import AGENTS, INSTALL

    program = AGENTS / agent
    if not program.exists():
        pytest.fail(f"{program} is not installed: {INSTALL} (.ci/run does)")
    home, work = Path(tempfile.mkdtemp(dir=tmp_path)), Path(tempfile.mkdtemp(dir=tmp_path))
    return getattr(record, agent)(str(program), home, work, calls=3)


def test_the_gemini_cli_chat_timed_is_shaped_as_the_real_binary_writes_one(tmp_path: Path) -> None:
    """The bench's Gemini CLI file is the chat the real binary (0.61.0, offline against the fake
    model) writes for as many steps: the same kinds of line in the same order, each of the same
    keys and types, five lines a step (the model's answer and its update, which the bench does
    not write, aside)."""
    real = _fresh_session("gemini", tmp_path).read_text().splitlines()
    shape = FORMATS["gemini-cli-recorded"]
    bench = list(shape.writer(3))
    assert [_skeleton(json.loads(line)) for line in real[:-2]] == [_skeleton(json.loads(line)) for line in bench]
    assert len(real) - 2 - 4 == 3 * shape.per_step  # after the session, its context, the task and an update


def test_the_commands_are_timed_a_row_a_shape_and_the_gemini_floor_beside_them(capsys: pytest.CaptureFixture[str]) -> None:
    """The timed rounds (fresh processes, small files): a row for each shape asked for, with its
    ratios, and the floor of the `gemini-cli` file (a line a step) when that shape is timed."""
    from bench.import_speed import main

    assert main(["--lines", "300", "--runs", "1", "--only", "gemini-cli-recorded", "gemini-cli"]) == 0  # a name the start of another's
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("show of an agent-tui transcript of ")
    assert [row.split()[0] for row in rows[2:]] == ["gemini-cli-recorded", "gemini-cli", "(gemini"]
    assert all(row.count("x") >= 2 for row in rows[2:])
    assert "bench/bare_import.py" in rows[-1]


def test_the_claude_code_session_timed_is_shaped_as_the_recorded_one() -> None:
    """The bench's Claude Code 2.1.197 session has the lines of the one the real binary recorded
    (tests/data/traces): its task line, then each step's text, call and result lines with the
    same keys and value types as the sample's (a call's arguments aside); its ids are uuids as
    the binary writes them, a quarter of them holding an exponent-like `e` and three digits."""
    import re

    from tests.support.mutation import TRACES

    sample = (TRACES / "claude_code_2_1_197_recorded.jsonl").read_text().splitlines()
    shape = FORMATS["claude-code-recorded"]
    bench = list(shape.writer(4))
    assert len(bench) == 1 + 4 * shape.per_step
    assert _skeleton(json.loads(bench[0])) == _skeleton(json.loads(sample[2]))
    step = [_skeleton(json.loads(line)) for line in sample[5:8]]  # the text, the call, the result
    assert [_skeleton(json.loads(line)) for line in bench[1:]] == step * 4
    uuids = [json.loads(line)["uuid"] for line in shape.writer(300)]
    assert len(set(uuids)) == len(uuids) and all(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", u) for u in uuids)
    assert sum(bool(re.search(r"e[0-9]{3}", u)) for u in uuids) > 60


def test_the_codex_rollout_timed_is_shaped_as_the_real_binary_writes_one(tmp_path: Path) -> None:
    """The bench's Codex CLI rollout has each step's lines as the real binary (0.171.0, offline
    against the fake model) writes them for three calls: the same kinds in the same order, each of
    the same keys and types, seven lines a step."""
    real = [json.loads(line) for line in _fresh_session("codex", tmp_path).read_text().splitlines()]
    shape = FORMATS["codex-recorded"]
    bench = [json.loads(line) for line in shape.writer(3)]
    first = next(n for n, line in enumerate(real) if line["payload"].get("item", {}).get("type") == "AgentMessage")
    steps = real[first:first + 3 * int(shape.per_step)]
    assert [_skeleton(line) for line in steps] == [_skeleton(line) for line in bench[2:]]
    assert real[first + 3 * int(shape.per_step)]["payload"]["item"]["type"] == "AgentMessage"  # the answer: no fourth call
