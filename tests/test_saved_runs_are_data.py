"""Saved runs are data: a transcript never makes agent-tui load code, and `verify`
never runs an irreversible tool again (a forged approval included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import Decision
from engine.sessions.verify import verify_run
from engine.stored.transcript import read_transcript
from tests.support.helpers import CountingWorld, counting_scenario, script
from tests.support.bank import BANK, bank_run, cli, rewrite, unfinished_bank_run


# -- 1. a transcript never makes agent-tui run code -------------------------------


@pytest.fixture
def evil(tmp_path, capsys) -> tuple[Path, Path]:
    """A support transcript whose header names a Python file that leaves a mark when imported."""
    mark = tmp_path / "imported.mark"
    code_file = tmp_path / "evil.py"
    code_file.write_text(f"from pathlib import Path\nPath({str(mark)!r}).write_text('ran')\n")
    out = tmp_path / "run.jsonl"
    assert cli(capsys, "run", "support", "--headless", "--out", out, "--max-steps", "1")[0] == 3
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    rows[0]["scenario"] = str(code_file)
    rows = [r for r in rows if r.get("type") != "run_ended"]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out, mark


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "{file}"],
        ["run", "--resume", "{file}", "--headless"],
        ["run", "--fork", "{file}", "--at", "0", "--headless"],
        ["replay", "{file}", "--headless"],
        ["show", "{file}"],
        ["export", "{file}"],
    ],
)
def test_a_header_naming_a_file_never_loads_it(capsys, evil, argv):
    path, mark = evil
    code, _, err = cli(capsys, *[a.replace("{file}", str(path)) for a in argv])
    assert not mark.exists(), "the transcript made agent-tui import its file"
    assert "Traceback" not in err
    if argv[0] in ("verify", "run"):
        assert code == 2 and "never chooses code" in err


def test_the_viewer_loads_no_scenario_file_named_by_the_transcript(evil, monkeypatch):
    import tui.replay_app as replay_app
    from tui.cli.replay import open_timeline

    path, mark = evil
    monkeypatch.setattr(replay_app.ReplayApp, "run", lambda self: None)
    assert replay_app.run_viewer(open_timeline(str(path))) is None
    assert not mark.exists()


def test_a_scenario_file_given_by_the_operator_still_works(capsys, tmp_path):
    out, log = unfinished_bank_run(capsys, tmp_path)
    code, _, err = cli(capsys, "run", "--resume", out, "--headless", "--approve", "all")
    assert code == 2 and "neither" not in err and "bank" in err  # the name alone is not looked up as a file
    code, stdout, err = cli(capsys, "run", BANK, "--resume", out, "--headless", "--approve", "all")
    assert code == 0, err


# -- 2. verify never runs an irreversible tool --------------------------------------


def test_verify_answers_irreversible_calls_from_the_file(capsys, tmp_path):
    out, log = bank_run(capsys, tmp_path)
    code, stdout, err = cli(capsys, "verify", out, "--scenario", BANK)
    assert code == 0, (stdout, err)
    assert stdout.startswith("match:")
    assert log.read_text() == "10\n", "verify ran the transfer again"


def test_verify_with_a_forged_edit_runs_nothing(capsys, tmp_path):
    out, log = bank_run(capsys, tmp_path)

    def forge(rows):
        for r in rows:
            if r.get("type") == "approval_decided":
                r.update(choice="modify", args={"amount": 999})

    rewrite(out, forge)
    code, stdout, _ = cli(capsys, "verify", out, "--scenario", BANK)
    assert code == 3 and "differs" in stdout
    assert log.read_text() == "10\n", "a forged approval made verify act"


def test_verify_of_the_engine_never_calls_the_irreversible_tool(tmp_path):
    worlds: list[CountingWorld] = []
    scenario = counting_scenario()
    scenario.make_world = lambda task, options: worlds.append(CountingWorld()) or worlds[-1]
    scenario.policies = {"payer": lambda w, t: script(Decision.act("pay", "pay", amount=5), name="payer")}
    from engine.sessions.run import new_run

    run = new_run(scenario, "t", "payer", out=tmp_path / "r.jsonl", approve="all")
    run.engine.run()
    run.close()
    assert worlds[0].calls == [("pay", {"amount": 5})]
    result = verify_run(scenario, read_transcript(tmp_path / "r.jsonl"))
    assert result.match, result.message
    assert worlds[1].calls == [], "verify executed the irreversible tool"


# -- 4. a header whose options or task build no world is refused, not a traceback ----------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("field", [("options", {"size": 1}), ("options", {"size": 10**6}), ("task", "99999999")])
@pytest.mark.parametrize(
    "argv",
    [["verify", "{file}"], ["run", "--fork", "{file}", "--at", "2", "--policy", "planner", "--headless", "--out", "{fork}"],
     ["run", "--resume", "{file}", "--headless"]],
)
def test_a_header_naming_a_world_that_cannot_be_built_is_a_usage_error(capsys, tmp_path, field, argv):
    out = tmp_path / "grid.jsonl"
    code, _, err = cli(capsys, "run", "grid", "--headless", "--out", out, "--max-steps", "4")
    assert code == 3, err
    key, value = field
    rewrite(out, lambda rows: (rows[0].__setitem__(key, value), rows.pop()))  # a forged header; the end cut off
    code, _, err = cli(capsys, *[a.replace("{file}", str(out)).replace("{fork}", str(tmp_path / "fork.jsonl")) for a in argv])
    assert code == 2 and "Traceback" not in err
    assert "cannot rebuild this run's world" in err and ("size" in err or "grid numbers" in err)


# -- 5. what a transcript says reaches the terminal's stderr without its control characters ----


@pytest.mark.parametrize(
    ("field", "argv"),
    [("policy", ["verify", "{file}"]), ("scenario", ["run", "--resume", "{file}", "--headless"]), ("scenario", ["verify", "{file}"])],
)
def test_an_error_quoting_the_transcript_strips_its_escape_sequences(capsys, tmp_path, field, argv):
    out = tmp_path / "run.jsonl"
    code, _, err = cli(capsys, "run", "library", "--headless", "--out", out, "--max-steps", "2")
    assert code == 3, err
    hostile = "x\x1b]0;owned\x07\x1b[2J\x9b31m"
    rewrite(out, lambda rows: (rows[0].__setitem__(field, hostile), rows.pop()))
    code, _, err = cli(capsys, *[a.replace("{file}", str(out)) for a in argv])
    assert code == 2 and "x" in err
    assert not any(c in err for c in "\x1b\x07\x9b"), repr(err)


@pytest.mark.parametrize(("sequence", "hidden"), [
    ("\x1b]0;HIDDEN-TITLE\x07", "HIDDEN-TITLE"), ("\x1b]52;c;HIDDEN-CLIP\x1b\\", "HIDDEN-CLIP"),
    ("\x1bPHIDDEN-DCS\x1b\\", "HIDDEN-DCS"), ("\x9d0;HIDDEN-OSC8\x9c", "HIDDEN-OSC8"),
    ("\x1b]0;HIDDEN-TO-THE-END and all that follows", "HIDDEN-TO-THE-END and all that follows"),  # no terminator
])
def test_a_sequence_that_carries_text_is_shown_with_its_escapes_not_hidden(capsys, tmp_path, sequence, hidden):
    """What the policy read, the operator reads: a title, a clipboard's text or a whole tail inside
    an escape sequence is shown with its escapes in the log (`show`, `export`), never run and never
    dropped with its text; colours and cursor moves, which carry none, are removed."""
    out = tmp_path / "run.jsonl"
    assert cli(capsys, "run", "library", "--headless", "--out", out, "--max-steps", "2")[0] == 3

    def forge(rows):
        decision = next(r for r in rows if r["type"] == "decision")
        observation = next(r for r in rows if r["type"] == "observation")
        decision["thought"] = f"think \x1b[31m{sequence}"
        observation["text"] = f"saw {sequence}\x1b[2J"

    rewrite(out, forge)
    for argv in (["show", out], ["export", out, "--format", "markdown", "-o", tmp_path / "run.md"]):
        code, shown, err = cli(capsys, *argv)
        assert code == 0, err
        if argv[0] == "export":
            shown = (tmp_path / "run.md").read_text()
        assert shown.count(hidden) >= 2, (hidden, shown)
        assert not any(c in shown for c in "\x1b\x07\x9b\x9c\x9d"), repr(shown)
        assert "[31m" not in shown and "[2J" not in shown


@pytest.mark.parametrize("duration", [float("nan"), float("inf"), -1e308, 1e300])
def test_a_forged_duration_reads_as_unknown_or_short_never_nan_or_300_digits(capsys, tmp_path, duration):
    """A hand-edited step time (NaN, infinite, -1e308) once read `time ... nan s`, or 300 digits
    in `export`: every amount is written by `engine.core.amounts`, which says "?" for what is no
    number and writes a huge one in three digits and an exponent."""
    from engine.core.amounts import amount, short_amount

    out = tmp_path / "run.jsonl"
    assert cli(capsys, "run", "library", "--headless", "--out", out, "--max-steps", "2")[0] == 3

    def forge(rows):
        for row in rows:
            if row["type"] in ("decision", "observation"):
                row["duration"] = duration

    rewrite(out, forge)
    for argv in (["show", out], ["export", out, "--format", "markdown", "-o", tmp_path / "run.md"]):
        code, shown, err = cli(capsys, *argv)
        assert code == 0, err
        shown = (tmp_path / "run.md").read_text() if argv[0] == "export" else shown
        assert "nan" not in shown.lower().replace("nanna", "") and "inf s" not in shown
        assert not any(len(word) > 40 and word.strip("-.$s").isdigit() for word in shown.split()), shown
    for kind in ("steps", "tokens", "cost", "seconds"):
        for text in (amount(kind, duration), short_amount(kind, duration)):
            assert len(text) <= 12 and "nan" not in text and "inf" not in text, (kind, text)


@pytest.mark.parametrize("value", [10**400, -(10**400), 10**20])
def test_a_forged_budget_past_a_floats_range_is_written_short(capsys, tmp_path, value):
    """A budget limit is an int of any size in a hand-edited header: 10**400 once made every
    amount raise OverflowError (export ended in a traceback)."""
    from engine.core.amounts import amount, short_amount

    out = tmp_path / "run.jsonl"
    assert cli(capsys, "run", "library", "--headless", "--out", out, "--max-steps", "2")[0] == 3
    rewrite(out, lambda rows: rows[0]["budget"].__setitem__("max_tokens", value))
    code, _, err = cli(capsys, "export", out, "--format", "markdown", "-o", tmp_path / "run.md")
    assert code == 0 and "Traceback" not in err, err
    report = (tmp_path / "run.md").read_text()
    assert not any(len(word) > 40 for word in report.split() if word.strip("-.$s,").isdigit())
    for kind in ("steps", "tokens", "cost", "seconds"):
        assert len(amount(kind, value)) <= 14 and len(short_amount(kind, value)) <= 14
