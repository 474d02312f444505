"""The command line a new user meets: every message says what to do."""

from __future__ import annotations

import builtins
import io
from pathlib import Path

import pytest

import scenarios
from engine.sessions.resume import fork_position, fork_run
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript
from tests.support.cockpit_worlds import desk_scenario
from tui.cli import main

TRACE_SAMPLE = Path(__file__).resolve().parent / "data" / "traces" / "claude_code_simonw_sample_session.jsonl"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("scenario", "option", "said"),
    [
        ("grid", "sise=10", "scenario 'grid' has no option 'sise' (its options: size, density, seed)"),
        ("support", "speed=2", "scenario 'support' has no option 'speed' (it takes no options)"),
    ],
)
def test_unknown_scenario_options_are_usage_errors_naming_the_known_ones(capsys, scenario, option, said):
    code, _, err = run_cli(capsys, "run", scenario, "--option", option, "--headless")
    assert code == 2 and said in err


def test_out_a_folder_or_a_device_is_a_clear_message(capsys, tmp_path: Path):
    code, _, err = run_cli(capsys, "run", "library", "--headless", "--out", str(tmp_path))
    assert code == 2 and f"{tmp_path} is a folder; give a file name" in err and "already holds" not in err
    parent = tmp_path / "parent.jsonl"
    assert run_cli(capsys, "run", "library", "--headless", "--out", str(parent))[0] == 0
    code, _, err = run_cli(capsys, "run", "--fork", str(parent), "--at", "1", "--policy", "good", "--headless", "--out", str(tmp_path))
    assert code == 2 and f"{tmp_path} is a folder; give a file name" in err and "cannot write" not in err, err
    code, _, err = run_cli(capsys, "run", "library", "--headless", "--out", "/dev/null")
    assert code == 2 and "/dev/null is not a regular file" in err and "Errno" not in err


def test_import_into_a_folder_says_so_and_not_that_a_file_is_incomplete(capsys, tmp_path: Path):
    trace = tmp_path / "trace.txt"
    trace.write_text("Question: q\nThought: t\nAction: look[x]\nObservation: o\nFinal Answer: a\n")
    folder = tmp_path / "out"
    folder.mkdir()
    code, out, err = run_cli(capsys, "import", str(trace), "-o", str(folder))
    assert code == 2 and f"{folder} is a folder; give a file name" in err and "(nothing was written)" in err
    assert "incomplete" not in err and folder.is_dir() and not any(folder.iterdir())
    assert out == "", "refused before it says what it would write"


def test_export_makes_a_missing_folder_as_run_and_import_do_and_refuses_a_folder(capsys, tmp_path: Path):
    run = tmp_path / "run.jsonl"
    assert run_cli(capsys, "run", "library", "--headless", "--out", str(run))[0] == 0
    for argv in (["export", str(run), "-o", str(tmp_path / "new" / "deeper" / "run.md")],
                 ["import", str(TRACE_SAMPLE), "-o", str(tmp_path / "made" / "here" / "run.jsonl")]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 0, err
        assert Path(argv[-1]).is_file() and Path(argv[-1]).stat().st_size > 0
    code, _, err = run_cli(capsys, "export", str(run), "-o", str(tmp_path))
    assert code == 2 and f"{tmp_path} is a folder; give a file name" in err and "cannot write" not in err


def test_repetition_1_is_accepted_and_stops_at_the_first_repeat(capsys):
    code, out, _ = run_cli(capsys, "run", "library", "--policy", "stuck", "--repetition", "1", "--headless")
    assert code == 3 and "outcome: stopped after 2 steps: repetition" in out


def test_one_step_is_one_step(capsys):
    code, out, _ = run_cli(capsys, "run", "library", "--policy", "good", "--max-steps", "1", "--headless")
    assert code == 3 and "outcome: stopped after 1 step: steps budget" in out


def test_fork_at_names_the_steps_that_can_be_forked(capsys, tmp_path: Path):
    parent = tmp_path / "good.jsonl"
    assert run_cli(capsys, "run", "library", "--policy", "good", "--headless", "--out", str(parent))[0] == 0
    for at, said in [("9", "the run has 4 steps; fork at step 0..3"), ("4", "cannot fork at step 4: step 4 is the final answer; fork at step 0..3")]:
        code, _, err = run_cli(capsys, "run", "--fork", str(parent), "--at", at, "--headless")
        assert code == 2 and said in err, err
    code, out, _ = run_cli(capsys, "run", "--fork", str(parent), "--at", "3", "--policy", "good", "--headless", "--out", str(tmp_path / "f.jsonl"))
    assert code == 0, "the last step the message offers is accepted"


def test_fork_header_shows_the_new_policy_and_the_step(capsys, tmp_path: Path):
    parent = tmp_path / "good.jsonl"
    run_cli(capsys, "run", "library", "--policy", "good", "--headless", "--out", str(parent))
    child = tmp_path / "child.jsonl"
    code, out, _ = run_cli(capsys, "run", "--fork", str(parent), "--at", "2", "--policy", "stuck", "--headless", "--out", str(child))
    lines = out.splitlines()
    assert lines[0].endswith("policy: stuck")
    assert lines[2] == f"forked from {parent.resolve()} at step 2, then policy stuck (good before)"
    header = read_transcript(child).header
    assert (header.fork_step, header.fork_policy, header.policy) == (2, "stuck", "good")


def test_a_fork_of_a_world_without_restore_warns(capsys, tmp_path: Path):
    parent = tmp_path / "desk.jsonl"
    scenario = desk_scenario()
    run = new_run(scenario, "t", "alpha", out=parent)
    run.engine.step()
    run.close()
    fork = fork_run(scenario, read_transcript(parent), fork_position(read_transcript(parent), 1), "beta", out=tmp_path / "f.jsonl")
    fork.close()
    assert len(fork.warnings) == 1 and "has no restore(executed) hook, so it starts fresh" in fork.warnings[0]
    assert "1 tool call" in fork.warnings[0]
    library = tmp_path / "library.jsonl"
    run_cli(capsys, "run", "library", "--policy", "good", "--headless", "--out", str(library))
    code, _, err = run_cli(capsys, "run", "--fork", str(library), "--at", "2", "--headless", "--out", str(tmp_path / "g.jsonl"))
    assert code == 0 and "warning" not in err, "a world whose tools only read restores nothing, silently"


def test_verify_says_unfinished(capsys, tmp_path: Path):
    path = tmp_path / "half.jsonl"
    run = new_run(scenarios.get("library"), None, "good", out=path)
    run.engine.step()
    run.close()
    code, out, _ = run_cli(capsys, "verify", str(path))
    assert code == 0 and out.startswith("unfinished: all 2 events match") and "differs" not in out


def test_run_of_a_transcript_suggests_resume_or_replay(capsys, tmp_path: Path):
    code, _, err = run_cli(capsys, "run", str(tmp_path / "old.jsonl"))
    assert code == 2
    assert "looks like a saved run, not a scenario" in err and "--resume" in err and "agent-tui replay" in err


def test_headless_approval_prompt_says_what_it_accepts(capsys, monkeypatch, tmp_path: Path):
    answers = iter(["yes", "a"])
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(answers))
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr("sys.stdin", tty)
    code, out, _ = run_cli(capsys, "run", "support", "--headless", "--out", str(tmp_path / "s.jsonl"))
    assert code == 0
    assert "not an answer: 'yes'; type a (approve), A (approve always), r (reject), e (edit) or x (abort)" in out
    assert out.count("R-1") >= 1


def test_bench_shows_the_approval_mode(capsys):
    code, out, _ = run_cli(capsys, "bench", "support", "--no-progress", "--workers", "1")
    assert "support · 3 tasks · approvals rejected (--approve all runs them)" in " ".join(out.split())
    code, out, _ = run_cli(capsys, "bench", "support", "--no-progress", "--workers", "1", "--approve", "all")
    assert "support · 3 tasks · approvals all approved" in " ".join(out.split())


def test_a_scenario_file_run_is_verified_with_its_path(capsys, tmp_path: Path):
    world = str(Path(__file__).parent / "data" / "slow_world.py")
    path = tmp_path / "slow.jsonl"
    code, _, _ = run_cli(capsys, "run", world, "--headless", "--option", f"log={tmp_path / 'ticks'}", "--out", str(path))
    assert code == 0
    code, _, err = run_cli(capsys, "verify", str(path))
    assert code == 2 and "no scenario 'slow'" in err
    code, out, _ = run_cli(capsys, "verify", str(path), "--scenario", world)
    assert code == 0 and out.startswith("match: ")
