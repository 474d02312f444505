"""Files of several runs: `--run N|ID` on show, replay, export and run --fork; `show --runs`;
agent-tui transcripts joined with `cat`; `run --fork --format`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.stored.importers import load_any
from engine.stored.replay import Timeline
from engine.stored.runs import RunChoiceError
from engine.stored.transcript import read_transcript
from tests.support.fake_openai import FakeOpenAI, say
from tui.cli import main

DATA = Path(__file__).resolve().parent / "data"
TRACES = DATA / "traces"
INSPECT = str(TRACES / "inspect_ai_popularity_excerpt.json")


def cli(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def joined(tmp_path, capsys) -> Path:
    """Three support runs joined with `cat`: tasks courier-1042, compensation-1042, courier-1042 again."""
    parts = []
    for n, task in enumerate(["courier-1042", "compensation-1042", "courier-1042"]):
        out = tmp_path / f"part{n}.jsonl"
        assert main(["run", "support", "--task", task, "--headless", "--approve", "none", "-o", str(out)]) in (0, 3, 4)
        parts.append(out.read_bytes())
    capsys.readouterr()
    path = tmp_path / "joined.jsonl"
    path.write_bytes(b"".join(parts))
    return path


def test_a_joined_file_opens_its_first_run_and_says_how_to_pick_another(joined, capsys):
    code, out, err = cli(capsys, "show", joined)
    assert code == 0
    assert out.startswith("agent-tui · support · courier-1042 · ")
    assert err.strip() == (f"agent-tui: warning: {joined} holds 3 runs; this is run 1 of 3 (open another with "
                           f"--run 2 .. --run 3; `agent-tui show {joined} --runs` lists them)")
    code, second, err = cli(capsys, "show", joined, "--run", "2")
    assert code == 0 and err == ""
    assert second.startswith("agent-tui · support · compensation-1042 · ")
    assert cli(capsys, "show", joined, "--run", "compensation-1042")[1] == second
    assert cli(capsys, "replay", joined, "--headless", "--run", "2")[1] == second
    code, report, _ = cli(capsys, "export", joined, "--run", "2")
    assert code == 0 and "compensation-1042" in report and "courier-1042" not in report


def test_the_viewer_opens_the_chosen_run_with_the_files_line_numbers(joined):
    lines = joined.read_bytes().splitlines()
    headers = [n for n, line in enumerate(lines, 1) if line.startswith(b'{"type":"header"')]
    assert len(headers) == 3
    timeline = Timeline.open(joined, run=3)
    assert timeline.header.task == "courier-1042" and timeline.warnings == []
    assert timeline.line_number(0) == headers[2] + 1
    assert timeline.events() == read_transcript(_part(joined, 3)).events
    first = Timeline.open(joined)
    assert first.header.task == "courier-1042" and "holds 3 runs; this is run 1 of 3" in first.warnings[0]


def _part(joined: Path, number: int) -> Path:
    return joined.with_name(f"part{number - 1}.jsonl")


def test_a_bad_line_in_a_later_run_is_named_by_its_line_in_the_joined_file(joined, capsys):
    lines = joined.read_bytes().splitlines(keepends=True)
    headers = [n for n, line in enumerate(lines) if line.startswith(b'{"type":"header"')]
    lines[headers[1] + 1] = b'{"type": "decision", "step": "x"}\n'
    joined.write_bytes(b"".join(lines))
    code, _, err = cli(capsys, "show", joined, "--run", "2")
    assert code == 2 and f"{joined}:{headers[1] + 2}: not a valid event" in err
    assert cli(capsys, "show", joined, "--run", "3")[0] == 0


@pytest.mark.parametrize("choice, what", [("0", "no run 0"), ("4", "no run 4"), ("nope", "no run with the id 'nope'")])
def test_a_run_that_is_not_there_exits_2_and_lists_what_is(joined, capsys, choice, what):
    for argv in (["show", joined], ["replay", joined], ["replay", joined, "--headless"], ["export", joined],
                 ["run", "--fork", joined, "--at", "1", "--headless", "--policy", "scripted", "-o", joined.with_name("f.jsonl")]):
        code, out, err = cli(capsys, *argv, "--run", choice)
        assert code == 2 and out == ""
        assert err.strip() == (f"agent-tui: {joined}: {what}; it holds 3 runs: --run takes 1..3 or an id "
                               f"('courier-1042', 'compensation-1042'); `agent-tui show {joined} --runs` lists them")
    assert not joined.with_name("f.jsonl").exists()


def test_an_id_two_runs_share_asks_for_the_number(joined, capsys):
    code, _, err = cli(capsys, "show", joined, "--run", "courier-1042")
    assert code == 2
    assert "runs 1, 3 all have the id 'courier-1042'; choose one by its number (--run 1)" in err


def test_show_runs_lists_number_id_steps_and_task(joined, capsys):
    code, out, _ = cli(capsys, "show", joined, "--runs")
    steps = [sum(e.type == "decision" for e in read_transcript(_part(joined, n)).events) for n in (1, 2, 3)]
    assert code == 0
    assert out.splitlines() == [
        f"{joined}: 3 runs",
        f"   1  id courier-1042  {steps[0]} steps  When does 1042 arrive? The courier said today.",
        f"   2  id compensation-1042  {steps[1]} steps  I want 20 € compensation because 1042 is late.",
        f"   3  id courier-1042  {steps[2]} steps  When does 1042 arrive? The courier said today.",
    ]
    code, out, _ = cli(capsys, "show", INSPECT, "--runs")
    assert code == 0 and out.splitlines()[0] == f"{INSPECT}: 3 runs"
    assert [line.split()[:3] for line in out.splitlines()[1:]] == [["1", "id", "1"], ["2", "id", "2"], ["3", "id", "3"]]
    with pytest.raises(SystemExit) as exit_:
        main(["show", str(joined), "--runs", "--run", "2"])
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_an_imported_file_of_several_runs_is_opened_by_number_or_sample_id(capsys):
    firsts = [load_any(INSPECT, run=n).events[-1] for n in (1, 2, 3)]
    assert [t.header.options["sample_id"] for t in (load_any(INSPECT, run=str(n)) for n in (1, 2, 3))] == [1, 2, 3]
    assert len({json.dumps(e.model_dump()) for e in firsts}) >= 2  # not the same run thrice
    code, out, err = cli(capsys, "export", INSPECT, "--run", "3", "--format", "chat")
    assert code == 0 and err == ""
    document = json.loads(out)
    assert document["messages"][-1]["content"] == firsts[2].answer
    react = TRACES / "react_paper_hotpotqa_webthink_simple6.txt"
    code, out, _ = cli(capsys, "show", react, "--run", "2")
    assert code == 0 and "Allie Goertz" in out.splitlines()[1]
    with pytest.raises(RunChoiceError, match=r"no run with the id 'x'; it holds 6 runs: --run takes 1\.\.6; "):
        load_any(react, run="x")


def test_a_fork_of_a_chosen_run_starts_from_that_run(joined, capsys, tmp_path):
    fork = tmp_path / "fork.jsonl"
    code, _, err = cli(capsys, "run", "--fork", joined, "--run", "2", "--at", "1", "--headless", "--policy", "scripted",
                       "--approve", "none", "-o", fork)
    assert code in (0, 3, 4), err
    assert "holds 3 runs" not in err
    header = read_transcript(fork).header
    assert header.task == "compensation-1042" and header.fork_step == 1


def test_resume_refuses_a_file_of_several_runs_and_writes_nothing(joined, capsys):
    before = joined.read_bytes()
    code, _, err = cli(capsys, "run", "--resume", joined, "--headless")
    assert code == 2
    assert f"{joined} holds 3 runs; --resume appends to its own file" in err
    assert f"agent-tui run --fork {joined} --run N" in err
    assert joined.read_bytes() == before


@pytest.mark.parametrize("flag, value", [("--run", "2"), ("--format", "codex")])
def test_run_and_format_go_with_fork(capsys, flag, value, tmp_path):
    for argv in (["run", "--headless"], ["run", "--resume", str(tmp_path / "x.jsonl")]):
        code, _, err = cli(capsys, *argv, flag, value)
        assert code == 2 and err.strip() == f"agent-tui: {flag} goes with --fork"


def test_import_writes_each_run_of_a_joined_file(joined, capsys, tmp_path):
    code, out, _ = cli(capsys, "import", joined, "-o", tmp_path / "split.jsonl")
    assert code == 0
    assert out.splitlines()[0] == f"{joined}: 3 agent-tui runs, one transcript each:"
    for n in (1, 2, 3):
        assert read_transcript(tmp_path / f"split-{n}.jsonl").events == read_transcript(_part(joined, n)).events


# -- run --fork --format ---------------------------------------------------------------

CALCULATOR = DATA / "trace_004_calculator.txt"


def test_fork_takes_format_as_show_does(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AGENT_TUI_API_KEY", "sk-test")
    forks = {}
    for fmt in ("auto", "langchain"):
        fork = tmp_path / f"{fmt}.jsonl"
        with FakeOpenAI() as server:
            server.add(say("done"))
            code, _, err = cli(capsys, "run", "--fork", CALCULATOR, "--format", fmt, "--at", "1", "--policy", "model",
                               "--model", "m", "--base-url", server.url, "--headless", "-o", fork)
        assert code == 0, err
        forks[fmt] = read_transcript(fork).header.options["format"]
    assert forks == {"auto": "trace", "langchain": "langchain"}


def test_fork_refuses_a_format_that_does_not_fit_as_show_does(tmp_path, capsys):
    chat = DATA / "chat_calculator.json"
    shown = cli(capsys, "show", chat, "--format", "trace")
    forked = cli(capsys, "run", "--fork", chat, "--format", "trace", "--at", "1", "--policy", "human", "--headless")
    assert shown[0] == forked[0] == 2
    assert f"{chat}:1:" in shown[2] and shown[2] == forked[2]
    for argv in (["show", chat], ["run", "--fork", chat]):
        with pytest.raises(SystemExit) as exit_:
            main([*map(str, argv), "--format", "cdx"])
        assert exit_.value.code == 2
        assert "argument --format: invalid choice: 'cdx' (choose from 'auto', 'jsonl', 'chat'," in capsys.readouterr().err
