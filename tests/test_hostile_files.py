"""Hostile transcripts: every command and the viewer refuse them with FILE:LINE, quickly.

A transcript is untrusted input. Steps that jump (a line claiming step 10**12),
lone surrogates, a 5,001-digit number, a torn last line of 100,000 `[`, a
5,000-deep JSON typed at the edit prompt, and a line longer than the cap
(32 MiB; a 1 GB one included) each gave a traceback, minutes of work or
gigabytes of memory; now each is one line on stderr naming the file and line,
exit 2, and the viewer's `q` still answers.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from engine.stored.reader import MAX_LINE_BYTES, TranscriptError, read_bytes
from tests.support.cli import installed_agent_tui

BANK = Path(__file__).resolve().parent / "data" / "bank_world.py"
COMMANDS = {
    "show": ["show", "{f}"],
    "replay": ["replay", "{f}", "--headless", "--at", "1"],
    "export": ["export", "{f}"],
    "verify": ["verify", "{f}", "--scenario", str(BANK)],
    "resume": ["run", str(BANK), "--resume", "{f}", "--headless", "--approve", "all"],
    "fork": ["run", str(BANK), "--fork", "{f}", "--at", "1", "--headless", "--approve", "all", "--out", "{f}.fork"],
}


def bank_lines(tmp_path: Path) -> list[str]:
    """A bank run's lines, cut after its first step (header, decision, tool_started, observation)."""
    out, log = tmp_path / "source.jsonl", tmp_path / "transfers.log"
    subprocess.run(
        [installed_agent_tui(), "run", str(BANK), "--headless", "--approve", "all", "--out", str(out), "--option", f"log={log}"],
        check=True, capture_output=True, timeout=120,
    )
    return out.read_text().splitlines()[:4]


def run_all(path: Path, limit_memory: int | None = None) -> dict[str, subprocess.CompletedProcess]:
    def limited() -> None:
        if limit_memory:
            resource.setrlimit(resource.RLIMIT_AS, (limit_memory, limit_memory))

    results = {}
    for name, argv in COMMANDS.items():
        results[name] = subprocess.run(
            [installed_agent_tui(), *[a.replace("{f}", str(path)) for a in argv]],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, preexec_fn=limited,
        )
    return results


def assert_refused(results, where: str, words: str) -> None:
    for name, done in results.items():
        assert "Traceback" not in done.stderr, (name, done.stderr[-2000:])
        assert done.returncode == 2, (name, done.returncode, done.stdout[-500:], done.stderr[-500:])
        assert where in done.stderr and words in done.stderr, (name, done.stderr[-500:])


@pytest.fixture
def lines(tmp_path) -> list[str]:
    return bank_lines(tmp_path)


def test_steps_that_jump_are_refused_in_every_command(tmp_path, lines):
    decision, observation = json.loads(lines[1]), json.loads(lines[3])
    decision["step"], observation["step"] = 10**12, 10**12
    path = tmp_path / "jump.jsonl"
    path.write_text("\n".join([*lines[:2], lines[3], json.dumps(decision), json.dumps(observation)]) + "\n")
    assert_refused(run_all(path), f"{path}:4:", "steps cannot jump")


def test_the_viewer_answers_q_on_a_file_whose_steps_jump(tmp_path, lines):
    from engine.stored.replay import Timeline
    from tui.replay_app import ReplayApp

    decision = json.loads(lines[1])
    decision["step"] = 10**12
    path = tmp_path / "jump.jsonl"
    path.write_text("\n".join([*lines, json.dumps(decision)]) + "\n")
    timeline = Timeline.open(path)

    async def view_and_quit() -> None:
        app = ReplayApp(timeline)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("end")
            await pilot.pause()
            await pilot.press("q")
            await pilot.pause()
        assert app.return_code is not None or not app.is_running

    asyncio.run(asyncio.wait_for(view_and_quit(), 60))
    timeline.build_index()
    assert any(f"{path}:5:" in e and "steps cannot jump" in e for e in timeline.errors), timeline.errors
    assert timeline.steps() == 1


def test_lone_surrogates_are_refused_in_every_command(tmp_path, lines):
    observation = lines[3].replace('"text":"', '"text":"\\ud800\\udfff\\udc00 ', 1)
    path = tmp_path / "surrogates.jsonl"
    path.write_text("\n".join([*lines[:3], observation]) + "\n")
    assert_refused(run_all(path), f"{path}:4:", "lone surrogate")


def test_a_5001_digit_number_is_refused_in_every_command(tmp_path, lines):
    observation = json.loads(lines[3])
    path = tmp_path / "digits.jsonl"
    text = json.dumps(observation).replace('"index": 0', '"index": ' + "9" * 5001)
    assert "9" * 5001 in text
    path.write_text("\n".join([*lines[:3], text]) + "\n")
    assert_refused(run_all(path), f"{path}:4:", "digits")


def test_a_torn_last_line_of_100000_brackets_is_ignored_on_resume(tmp_path, lines, capfd):
    path = tmp_path / "torn.jsonl"
    (tmp_path / "transfers.log").write_text("")
    path.write_text("\n".join(lines) + "\n" + "[" * 100_000)
    done = subprocess.run(
        [installed_agent_tui(), "run", str(BANK), "--resume", str(path), "--headless", "--approve", "all"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-1000:]
    assert f"{path}:5:" in done.stderr and "cut off" in done.stderr


def test_a_deep_json_at_the_edit_prompt_is_not_accepted(tmp_path, monkeypatch, capsys):
    from tui.cli import main

    answers = iter(["e", "[" * 5000 + "]" * 5000, "e", "{" * 5000, "x"])
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(answers))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    code = main(["run", str(BANK), "--headless", "--out", str(tmp_path / "r.jsonl"), "--option", f"log={tmp_path / 'log'}"])
    out = capsys.readouterr().out
    assert code == 5
    assert out.count("not accepted") == 2


@pytest.mark.parametrize("size", [MAX_LINE_BYTES + 1, 1 << 30], ids=["just over the cap", "1 GB"])
def test_a_line_over_the_cap_is_refused_without_reading_the_file_whole(tmp_path, lines, size):
    path = tmp_path / "long.jsonl"
    with open(path, "w") as f:
        f.write(lines[0] + "\n")
        f.truncate(len(lines[0]) + 1 + size)  # a sparse line of NUL bytes: no disk used
    with pytest.raises(TranscriptError, match=rf"{path}:2: a line longer than 32 MiB"):
        read_bytes(path)
    # 600 MB of address space: reading the 1 GB line whole would fail with MemoryError.
    assert_refused(run_all(path, limit_memory=600 << 20), f"{path}:2:", "a line longer than 32 MiB")


def test_read_bytes_counts_lines_to_the_long_one(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a\n" * 10 + b"b" * 5000 + b"\nc\n")
    with pytest.raises(TranscriptError, match=r":11: a line longer than 4096 bytes"):
        read_bytes(path, line_cap=4096)
    assert read_bytes(path, line_cap=5000) == path.read_bytes()
