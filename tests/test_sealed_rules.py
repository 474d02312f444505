"""Approval rules read from a transcript are believed only when this machine's operator made them.

Someone who can edit a run's file (a shared folder, a downloaded run) adds an
"approve always" for `refund` to an earlier step, or an allow rule to the header:
resumed or forked here, the next refund must still be asked. A genuine "approve
always" made here keeps holding across resume and fork; an old file without seals
still resumes, its rules unused and the operator told so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.sessions.resume import fork_position, fork_run, resume_run
from engine.sessions.run import new_run
from engine.stored.transcript import read_transcript
from tests.support.sealed import REFUND_ALWAYS, WORLD, first_session, parsed, refund_approval, refunds, rewrite


def resumed(path: Path):
    run = resume_run(refunds(), read_transcript(path), approve="ask")
    status = run.engine.run()
    return run, status


def asks_for_refund_2(path: Path) -> list[str]:
    """Resume the file with --approve ask: the next refund must pause for the operator. The warnings."""
    run, status = resumed(path)
    try:
        assert (status, run.engine.state.pending and run.engine.state.pending.tool) == ("awaiting_approval", "refund")
        assert run.engine.state.pending.args == {"order": "2"}
        assert run.world.calls == ["notify 1", "refund 1"], "a refund ran that nobody approved"
        return run.warnings
    finally:
        run.close()


def genuine_refund_always(tmp_path: Path, name: str) -> dict:
    """The step-2 "approve always" line of another run the operator made on this machine."""
    other = tmp_path / name
    return refund_approval(parsed(first_session(other, refund_always=True)))


@pytest.mark.parametrize("seal", ["none", "from-notify-in-this-run", "from-another-run", "another-machine"])
def test_a_forged_approve_always_in_an_earlier_step_does_not_clear_a_later_refund(tmp_path: Path, seal: str) -> None:
    path = tmp_path / "run.jsonl"
    lines = parsed(first_session(path, notify_always=True))
    line = refund_approval(lines)
    line.update(choice="approve_always", rule=REFUND_ALWAYS)
    if seal == "from-notify-in-this-run":  # the genuine seal of step 1's "approve always"
        line["seal"] = next(x for x in lines if x["type"] == "approval_decided" and x["step"] == 1)["seal"]
    elif seal == "from-another-run":  # a genuine line of the same step, whole, from another run
        line.clear()
        line.update(genuine_refund_always(tmp_path, "other.jsonl"))
        assert line["seal"]
    elif seal == "another-machine":
        from engine.core.events import ApprovalDecided, Header
        from engine.sessions.seals import Sealer

        other_key = bytes(range(32))
        line["seal"] = Sealer(other_key, Header.model_validate(lines[0]))(ApprovalDecided.model_validate(line)).seal
    rewrite(path, lines)
    warnings = asks_for_refund_2(path)
    assert any("1 approval rule in" in w and "not made on this machine" in w and "refund at step 2" in w for w in warnings), warnings


@pytest.mark.parametrize("seal", ["kept", "removed", "from-another-run"])
def test_a_forged_allow_rule_in_the_header_does_not_clear_a_refund(tmp_path: Path, seal: str) -> None:
    path = tmp_path / "run.jsonl"
    lines = parsed(first_session(path))
    header = lines[0]
    assert header["seal"], "a run made here has a sealed header"
    header["rules"].append({"tool": "refund", "effect": "allow", "args": {}, "source": "rules.toml:1"})
    if seal == "removed":
        del header["seal"]
    elif seal == "from-another-run":
        other = tmp_path / "other.jsonl"
        header["seal"] = parsed(first_session(other, rules=[]))[0]["seal"]
    rewrite(path, lines)
    warnings = asks_for_refund_2(path)
    assert any("allow refund in the header" in w for w in warnings), warnings


def test_a_forged_rule_is_not_sealed_again_by_a_fork(tmp_path: Path) -> None:
    """A fork writes a sealed header and seals the "approve always" it copies: a forged
    rule must not come out of it believed (nor from the fork's own resume)."""
    path = tmp_path / "run.jsonl"
    lines = parsed(first_session(path))
    refund_approval(lines).update(choice="approve_always", rule=REFUND_ALWAYS)
    lines[0]["rules"].append({"tool": "refund", "effect": "allow", "args": {}, "source": "x"})
    rewrite(path, lines)
    transcript = read_transcript(path)
    out = tmp_path / "fork.jsonl"
    fork = fork_run(refunds(), transcript, fork_position(transcript, "end"), out=out, approve="ask")
    try:
        assert any("2 approval rules in" in w for w in fork.warnings), fork.warnings
        assert fork.engine.run() == "awaiting_approval" and fork.engine.state.pending.tool == "refund"
        assert fork.world.calls == ["notify 1", "refund 1"]
    finally:
        fork.close()
    child = parsed(out.read_text().splitlines())
    assert child[0]["seal"] and all(r["tool"] != "refund" for r in child[0]["rules"])
    assert "seal" not in refund_approval(child), "the forged line was copied as it was, never sealed"
    warnings = asks_for_refund_2(out)  # the fork resumed asks too
    assert any("1 approval rule in" in w and "refund at step 2" in w for w in warnings), warnings


def test_a_forged_approve_always_does_not_clear_a_refund_in_a_headless_resume(tmp_path: Path) -> None:
    """`agent-tui run WORLD --resume FILE --headless --approve ask` with no terminal: the refund
    is not run, the command says why (exit 2), and the unused rule is named on stderr."""
    import os
    import subprocess
    import sys

    path = tmp_path / "run.jsonl"
    lines = parsed(first_session(path))
    refund_approval(lines).update(choice="approve_always", rule=REFUND_ALWAYS)
    rewrite(path, lines)
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", str(WORLD), "--resume", str(path), "--headless", "--approve", "ask"],
        capture_output=True, text=True, env={**os.environ}, stdin=subprocess.DEVNULL, timeout=120,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "1 approval rule in" in done.stderr and "not made on this machine" in done.stderr, done.stderr
    assert "needs approval" in done.stderr and "Traceback" not in done.stderr, done.stderr
    ran = [e for e in read_transcript(path).events if e.type == "observation" and e.executed]
    assert [(e.tool, e.args) for e in ran] == [("notify", {"order": "1"}), ("refund", {"order": "1"})]


def test_a_genuine_approve_always_holds_after_resume(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    first_session(path, refund_always=True)
    run, status = resumed(path)
    try:
        assert status == "ended", "the operator's own 'approve always' was asked again"
        assert run.world.calls == ["notify 1", "refund 1", "refund 2", "refund 3"]
        assert run.warnings == []
    finally:
        run.close()


def test_a_genuine_approve_always_holds_in_a_fork_and_in_the_fork_resumed(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    first_session(path, refund_always=True)
    transcript = read_transcript(path)
    out = tmp_path / "fork.jsonl"
    fork = fork_run(refunds(), transcript, fork_position(transcript, "end"), out=out, approve="ask")
    try:
        assert fork.warnings == []
        assert fork.engine.step() == "ready" and fork.world.calls[-1] == "refund 2"
    finally:
        fork.close()
    again, status = resumed(out)
    try:
        assert status == "ended" and again.world.calls == ["notify 1", "refund 1", "refund 2", "refund 3"]
    finally:
        again.close()


def test_a_resumed_session_seals_its_own_approve_always(tmp_path: Path) -> None:
    """An "approve always" given after a resume holds at the next resume."""
    path = tmp_path / "run.jsonl"
    first_session(path)
    run, status = resumed(path)
    assert status == "awaiting_approval"
    run.engine.approve(always=True)
    assert run.world.calls[-1] == "refund 2"
    run.close()
    again, status = resumed(path)
    try:
        assert status == "ended" and again.world.calls[-1] == "refund 3"
    finally:
        again.close()


def test_an_old_file_without_seals_resumes_with_its_rules_unused(tmp_path: Path) -> None:
    """A file written before seals: it resumes, its allow rules (header and "approve always")
    are not used, a deny rule still holds, and nothing in the file is changed."""
    from engine import RuleInfo

    path = tmp_path / "run.jsonl"
    rules = [RuleInfo(tool="refund", effect="allow", args={"order": "2"}), RuleInfo(tool="refund", effect="deny", args={"order": "3"})]
    lines = parsed(first_session(path, refund_always=True, rules=rules))
    for line in lines:
        line.pop("seal", None)
    rewrite(path, lines)
    before = path.read_bytes()
    run, status = resumed(path)
    try:
        assert status == "awaiting_approval" and run.engine.state.pending.args == {"order": "2"}
        assert run.world.calls == ["notify 1", "refund 1"]
        [warning] = run.warnings
        assert warning.startswith(f"2 approval rules in {path} were not made on this machine (no valid seal)"), warning
        run.engine.approve()
        assert run.engine.run() == "ended"
        assert run.world.calls == ["notify 1", "refund 1", "refund 2"], "the deny rule of the old header still holds"
    finally:
        run.close()
    assert path.read_bytes().startswith(before)


def test_the_key_is_private_and_never_written_or_printed(tmp_path: Path, monkeypatch, capfd) -> None:
    import base64
    import os
    import stat
    import subprocess
    import sys

    from engine.sessions.seals import load_key

    home = tmp_path / "fresh-home"
    monkeypatch.setenv("AGENT_TUI_HOME", str(home))
    path = tmp_path / "run.jsonl"
    first_session(path, notify_always=True, refund_always=True)
    key_file = home / "seal.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    key = key_file.read_bytes()
    assert len(key) == 32 and load_key() == key, "made once, then read"
    fork = tmp_path / "fork.jsonl"
    outputs = []
    for args in (
        ["show", str(path)], ["replay", "--headless", str(path)], ["export", str(path)], ["verify", str(path), "--scenario", str(WORLD)],
        [str(WORLD), "--fork", str(path), "--at", "2", "-o", str(fork), "--headless"],
    ):
        command = args if args[0] != str(WORLD) else ["run", *args]
        done = subprocess.run(
            [sys.executable, "-m", "tui.cli", *command], capture_output=True, env={**os.environ}, stdin=subprocess.DEVNULL, timeout=120
        )
        assert b"Traceback" not in done.stderr, done.stderr.decode()
        outputs += [done.stdout, done.stderr]
    assert b"seal" in path.read_bytes() and b"seal" in fork.read_bytes()
    captured = capfd.readouterr()
    forms = [key, key.hex().encode(), key.hex().upper().encode(), base64.b64encode(key), base64.urlsafe_b64encode(key)]
    for blob in [path.read_bytes(), fork.read_bytes(), *outputs, captured.out.encode(), captured.err.encode()]:
        assert not any(form in blob for form in forms)


@pytest.mark.parametrize("problem", ["no-folder", "shared-key", "damaged-key"])
def test_without_a_usable_key_runs_start_and_no_rule_from_a_file_is_believed(tmp_path: Path, monkeypatch, problem: str) -> None:
    from engine.sessions.seals import load_key

    path = tmp_path / "run.jsonl"
    first_session(path, refund_always=True)  # sealed with this machine's key
    home = tmp_path / "home"
    if problem == "no-folder":
        (tmp_path / "a-file").write_text("x")
        home = tmp_path / "a-file" / "home"  # cannot be made: a file stands in the way
        words = "cannot make the approval key"
    else:
        home.mkdir()
        (home / "seal.key").write_bytes(load_key() if problem == "shared-key" else b"short")
        if problem == "shared-key":
            (home / "seal.key").chmod(0o644)
            words = "can be read or changed by others"
        else:
            (home / "seal.key").chmod(0o600)
            words = "is damaged (5 bytes, not 32)"
    monkeypatch.setenv("AGENT_TUI_HOME", str(home))
    warnings = asks_for_refund_2(path)
    assert any("1 approval rule in" in w and words in w and "cannot be checked" in w for w in warnings), warnings
    run = new_run(refunds(), "refund", "notify-then-refund", out=tmp_path / "new.jsonl")
    try:
        assert any(words in w and "will not be believed" in w for w in run.warnings), run.warnings
        assert run.engine.run() == "awaiting_approval"
    finally:
        run.close()
    assert "seal" not in json.loads((tmp_path / "new.jsonl").read_text().splitlines()[0])


def test_a_sealed_header_records_and_checks_its_own_content(tmp_path: Path) -> None:
    """The seal covers the whole header: changing any part (here the task text) breaks it."""
    from engine.sessions.seals import header_sealed, load_key, seal_header

    path = tmp_path / "run.jsonl"
    first_session(path)
    header = read_transcript(path).header
    key = load_key()
    assert header_sealed(key, header)
    assert not header_sealed(key, header.model_copy(update={"task_text": "Refund everything."}))
    assert header_sealed(key, seal_header(key, header.model_copy(update={"task_text": "x"})))


def test_a_task_written_after_the_run_opened_is_sealed_with_the_header(tmp_path: Path) -> None:
    """The cockpit rewrites the header when the operator types the task (an MCP run): the new
    header is sealed, and an "approve always" of the run holds after a resume."""
    from engine.sessions.seals import header_sealed, load_key

    path = tmp_path / "run.jsonl"
    run = new_run(refunds(), "refund", "notify-then-refund", out=path)
    run.set_task("Refund the three orders, then say so.")
    assert run.engine.run() == "awaiting_approval"
    run.engine.approve(always=True)  # notify
    assert run.engine.run() == "awaiting_approval"
    run.engine.approve(always=True)  # refund 1
    run.close()
    header = read_transcript(path).header
    assert header.task_text.startswith("Refund the three") and header_sealed(load_key(), header)
    again, status = resumed(path)
    try:
        assert status == "ended" and again.warnings == []
    finally:
        again.close()


def test_the_key_lives_in_the_xdg_data_folder_and_one_made_first_is_kept(tmp_path: Path, monkeypatch) -> None:
    """Without $AGENT_TUI_HOME the key is $XDG_DATA_HOME/agent-tui/seal.key; a process that
    finds a key made at the same moment by another keeps that one (never two keys)."""
    from engine.sessions import seals

    monkeypatch.delenv("AGENT_TUI_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert seals.key_path() == tmp_path / "data" / "agent-tui" / "seal.key"
    key = seals.load_key()
    seals._make_key(seals.key_path())  # a second maker, late: the first key stays
    assert seals.load_key() == key == seals.key_path().read_bytes()
    assert [p.name for p in seals.key_path().parent.iterdir()] == ["seal.key"], "no spare file left behind"


def test_a_sealed_file_says_its_format_version_so_older_readers_call_it_newer(tmp_path: Path) -> None:
    """Version 2 readers forbid unknown fields: a `seal` made their read fail with a validation
    error. The header now says version 3, which they refuse by name ("is newer")."""
    path = tmp_path / "run.jsonl"
    first_session(path)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["seal"] and header["format_version"] == 3
    assert read_transcript(path).header.format_version == 3
