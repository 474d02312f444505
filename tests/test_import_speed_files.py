"""bench/import_speed.py times imports of files it writes in each format's shape: each of those
files is read as the format it claims, with every call and result, so the figures are of real work."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.import_speed import FORMATS
from engine.stored.importers import load_runs
from tests.support.samples import import_counts


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_generated_file_is_read_as_its_format_with_every_call(fmt: str, tmp_path: Path) -> None:
    suffix, writer, _ = FORMATS[fmt]
    path = tmp_path / f"five{suffix}"
    path.write_text("\n".join(writer(5)) + "\n")
    runs = load_runs(path)
    assert {r.header.options["format"] for r in runs} == {fmt}
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
    import json
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
