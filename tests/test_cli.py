"""The headless command line: outcomes, exit codes, approvals without a terminal, show."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tui.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_shows_scenarios_tasks_and_policies(capsys):
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    for word in ("support", "return-1187", "library", "hallucinating", "calculator", "human"):
        assert word in out


@pytest.mark.parametrize(
    "argv, code, last",
    [
        (["run", "library", "--policy", "good"], 0, "outcome: answer after 4 steps: 2"),
        (["run", "library", "--policy", "stuck"], 3, "outcome: stopped after 2 steps: repetition"),
        (["run", "support", "--task", "compensation-1042"], 4, "outcome: handed-off after 2 steps"),
        (["run", "support", "--task", "courier-1042", "--repetition", "off"], 3, "outcome: stopped after 5 steps: steps budget"),
        (["run", "support", "--approve", "all"], 0, "outcome: answer after 3 steps: I opened request R-1"),
        (["run", "calculator"], 0, "outcome: answer after 2 steps: 291"),
        (["run", "library", "--policy", "good", "--max-steps", "2"], 3, "outcome: stopped after 2 steps: steps budget"),
    ],
)
def test_headless_outcomes_and_exit_codes(capsys, tmp_path, argv, code, last):
    out_file = tmp_path / "t.jsonl"
    got, out, err = run_cli(capsys, *argv, "--headless", "--out", str(out_file))
    assert got == code
    assert out.strip().splitlines()[-1].startswith(last)
    assert f"transcript: {out_file}" in err
    assert out_file.exists()


def test_default_transcript_goes_to_the_data_folder(capsys, _isolated_home):
    code, _, err = run_cli(capsys, "run", "calculator", "--headless")
    assert code == 0
    saved = list((_isolated_home / "runs").glob("*.jsonl"))
    assert len(saved) == 1 and str(saved[0]) in err


def test_approval_without_a_terminal_names_the_flag(tmp_path):
    out_file = tmp_path / "t.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "support", "--headless", "--out", str(out_file)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert proc.returncode == 2
    assert "--approve" in proc.stderr
    assert "needs approval" in proc.stdout


def test_approval_on_a_terminal_with_reject(monkeypatch, capsys, tmp_path):
    answers = iter(["r", "the order is a gift"])
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    code, out, _ = run_cli(capsys, "run", "support", "--headless", "--out", str(tmp_path / "t.jsonl"))
    assert code == 0
    assert "rejected by operator: the order is a gift" in out
    assert "the order is a gift" in out.strip().splitlines()[-1]


def test_approval_on_a_terminal_with_a_bad_edit_then_approve(monkeypatch, capsys, tmp_path):
    answers = iter(["e", "not json", "e", '{"order_id": "1187"}'])
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    code, out, _ = run_cli(capsys, "run", "support", "--headless", "--out", str(tmp_path / "t.jsonl"))
    assert code == 0
    assert "not accepted" in out
    assert "R-1" in out.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "nope", "--headless"], "no scenario 'nope'"),
        (["run", "library", "--policy", "bad", "--headless"], "has no policy 'bad'"),
        (["run", "library", "--task", "bad", "--headless"], "has no task 'bad'"),
        (["run", "library", "--rules", "/nonexistent.toml", "--headless"], "no such rules file"),
        (["run", "library", "--policy", "human", "--headless"], "needs the cockpit"),
        (["show", "/nonexistent.jsonl"], "no such file"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(capsys, argv, message):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [["run", "--max-steps", "zero"], ["run", "--approve", "maybe"], ["frobnicate"]])
def test_bad_flags_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2


def test_show_prints_a_saved_run(capsys, tmp_path):
    out_file = tmp_path / "t.jsonl"
    run_cli(capsys, "run", "library", "--headless", "--out", str(out_file))
    code, out, _ = run_cli(capsys, "show", str(out_file))
    assert code == 0
    assert "catalog(title=\"Il Gattopardo\")" in out
    assert out.strip().splitlines()[-1] == "outcome: answer after 4 steps: 2"


def test_headless_output_strips_control_characters(capsys, tmp_path):
    from engine import Decision, ScriptedPolicy
    from engine.sessions.run import new_run
    from tests.support.helpers import counting_scenario
    from tui.cli.run import run_headless

    policy = ScriptedPolicy("evil", lambda v: Decision.final("\x1b]0;pwned\x07title", "\x1b[31mred\x1b[0m"))
    run = new_run(counting_scenario(), "t", policy, out=tmp_path / "t.jsonl")
    code = run_headless(run)
    out, _ = capsys.readouterr()
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "red" in out


def test_a_new_run_never_writes_into_an_existing_transcript(capsys, tmp_path):
    out_file = tmp_path / "t.jsonl"
    assert main(["run", "library", "--headless", "--out", str(out_file)]) == 0
    before = out_file.read_bytes()
    capsys.readouterr()
    code, _, err = run_cli(capsys, "run", "library", "--headless", "--out", str(out_file))
    assert code == 2 and "is not empty (a run or another file)" in err
    assert out_file.read_bytes() == before


@pytest.mark.timeout(60)
@pytest.mark.parametrize("option", ["size=1", "density=x", "size=[1]", "density=0.97", "size=1000"])
def test_bad_scenario_options_are_usage_errors(capsys, option):
    """Also the grids that cannot be drawn: walls so dense that no grid has a path (this
    used to draw for ever) and a side so large that one draw takes the memory."""
    code, _, err = run_cli(capsys, "run", "grid", "--option", option, "--headless")
    assert code == 2
    assert "cannot start with these options" in err and "Traceback" not in err


def test_the_help_text_names_the_model_clients_default_url():
    from engine.model.config import DEFAULT_BASE_URL
    from tui.cli import model_flags

    assert model_flags.DEFAULT_BASE_URL == DEFAULT_BASE_URL


def test_a_command_is_described_by_its_handler_docstring() -> None:
    import argparse

    from tui.cli.common import add_command

    def handler(args: argparse.Namespace) -> int:
        """Do the thing to a file.

        A longer description,
        over two lines.
        """
        return 0

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    command = add_command(sub, "thing", handler)
    assert command.description == "A longer description, over two lines."
    assert "do the thing to a file" in parser.format_help()
    assert parser.parse_args(["thing"]).handler is handler


def test_budget_limits_leave_unset_flags_out() -> None:
    import argparse

    from tui.cli.common import budget_limits

    args = argparse.Namespace(max_steps=3, max_tokens=None, max_cost=0.5, max_seconds=None)
    assert budget_limits(args) == {"max_steps": 3, "max_cost": 0.5}


def test_run_writes_its_transcript_where_dash_o_says(tmp_path) -> None:
    out_file = tmp_path / "run.jsonl"
    assert main(["run", "library", "--headless", "-o", str(out_file)]) == 0
    assert '"type":"run_ended"' in out_file.read_text().replace(" ", "")


@pytest.mark.parametrize(
    "argv",
    [
        ["show"], ["replay", "--headless", "--at", "end"], ["replay", "--headless", "--at", "700"],
        ["replay", "--headless", "--at", "9999"], ["export"], ["export", "--format", "chat"],
    ],
)
def test_printing_a_long_run_leaves_the_collector_out_and_back_on(capsys, tmp_path, argv):
    """`show`, `replay --headless` and `export` free the events they read before the
    garbage collector is back, so no collection walks them (a young one may run, on
    what is left); it is on again afterwards, also when the command refuses its flags."""
    import gc

    import scenarios
    from engine.sessions.run import new_run

    world = scenarios.load_file(Path(__file__).resolve().parent.parent / "bench" / "worlds" / "lookup_world.py")
    path = tmp_path / "long.jsonl"
    run = new_run(world, "all", "looker", out=path, budget=world.budget.with_limit("steps", 1_500))
    run.engine.run()
    run.close()
    collections: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":  # how many objects this collection walks
            collections.append(sum(len(gc.get_objects(g)) for g in range(info["generation"] + 1)))

    main([argv[0], str(path), *argv[1:]])  # once before, for the modules it imports
    capsys.readouterr()
    gc.collect()
    gc.callbacks.append(seen)
    try:
        code = main([argv[0], str(path), *argv[1:]])
    finally:
        gc.callbacks.remove(seen)
    out, err = capsys.readouterr()
    assert gc.isenabled()
    if argv[-1] == "9999":
        assert code == 2 and "--at takes 0..1500" in err
        return
    assert code == 0, err
    assert all(walked < 3_000 for walked in collections), collections  # the 3,000 events read make 10,000 objects
    if argv[0] == "export":
        assert out.count("value of item-") == 1_500
        return
    assert out.count("\n  observe  ") == (700 if argv[-1] == "700" else 1_500)


@pytest.mark.parametrize(
    "flags",
    [["--price-in", "nan"], ["--price-out", "inf"], ["--timeout", "0"], ["--timeout", "-1"], ["--timeout", "nan"],
     ["--base-url", "notaurl"], ["--base-url", "ftp://127.0.0.1/v1"]],
)
def test_model_numbers_that_make_no_sense_are_usage_errors(capsys, tmp_path, flags):
    """A NaN price made every cost NaN, so a cost budget never tripped; a deadline of
    0 or less failed every request with 'did not finish within -1 s'; a base URL that is
    not http(s) started the run and stopped it at its first step (the configuration
    file already refused it)."""
    out = tmp_path / "run.jsonl"
    argv = ["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--policy", "model", "--headless", "--out", str(out), *flags]
    try:
        code = main(argv)
    except SystemExit as exc:  # refused by the flag's parser
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and (flags[0] in err or "price" in err or "base URL" in err), err
    assert not out.exists()


def test_a_folder_given_as_the_scenario_is_called_a_folder(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", str(tmp_path), "--headless")
    assert code == 2 and f"{tmp_path}: is a folder, not a scenario file" in err


@pytest.mark.parametrize(("argv", "usage"), [(["run", "--bogus"], "usage: agent-tui run "), (["show", "x.jsonl", "--bogus"], "usage: agent-tui show "),
                                             (["--bogus"], "usage: agent-tui [-h]")])
def test_a_flag_the_command_does_not_take_is_refused_with_that_commands_usage(capsys, argv, usage):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and usage in err and "unrecognized arguments: --bogus" in err, err


def test_a_flag_before_the_command_is_refused_with_the_top_usage(capsys):
    with pytest.raises(SystemExit):
        main(["--bogus", "run"])
    err = capsys.readouterr().err
    assert "usage: agent-tui [-h]" in err and "usage: agent-tui run" not in err and "--bogus" in err
