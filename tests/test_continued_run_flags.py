"""Flags on a continued run are applied or refused, never ignored; a missing rules file is an error.

A deny rule given with `run --resume` used to be silently dropped, and the
resumed run made the transfer it was meant to stop.
"""

from __future__ import annotations

import pytest

from engine.stored.transcript import read_transcript
from tests.support.bank import BANK, cli, unfinished_bank_run


# -- 8. flags on resume and fork are applied or refused, never ignored ----------------------


@pytest.mark.parametrize(
    "flags", [["--rules", "{rules}"], ["--max-steps", "9"], ["--max-tokens", "9"], ["--max-cost", "1"], ["--max-seconds", "5"],
              ["--repetition", "3"], ["--option", "log=x"], ["--task", "pay"]]
)
def test_resume_refuses_flags_it_cannot_apply(capsys, tmp_path, flags):
    out, log = unfinished_bank_run(capsys, tmp_path)
    rules = tmp_path / "deny.toml"
    rules.write_text('[[rule]]\ntool = "transfer"\neffect = "deny"\n')
    argv = [f.replace("{rules}", str(rules)) for f in flags]
    code, _, err = cli(capsys, "run", BANK, "--resume", out, "--headless", "--approve", "all", *argv)
    assert code == 2 and flags[0] in err and "fork" in err
    assert log.read_text() == "", "the resume ran although a flag was refused"


def test_a_deny_rule_given_to_a_fork_stops_the_transfer(capsys, tmp_path):
    out, log = unfinished_bank_run(capsys, tmp_path)
    rules = tmp_path / "deny.toml"
    rules.write_text('[[rule]]\ntool = "transfer"\neffect = "deny"\n')
    fork = tmp_path / "fork.jsonl"
    code, stdout, err = cli(capsys, "run", BANK, "--fork", out, "--at", "1", "--out", fork, "--headless", "--approve", "all",
                            "--rules", rules, "--max-steps", "3")
    assert log.read_text() == "", "the deny rule given to the fork was ignored"
    saved = read_transcript(fork)
    assert any(e.type == "observation" and e.text.startswith("DENIED") for e in saved.events)
    assert saved.header.budget.max_steps == 3


@pytest.mark.parametrize("argv", [["run", "library", "--headless", "--rules", "/nonexistent/r.toml"]])  # "": test_cli_empty_arguments
def test_a_missing_rules_file_is_always_an_error(capsys, argv):
    code, _, err = cli(capsys, *argv)
    assert code == 2 and "rules file" in err


def test_a_fork_with_a_missing_rules_file_is_an_error(capsys, tmp_path):
    out, log = unfinished_bank_run(capsys, tmp_path)
    code, _, err = cli(capsys, "run", BANK, "--fork", out, "--at", "1", "--headless", "--rules", tmp_path / "none.toml")
    assert code == 2 and "no such rules file" in err
