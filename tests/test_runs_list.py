"""`agent-tui runs`: the runs of a folder newest first, filtered, as JSON; bad files marked,
files of several runs counted per run, and each file read at its ends only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.stored import catalog, reader
from engine.stored.catalog import list_runs, summarise
from tests.support.imports import heavy, loaded_by
from tui.cli import main
from tests.support.runs import START, stored_run

DAY = 86_400.0


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    stored_run(runs, "old.jsonl", "calculator", at=START)
    stored_run(runs, "new.jsonl", "support", at=START + 2 * DAY)
    stored_run(runs, "middle.jsonl", "support", at=START + DAY, finish=False)
    return runs


def _listed(capsys, *argv: str) -> list[dict]:
    assert main(["runs", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_runs_are_listed_newest_first_with_what_each_run_is(folder: Path, capsys) -> None:
    runs = _listed(capsys, "--dir", str(folder))
    assert [Path(r["path"]).name for r in runs] == ["new.jsonl", "middle.jsonl", "old.jsonl"]
    new, middle, old = runs
    assert (new["source"], new["outcome"], new["steps"], new["resumable"]) == ("support", "answer", 3, False)
    assert new["task"].startswith("The headphones from order 1187") and new["policy"] == "scripted"
    assert new["tokens"] > 0 and new["cost"] == 0.0 and new["usage_partial"] is False
    assert (middle["outcome"], middle["steps"], middle["resumable"]) == ("unfinished", 1, True)
    assert (old["scenario"], old["policy"], old["steps"]) == ("calculator", "arithmetic", 2)


def test_the_plain_listing_is_one_line_a_run_uncut_when_not_a_terminal(folder: Path, capsys) -> None:
    assert main(["runs", "--dir", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["when", "source", "task", "policy", "steps", "outcome", "tokens", "cost", "resume", "file"]
    assert len(lines) == 4 and "\x1b" not in "".join(lines)
    assert "The headphones from order 1187 are broken. I want to return them." in lines[1]  # not cut
    assert lines[2].split()[-2:] == ["yes", "middle.jsonl"] and "unfinished" in lines[2]
    assert lines[3].endswith("old.jsonl")


def test_the_filter_is_part_of_a_task_scenario_or_outcome_in_any_case(folder: Path, capsys) -> None:
    assert [Path(r["path"]).name for r in _listed(capsys, "HEADPHONES", "--dir", str(folder))] == ["new.jsonl", "middle.jsonl"]
    assert [Path(r["path"]).name for r in _listed(capsys, "calculator", "--dir", str(folder))] == ["old.jsonl"]
    assert [Path(r["path"]).name for r in _listed(capsys, "unfinished", "--dir", str(folder))] == ["middle.jsonl"]
    assert main(["runs", "nothing-like-it", "--dir", str(folder)]) == 0
    out = capsys.readouterr()
    assert out.out == "" and "no runs in" in out.err and "'nothing-like-it'" in out.err


def test_the_data_folder_is_the_default_and_a_missing_one_has_no_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path / "home"))
    assert main(["runs"]) == 0
    assert "no runs in" in capsys.readouterr().err
    (tmp_path / "home" / "runs").mkdir(parents=True)
    stored_run(tmp_path / "home" / "runs", "a.jsonl")
    assert [Path(r["path"]).name for r in _listed(capsys)] == ["a.jsonl"]


def test_a_folder_that_cannot_be_listed_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["runs", "--dir", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip() == f"agent-tui: {tmp_path / 'nope'}: no such folder"
    (tmp_path / "file.jsonl").write_text("x\n")
    assert main(["runs", "--dir", str(tmp_path / "file.jsonl")]) == 2
    assert "is a file, not a folder of runs" in capsys.readouterr().err


def test_each_kind_of_bad_file_is_marked_with_its_reason_and_the_rest_still_list(folder: Path, capsys, monkeypatch) -> None:
    good = (folder / "old.jsonl").read_bytes()
    (folder / "binary.jsonl").write_bytes(b"\x00\xff\xfe" * 200)
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "other.jsonl").write_text('{"messages": []}\n')
    (folder / "torn.jsonl").write_bytes(good[:-7])
    (folder / "huge-header.jsonl").write_bytes(b'{"type":"header","task":"' + b"x" * (reader.ENDS_CAP + 10) + b'"}\n')
    (folder / "folder.jsonl").mkdir()
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")
    os.mkfifo(folder / "pipe.jsonl")  # opened, it would wait for a writer
    (folder / "denied.jsonl").write_bytes(good)
    real_open = open

    def refusing(path, *args, **kwargs):  # the tests run as root, whom chmod 000 does not stop
        if str(path).endswith("denied.jsonl"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(reader, "open", refusing, raising=False)
    runs = {Path(r["path"]).name: r for r in _listed(capsys, "--dir", str(folder))}
    problems = {name: run["problem"].removeprefix(run["path"]) for name, run in runs.items() if run["problem"]}
    assert problems == {
        "binary.jsonl": ":1: not UTF-8 text (byte 1); expected the header line (an object with \"type\": \"header\")",
        "empty.jsonl": ": the file is empty (no header line)",
        "other.jsonl": ':1: expected the header line (an object with "type": "header")',
        "torn.jsonl": ":6: the last line was cut off while being written and is ignored",
        "huge-header.jsonl": ":1: a header line longer than 4 MiB; not a transcript header",
        "folder.jsonl": ": is a folder, not a file",
        "pipe.jsonl": ": is a device, pipe or socket, not a file",
        "loop.jsonl": ": cannot read: Too many levels of symbolic links",
        "denied.jsonl": ": cannot read: Permission denied",
    }
    assert {"old.jsonl", "new.jsonl", "middle.jsonl"} <= set(runs) and not any(runs[n]["problem"] for n in ("old.jsonl", "new.jsonl"))
    torn = runs["torn.jsonl"]  # a torn end still lists what the file holds (resume repairs it)
    assert (torn["steps"], torn["outcome"], torn["resumable"]) == (2, "unfinished", True)
    assert main(["runs", "--dir", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    binary = next(line for line in lines if line.endswith("binary.jsonl"))
    assert "! unreadable" in binary and "line 1: not UTF-8 text" in binary


def test_control_characters_of_a_task_are_not_printed(tmp_path: Path, capsys) -> None:
    path = stored_run(tmp_path, "a.jsonl")
    head, _, rest = path.read_bytes().partition(b"\n")
    header = json.loads(head)
    header["task_text"] = "pay \x1b]52;c;aGk=\x07now\x1b[2J [bold]x[/"
    path.write_bytes(json.dumps(header).encode() + b"\n" + rest)
    assert main(["runs", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "pay \\x1b]52;c;aGk=\\x07now [bold]x[/" in out  # a clipboard's text shown, not set


def test_a_file_of_several_runs_lists_each_run(folder: Path, capsys) -> None:
    joined = folder / "joined.jsonl"
    joined.write_bytes((folder / "old.jsonl").read_bytes() + (folder / "new.jsonl").read_bytes())
    runs = [r for r in _listed(capsys, "--dir", str(folder)) if r["path"].endswith("joined.jsonl")]
    assert [(r["run"], r["scenario"], r["steps"], r["resumable"]) for r in runs] == [(2, "support", 3, False), (1, "calculator", 2, False)]
    assert main(["runs", "--dir", str(folder)]) == 0
    assert "joined.jsonl #2" in capsys.readouterr().out


def test_only_the_header_and_the_tail_are_read(tmp_path: Path) -> None:
    """A file whose middle is megabytes of garbage lists as the run its ends hold, and the
    bytes read are the header and the last lines (TAIL_BYTES), not the file."""
    path = stored_run(tmp_path, "a.jsonl", "support")
    head, _, events = path.read_bytes().partition(b"\n")
    garbage = b"\xff not a line of a transcript {\n" * 200_000
    path.write_bytes(head + b"\n" + garbage + events)
    read: list[int] = []
    real_open = open

    class Counting:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def read(self, n=-1):
            data = self.f.read(n)
            read.append(len(data))
            return data

        def __getattr__(self, name):
            return getattr(self.f, name)

    def counting_open(p, *args, **kwargs):
        return Counting(real_open(p, *args, **kwargs))

    reader.open = counting_open  # type: ignore[attr-defined]
    try:
        [summary] = summarise(path)
    finally:
        del reader.open
    assert (summary.steps, summary.outcome, summary.problem) == (3, "answer", None)
    assert summary.usage_partial is False  # the last lines reach back to step 1
    assert sum(read) <= 2 * reader.TAIL_BYTES < path.stat().st_size // 20


def test_a_long_run_shows_the_usage_of_the_steps_read_as_at_least(tmp_path: Path, capsys) -> None:
    path = stored_run(tmp_path, "long.jsonl")
    head, _, events = path.read_bytes().partition(b"\n")
    lines = events.splitlines(keepends=True)
    middle = [line for line in lines if b'"type":"observation"' in line]  # step 1's, repeated past TAIL_BYTES
    filler = b"".join(middle[:1] * (3 * reader.TAIL_BYTES // len(middle[0])))
    path.write_bytes(head + b"\n" + b"".join(lines[:2]) + filler + b"".join(lines[2:]))
    [summary] = summarise(path)
    assert summary.outcome == "answer" and summary.steps == 2
    assert summary.usage_partial is True and 0 < summary.tokens
    assert main(["runs", "--dir", str(tmp_path)]) == 0
    assert f"≥{summary.tokens}" in capsys.readouterr().out


def test_a_long_joined_file_marks_its_first_and_last_runs(folder: Path) -> None:
    first = (folder / "old.jsonl").read_bytes()
    head, _, events = first.partition(b"\n")
    padding = events.splitlines(keepends=True)[2] * (3 * reader.TAIL_BYTES // 100)
    joined = folder / "joined.jsonl"
    joined.write_bytes(head + b"\n" + padding + (folder / "new.jsonl").read_bytes())
    last, first_run = summarise(joined)
    assert last.scenario == "support" and last.steps == 3 and first_run.scenario == "calculator" and first_run.run == 1
    assert all("one of several runs" in s.problem for s in (last, first_run))
    assert not last.resumable and not first_run.resumable


def test_listing_reads_through_the_one_reader(folder: Path, monkeypatch) -> None:
    """The catalog parses lines with the reader's `LineIndex` and `parse_event` only."""
    calls: list[str] = []
    parse = reader.parse_event
    monkeypatch.setattr(reader, "parse_event", lambda raw, where, line=None: calls.append(where) or parse(raw, where, line))
    summaries = list_runs(folder)
    assert len(summaries) == 3 and calls
    assert not hasattr(catalog, "json")


def test_runs_json_and_help_import_no_textual() -> None:
    for argv in (("runs", "--help"), ("runs", "--json", "--dir", os.devnull)):
        _code, modules = loaded_by(*argv)
        assert heavy(modules, "textual", "rich", "httpx") == [], argv


def test_a_terminal_line_is_cut_to_fit_dropping_columns_but_never_the_file_name(folder: Path) -> None:
    from tui.run_list import cells, table

    rows = [cells(s, folder) for s in list_runs(folder)]
    for width in (80, 100, 120):
        lines = table(rows, width)
        assert all(len(line) <= width for line in lines), width
        assert [line.split()[-1] for line in lines[1:]] == ["new.jsonl", "middle.jsonl", "old.jsonl"]
    narrow = table(rows, 80)[0].split()
    assert "policy" not in narrow and {"when", "task", "steps", "outcome", "resume", "file"} <= set(narrow)
    assert table(rows, 200)[0].split() == table(rows, None)[0].split()  # room for every column


def test_a_last_line_longer_than_what_is_read_from_the_end_is_marked(tmp_path: Path) -> None:
    path = stored_run(tmp_path, "a.jsonl")
    head = path.read_bytes().partition(b"\n")[0]
    path.write_bytes(head + b"\n" + b'{"type": "note", "text": "' + b"x" * (reader.ENDS_CAP + 1000) + b'"}\n')
    [summary] = summarise(path)
    assert (summary.scenario, summary.task) == ("calculator", "What is 17 * 23, minus 100?")
    assert summary.steps is None and not summary.resumable
    assert summary.problem == "its last line is longer than 4 MiB, the most read from the end; steps and outcome not known"


@pytest.mark.parametrize("started", ["NaN", "Infinity", "-Infinity", "1e300", "1e17", "-5"])
def test_a_start_time_no_date_names_is_the_files_time(folder: Path, started: str, capsys) -> None:
    """An edited header's start (NaN, infinite, past the year 9999, negative) is listed at the
    file's time, in the plain listing and the JSON, and the rest of the folder still lists."""
    head, _, rest = (folder / "old.jsonl").read_bytes().partition(b"\n")
    header = json.loads(head)
    header["started_at"] = "@"
    odd = folder / "odd.jsonl"
    odd.write_bytes(json.dumps(header).replace('"@"', started).encode() + b"\n" + rest)
    os.utime(odd, (START + 3 * DAY, START + 3 * DAY))
    runs = _listed(capsys, "--dir", str(folder))
    assert [Path(r["path"]).name for r in runs] == ["odd.jsonl", "new.jsonl", "middle.jsonl", "old.jsonl"]
    assert runs[0]["started_at"] == START + 3 * DAY and runs[0]["problem"] is None
    assert main(["runs", "--dir", str(folder)]) == 0
    assert any(line.endswith("odd.jsonl") for line in capsys.readouterr().out.splitlines())
