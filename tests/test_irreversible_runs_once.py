"""Runs under attack: no irreversible call run twice or left unrecorded.

Each test reproduces a way a second process, a signal, a full disk, a text
UTF-8 cannot write or a transcript taken away mid-run could make agent-tui run
an irreversible tool twice, run one with no record of its approval, or lose
the record of a run.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from engine import Decision
from engine.core.guards import RecordError
from engine.sessions.resume import ResumeError, resume_run
from engine.stored.lock import TranscriptBusy
from engine.stored.transcript import TranscriptWriter, read_transcript
from tests.support.helpers import counting_scenario, fail_writes_of, script
from tests.support.cli import installed_agent_tui
from tests.support.bank import bank_run, cli, rewrite

DATA = Path(__file__).resolve().parent / "data"
BANK = DATA / "bank_world.py"
SLOW = DATA / "slow_world.py"
UNKNOWN = "UNKNOWN OUTCOME"


# -- 3. one writer per transcript ----------------------------------------------------


def test_a_second_writer_is_refused_with_the_holder_named(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("")
    with TranscriptWriter(path):
        with pytest.raises(TranscriptBusy, match=f"process {os.getpid()}"):
            TranscriptWriter(path)
    TranscriptWriter(path).close()  # free again once the first closed


def test_two_resumes_of_one_file_never_both_run(capsys, tmp_path):
    """A run hangs holding its transcript; a resume of the same file is refused (exit 2) and runs nothing."""
    out, log, mark = tmp_path / "slow.jsonl", tmp_path / "ticks.log", tmp_path / "hang.mark"
    log.touch()
    env = {**os.environ, "SLOW_HANG_AT": "3", "SLOW_HANG_MARK": str(mark)}
    proc = subprocess.Popen(
        [installed_agent_tui(), "run", str(SLOW), "--headless", "--out", str(out), "--option", f"log={log}"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the first run never reached its hang"
            time.sleep(0.02)
        before = out.read_bytes()
        code, _, err = cli(capsys, "run", SLOW, "--resume", out, "--headless")
        assert code == 2
        assert "another run is writing this transcript" in err and f"process {proc.pid}" in err
        assert out.read_bytes() == before
        assert log.read_text() == "1\n2\n", "the refused resume ran a tool"
    finally:
        proc.kill()
        proc.wait()


def test_resume_refuses_a_file_that_grew_after_it_was_read(tmp_path):
    scenario = counting_scenario()
    from engine.sessions.run import new_run

    run = new_run(scenario, "t", script(Decision.act("e", "echo", text="a"), Decision.act("e", "echo", text="b")), out=tmp_path / "r.jsonl")
    run.engine.step()
    run.close()
    stale = read_transcript(tmp_path / "r.jsonl")
    other = resume_run(scenario, stale, script(Decision.act("e", "echo", text="x")))
    other.engine.step()
    other.close()
    with pytest.raises(ResumeError, match="another run wrote"):
        resume_run(scenario, stale, script())


# -- 4. Ctrl+C / SIGTERM while an irreversible tool runs ------------------------------


@pytest.mark.parametrize("sig, reason", [(signal.SIGINT, "interrupted (Ctrl+C)"), (signal.SIGTERM, "terminated (SIGTERM)")])
def test_a_signal_during_a_tool_leaves_an_unknown_outcome_and_the_end(capsys, tmp_path, sig, reason):
    out, log = tmp_path / "bank.jsonl", tmp_path / "transfers.log"
    proc = subprocess.Popen(
        [installed_agent_tui(), "run", str(BANK), "--headless", "--approve", "all", "--out", str(out),
         "--option", f"log={log}", "--option", "slow=30"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{log}.running").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the transfer never started"
            time.sleep(0.02)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert b"Traceback" not in stderr, stderr.decode()
    assert proc.returncode == 5, stderr.decode()
    events = read_transcript(out).events
    observation = next(e for e in events if e.type == "observation" and e.tool == "transfer")
    assert observation.text.startswith(UNKNOWN) and not observation.executed
    assert events[-1].type == "run_ended" and events[-1].outcome == "aborted" and events[-1].reason == reason
    code, shown, _ = cli(capsys, "show", out)
    assert UNKNOWN in shown
    code, report, _ = cli(capsys, "export", out)
    assert UNKNOWN in report


def test_show_and_export_say_a_killed_call_has_an_unknown_outcome(capsys, tmp_path):
    out, _ = bank_run(capsys, tmp_path)

    def killed_in_transfer(rows):
        cut = next(i for i, r in enumerate(rows) if r.get("type") == "approval_decided")
        rows[cut + 1 :] = [{"type": "tool_started", "at": 0, "step": 2, "index": 0, "tool": "transfer", "args": {"amount": 10}}]

    rewrite(out, killed_in_transfer)
    assert UNKNOWN in cli(capsys, "show", out)[1]
    assert UNKNOWN in cli(capsys, "export", out)[1]
    assert UNKNOWN in cli(capsys, "replay", out, "--headless")[1]


# -- 5. text a transcript cannot hold; fail closed -----------------------------------


def test_lone_surrogates_from_a_policy_are_recorded_cleaned(tmp_path):
    from engine.sessions.run import new_run

    bad = "\ud800x\udfff"
    run = new_run(
        counting_scenario(),
        "t",
        script(Decision.act(f"think {bad}", "echo", text=f"say {bad}"), Decision.final(bad, f"answer {bad}")),
        out=tmp_path / "r.jsonl",
    )
    assert run.engine.run() == "ended"
    run.close()
    events = read_transcript(tmp_path / "r.jsonl").events
    assert events == list(run.engine.events)
    assert events[0].thought == "think \ufffdx\ufffd" and events[0].actions[0].args == {"text": "say \ufffdx\ufffd"}
    assert events[-1].answer == "answer \ufffdx\ufffd"


def test_an_approval_that_cannot_be_recorded_can_never_be_approved(tmp_path):
    from engine.sessions.run import new_run

    run = new_run(counting_scenario(), "t", script(Decision.act("pay", "pay", amount=5)), out=tmp_path / "r.jsonl")
    fail_writes_of(run, "approval_requested")
    with pytest.raises(RecordError, match="No space left"):
        run.engine.step()
    assert run.engine.status == "halted" and run.engine.state.pending is None
    with pytest.raises(RecordError):
        run.engine.approve()
    assert run.world.calls == []
    run.close()


def test_a_tool_whose_start_cannot_be_recorded_does_not_run(tmp_path):
    from engine.sessions.run import new_run

    run = new_run(counting_scenario(), "t", script(Decision.act("pay", "pay", amount=5)), out=tmp_path / "r.jsonl", approve="all")
    fail_writes_of(run, "tool_started")
    with pytest.raises(RecordError):
        run.engine.run()
    assert run.world.calls == [] and run.engine.step() == "halted"
    run.close()


# -- 6. disk full ----------------------------------------------------------------------


def _limited(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_stops_cleanly_and_resume_finishes_afterwards(capsys, tmp_path):
    out, log = tmp_path / "bank.jsonl", tmp_path / "transfers.log"
    log.touch()
    probe = tmp_path / "probe.jsonl"
    cli(capsys, "run", BANK, "--headless", "--approve", "all", "--out", probe, "--option", f"log={log}")
    lines = probe.read_bytes().splitlines(keepends=True)
    assert [json.loads(line)["type"] for line in lines[1:4]] == ["decision", "tool_started", "observation"]
    log.write_text("")
    limit = sum(len(line) for line in lines[:4]) + 60  # step 1 fits; the second decision does not
    proc = subprocess.run(
        [installed_agent_tui(), "run", str(BANK), "--headless", "--approve", "all", "--out", str(out), "--option", f"log={log}"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, preexec_fn=_limited(limit),
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "the transcript cannot be written" in proc.stderr and "--resume" in proc.stderr
    assert log.read_text() == "", "a transfer ran although its record could not be written"
    code, stdout, err = cli(capsys, "run", BANK, "--resume", out, "--headless", "--approve", "all")
    assert code == 0, err
    assert log.read_text() == "10\n"
    assert read_transcript(out).events[-1].type == "run_ended"


@pytest.mark.parametrize("sync_header", [True, False])
def test_a_new_files_folder_entry_reaches_the_disk_with_its_first_synced_line(tmp_path, monkeypatch, sync_header):
    """An fsync of a new file does not make its name in the folder durable: the folder is synced
    too, before the first synced line (the header, or, for a gateway run, its approval) returns,
    so a machine that loses power after an approval keeps the file that records it."""
    from engine.core.events import Header

    real, synced = os.fsync, []

    def recorded(fd: int) -> None:
        info = os.fstat(fd)
        synced.append((info.st_dev, info.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", recorded)
    folder = os.stat(tmp_path)
    header = Header(scenario="s", task="t", task_text="t", policy="p")
    writer = TranscriptWriter(tmp_path / "t.jsonl", header, sync_header=sync_header)
    try:
        assert bool(synced) is sync_header
        writer.write("approval_requested", b'{"type": "approval_requested"}')
        assert (folder.st_dev, folder.st_ino) in synced
        count = len(synced)
        writer.write("approval_decided", b'{"type": "approval_decided"}')
        assert len(synced) == count + 1, "the folder is synced once"
    finally:
        writer.close()


# -- 7. the transcript deleted or replaced during a run ---------------------------------


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_transcript_deleted_or_replaced_mid_run_goes_on_in_a_recovery_file(tmp_path, how):
    from engine.sessions.run import new_run

    path = tmp_path / "r.jsonl"
    said: list[str] = []
    run = new_run(
        counting_scenario(), "t", script(Decision.act("a", "echo", text="1"), Decision.act("b", "echo", text="2")), out=path
    )
    run.writer.notify = said.append
    run.engine.step()
    if how == "deleted":
        path.unlink()
    else:
        other = tmp_path / "other"
        other.write_text("somebody else's file\n")
        other.replace(path)
    assert run.engine.run() == "ended"
    run.close()
    assert run.path != path and run.path.exists()
    assert len(said) == 1 and str(run.path) in said[0] and "deleted or replaced" in said[0]
    recovered = read_transcript(run.path)
    assert recovered.events == list(run.engine.events)
    if how == "replaced":
        assert path.read_text() == "somebody else's file\n"


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_lines_written_between_name_checks_reach_the_recovery_file(tmp_path, monkeypatch, how):
    """The path is checked on a timer, not at every flush: what went to the lost file in
    between is copied to the recovery file, at the latest when the run closes."""
    import engine.stored.transcript as transcript_module
    from engine.sessions.run import new_run

    monkeypatch.setattr(transcript_module, "NAME_CHECK_SECONDS", 3600.0)
    path = tmp_path / "r.jsonl"
    decisions = [Decision.act(str(i), "echo", text=str(i)) for i in range(4)]
    run = new_run(counting_scenario(), "t", script(*decisions), out=path)
    said: list[str] = []
    run.writer.notify = said.append
    run.engine.step()
    if how == "deleted":
        path.unlink()
    else:
        (tmp_path / "other").write_text("somebody else's file\n")
        (tmp_path / "other").replace(path)
    for _ in range(3):
        run.engine.step()  # no synced line: no check yet
    assert said == []
    run.close()
    assert len(said) == 1 and "deleted or replaced" in said[0]
    assert read_transcript(run.path).events == list(run.engine.events)
    assert len(run.engine.events) >= 8


def test_headless_prints_the_recovery_file(capsys, tmp_path, monkeypatch):
    out = tmp_path / "r.jsonl"
    import engine.core.engine as engine_module

    real = engine_module.Engine._decide

    def decide_then_delete(self):
        if self.state.step == 1 and out.exists():
            out.unlink()
        return real(self)

    monkeypatch.setattr(engine_module.Engine, "_decide", decide_then_delete)
    code, _, err = cli(capsys, "run", "library", "--headless", "--out", out)
    assert code == 0
    recovery = next(tmp_path.glob("r.recovered-*.jsonl"))
    assert f"the run goes on in {recovery}" in err and f"transcript: {recovery}" in err
    assert read_transcript(recovery).events[-1].type == "run_ended"
