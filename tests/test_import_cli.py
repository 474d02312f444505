"""`agent-tui import`, the foreign formats opened directly by show / replay / export, and
`export --format chat` read back by the chat importer with every call, result and answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import scenarios
from engine.sessions.run import new_run
from engine.stored.importers import FORMATS, load_any, load_runs
from engine.stored.transcript import read_transcript
from tui.cli import main
from tui.cli.saved import FORMATS as CLI_FORMATS

TRACES = Path(__file__).resolve().parent / "data" / "traces"


def test_the_cli_offers_exactly_the_engine_formats():
    assert CLI_FORMATS == list(FORMATS)


def test_import_writes_one_transcript_per_run_and_says_so(tmp_path, capsys):
    source = tmp_path / "prompts.txt"
    source.write_bytes((TRACES / "react_paper_hotpotqa_webthink_simple6.txt").read_bytes())
    out = tmp_path / "hotpot.jsonl"
    assert main(["import", str(source), "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{source}: 6 react runs, one transcript each:"
    written = [tmp_path / f"hotpot-{n}.jsonl" for n in range(1, 7)]
    assert lines[1:] == [f"{p}  ({s} steps)" for p, s in zip(written, [5, 3, 3, 3, 3, 3])]
    answers = [read_transcript(p).events[-1].answer for p in written]
    assert answers[1] == "Richard Nixon" and answers[5] == "yes"
    assert main(["import", str(source), "-o", str(out)]) == 2  # never overwrites
    assert "hotpot-1.jsonl is not empty" in capsys.readouterr().err


def test_import_of_one_run_defaults_next_to_the_source_and_keeps_warnings_on_stderr(tmp_path, capsys):
    source = tmp_path / "session.jsonl"
    source.write_bytes((TRACES / "codex_kvsankar_with_escalation.jsonl").read_bytes())
    assert main(["import", str(source)]) == 0
    captured = capsys.readouterr()
    target = tmp_path / "session.agent-tui.jsonl"
    assert captured.out.splitlines() == [f"{source}: 1 codex run:", f"{target}  (7 steps)"]
    assert "warning:" in captured.err and "bookkeeping" in captured.err
    t = read_transcript(target)
    assert t.header.scenario == "imported" and sum(len(e.actions) for e in t.events if e.type == "decision") == 4


def test_import_refusals_name_the_line_what_was_found_and_the_formats_tried(tmp_path, capsys):
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"id": 1, "note": "x"}\n{"id": 2}\n')
    assert main(["import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f'{bad}:1: found an object with keys "id", "note"; tried: agent-tui transcript;' in err
    assert "Codex CLI rollout JSONL" in err and "Inspect AI eval log" in err
    assert not (tmp_path / "notes.agent-tui.jsonl").exists()
    empty = tmp_path / "codex.jsonl"
    empty.write_bytes((TRACES / "codex_simonw_sample_session.jsonl").read_bytes())
    assert main(["import", str(empty)]) == 2
    assert "no step could be read from this codex log" in capsys.readouterr().err


@pytest.mark.parametrize("name", [
    "chat_pydantic_ai_tool_output_exchange.json", "claude_code_kvsankar_golden.jsonl", "codex_kvsankar_golden.jsonl",
    "swe_agent_test_repo.traj", "mini_swe_agent_local.traj.json", "inspect_ai_message_deduplication.eval",
    "react_paper_hotpotqa_webthink_simple6.txt", "langchain_docs_debugging_verbose.txt",
])
def test_show_replay_and_export_open_every_format_directly(name, capsys):
    path = str(TRACES / name)
    assert main(["show", path]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("agent-tui · imported · ") and "outcome: " in shown
    assert main(["replay", path, "--headless"]) == 0
    assert capsys.readouterr().out == shown
    assert main(["export", path]) == 0
    assert "## Steps" in capsys.readouterr().out
    assert main(["export", path, "--format", "chat"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["messages"][0]["role"] in ("system", "user")


def _runs(tmp_path: Path) -> list[Path]:
    paths = []
    for name, task, policy in [("support", "return-1187", None), ("library", None, "good"), ("library", None, "hallucinating"),
                               ("calculator", None, None), ("research", None, "careful"), ("grid", "3", "memory")]:
        path = tmp_path / f"{name}-{task}-{policy}.jsonl"
        run = new_run(scenarios.get(name), task, policy, out=path, approve="all")
        run.engine.run()
        run.close()
        paths.append(path)
    return paths


def _calls_results_answer(transcript) -> tuple[list, list, str | None]:
    calls = [(a.tool, a.args) for e in transcript.events if e.type == "decision" for a in e.actions]
    results = [(e.tool, e.text) for e in transcript.events if e.type == "observation"]
    ends = [e.answer for e in transcript.events if e.type == "run_ended"]
    return calls, results, ends[0] if ends else None


def test_chat_export_read_back_keeps_every_call_result_and_answer(tmp_path, capsys):
    for path in _runs(tmp_path):
        original = read_transcript(path)
        calls, results, answer = _calls_results_answer(original)
        assert calls and results and answer is not None, path.name
        out = tmp_path / f"{path.stem}.chat.json"
        assert main(["export", str(path), "--format", "chat", "-o", str(out)]) == 0
        capsys.readouterr()
        again = load_any(out)
        assert again.header.options["format"] == "chat"
        assert _calls_results_answer(again) == (calls, results, answer), path.name
        assert again.header.task_text == original.header.task_text
        assert {t.name for t in original.header.tools} <= {t.name for t in again.header.tools}


def test_chat_export_of_an_import_round_trips_user_turns_and_the_system_prompt(tmp_path, capsys):
    (tennis,) = [r for r in load_runs(TRACES / "chat_openai_cookbook_toy_chat_fine_tuning.jsonl") if "tennis" in r.header.task_text]
    from engine.stored.chat_export import chat_messages

    document, left_out = chat_messages(tennis.header, tennis.events)
    path = tmp_path / "tennis.json"
    path.write_text(json.dumps(document))
    again = load_any(path)
    assert left_out == 0
    assert again.header.options["system_prompt"] == tennis.header.options["system_prompt"]
    assert [(e.type, getattr(e, "text", None)) for e in again.events if e.type == "note"] == [
        (e.type, e.text) for e in tennis.events if e.type == "note"
    ]
    assert again.events[-1].answer == "It's easy to learn!"


def _failing_after(events: int, fault: BaseException):
    """`made_runs` whose one run's events stop with `fault` after `events` were made."""
    from engine.stored import importers

    real = importers.made_runs

    def made_runs(name, data, fmt="auto", **options):
        runs = real(name, data, fmt, **options)
        first = runs[0]
        made = first.events

        def taken():
            for count, event in enumerate(made):
                if count == events:
                    raise fault
                yield event

        first.events = taken()
        return runs[:1]

    return made_runs


@pytest.mark.parametrize("fault", [OSError(28, "No space left on device"), RuntimeError("a mapping fault")])
def test_an_import_that_stops_part_way_leaves_no_half_written_transcript(tmp_path, capsys, monkeypatch, fault):
    from engine.stored import importers

    source = tmp_path / "prompts.txt"
    source.write_bytes((TRACES / "react_paper_hotpotqa_webthink_simple6.txt").read_bytes())
    out = tmp_path / "hotpot.jsonl"
    monkeypatch.setattr(importers, "made_runs", _failing_after(3, fault))
    if isinstance(fault, OSError):
        assert main(["import", str(source), "-o", str(out)]) == 2
        assert f"{out}: cannot write: No space left on device (nothing was kept)" in capsys.readouterr().err
    else:
        with pytest.raises(RuntimeError):
            main(["import", str(source), "-o", str(out)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prompts.txt"]


GEMINI = TRACES / "gemini_cli_0_61_0_recorded.jsonl"


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_an_import_onto_a_pipe_or_a_socket_is_refused_and_leaves_it(kind, tmp_path, capsys):
    """Only a regular file is written, and only a regular file is ever removed: a FIFO or a
    socket given as the output stays as it was (a device node too: the same test of the file's
    kind, not tried here on a system's own)."""
    import os
    import socket
    import stat

    target = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(target)
    else:
        listening = socket.socket(socket.AF_UNIX)
        listening.bind(str(target))
        listening.close()
    before = os.lstat(target)
    assert main(["import", str(GEMINI), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"{target} is not a regular file (a device, a pipe or a socket); agent-tui writes only files (nothing was written)" in err
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode) and not stat.S_ISREG(after.st_mode)


def test_only_a_regular_file_is_removed_when_an_import_stops(tmp_path):
    import os
    import stat

    from tui.cli.importing import _unwritten

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _unwritten(fifo) == "" and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    half = tmp_path / "half.jsonl"
    half.write_text("{}\n")
    assert _unwritten(half) == " (nothing was kept)" and not half.exists()


@pytest.mark.parametrize("where", ["a-file/run.jsonl", "n" * 300 + ".jsonl", "loop/run.jsonl"])
def test_an_output_path_that_cannot_be_made_is_refused_in_words(where, tmp_path, capsys):
    """A file where a folder should be, a name too long, a loop of links: one line, exit 2."""
    import os

    (tmp_path / "a-file").write_text("x")
    os.symlink("loop", tmp_path / "loop")
    out = tmp_path / where
    assert main(["import", str(GEMINI), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agent-tui: {out}: cannot write: ") and err.rstrip().endswith("(nothing was written)")
    assert "Traceback" not in err


def test_an_import_whose_summary_no_one_reads_still_writes_the_transcript(tmp_path):
    """`agent-tui import ... | head -0`: stdout is closed before the first line; the transcript is
    what the import makes, so it is written all the same."""
    import os
    import subprocess
    import sys

    out = tmp_path / "run.jsonl"
    read_end, write_end = os.pipe()
    os.close(read_end)  # no reader at all: the first line written breaks the pipe
    try:
        done = subprocess.run([sys.executable, "-m", "tui.cli", "import", str(GEMINI), "-o", str(out)], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent, timeout=60)
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert read_transcript(out).header.options["format"] == "gemini-cli"
