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
