"""Resume and fork: no tool runs twice, pending approvals are asked again, files record their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import scenarios
from engine import Decision
from engine.core.events import Action, DecisionMade, Header, Observed
from engine.core.state import fold
from engine.sessions.resume import ResumeError, fork_position, fork_run, resume_run
from engine.sessions.run import new_run
from engine.sessions.verify import verify_run
from engine.stored.transcript import read_transcript, write_transcript

from tests.support.helpers import CountingWorld, counting_scenario, script
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


def _saved(path, name="library", task=None, policy="good", **kw):
    run = new_run(scenarios.get(name), task, policy, out=path, **kw)
    run.engine.run()
    run.close()
    return run


class _Counted:
    """A scenario wrapper whose worlds count tool calls in one shared list."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.worlds: list[CountingWorld] = []
        self.scenario = counting_scenario()
        self.scenario.make_world = self._make

    def _make(self, task, options):
        world = CountingWorld()
        world.calls = self.calls
        self.worlds.append(world)
        return world


def _echo(n: int) -> Decision:
    return Decision.act(f"echo {n}", "echo", text=str(n))


def test_fork_runs_no_tool_before_the_fork_point_and_records_its_parent(tmp_path):
    counted = _Counted()
    parent = tmp_path / "parent.jsonl"
    run = new_run(counted.scenario, "t", script(_echo(1), _echo(2), _echo(3), _echo(4)), out=parent)
    run.engine.run()
    run.close()
    assert [c[1]["text"] for c in counted.calls] == ["1", "2", "3", "4"]
    counted.calls.clear()

    transcript = read_transcript(parent)
    position = fork_position(transcript, 2)
    child = tmp_path / "child.jsonl"
    fork = fork_run(counted.scenario, transcript, position, script(_echo(1), _echo(2), _echo(30), name="other"), out=child)
    assert counted.calls == [], "building the fork ran a tool"
    fork.engine.run()
    fork.close()
    assert [c[1]["text"] for c in counted.calls] == ["30"], "only the steps after the fork point run"

    saved = read_transcript(child)
    assert saved.header.parent == str(parent.resolve()) and saved.header.fork_at == position
    assert saved.events[:position] == transcript.events[:position]
    forked_state = fold(saved.header, saved.events[:position])
    assert replace(forked_state, header=transcript.header) == fold(transcript.header, transcript.events[:position])
    swap = saved.events[position]
    assert swap.type == "policy_swapped" and (swap.old, swap.new, swap.step) == ("script", "other", 3)
    assert saved.events[-1].type == "run_ended" and saved.events[-1].answer == "done"


@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_fork_of_the_library_at_each_step_with_the_good_policy_answers_2(tmp_path, step):
    parent = tmp_path / "stuck.jsonl"
    _saved(parent, policy="hallucinating")
    transcript = read_transcript(parent)
    fork = fork_run(scenarios.get("library"), transcript, fork_position(transcript, step), "good", out=tmp_path / "f.jsonl")
    fork.engine.run()
    fork.close()
    end = fork.engine.state.ended
    assert end.outcome == "answer" and end.answer == "2"
    assert read_transcript(tmp_path / "f.jsonl").events == fork.engine.events


def test_fork_points_that_ended_or_did_not_finish_are_refused(tmp_path):
    parent = tmp_path / "stuck.jsonl"
    _saved(parent, policy="stuck")
    transcript = read_transcript(parent)
    with pytest.raises(ResumeError, match="cannot fork at step 2"):
        fork_position(transcript, 2)
    with pytest.raises(ResumeError, match="the run has 2 steps"):
        fork_position(transcript, 5)
    assert fork_position(transcript, "end") == fork_position(transcript, 1) == 2
    good = tmp_path / "good.jsonl"
    _saved(good, policy="good")
    with pytest.raises(ResumeError, match="final answer"):
        fork_position(read_transcript(good), 4)
    with pytest.raises(ResumeError, match="is not empty"):
        fork_run(scenarios.get("library"), transcript, 2, "good", out=good)


def test_fork_rebuilds_the_world_without_running_its_tools(tmp_path):
    """The support world's return requests come back from the file: a new request is R-2, and R-1 is not reopened."""
    parent = tmp_path / "support.jsonl"
    _saved(parent, name="support", task="return-1187", policy="scripted", approve="all")
    transcript = read_transcript(parent)
    position = fork_position(transcript, 2)
    fork = fork_run(scenarios.get("support"), transcript, position, "scripted", out=tmp_path / "f.jsonl")
    assert fork.world.requests == ["R-1 for 1187"]
    assert fork.engine.state.tool_calls == {"get_order_status": 1, "open_return_request": 1}
    out = fork.world.open_return_request("1187")
    assert out.startswith("R-2")


def test_resume_asks_a_pending_approval_again_and_never_runs_it_on_its_own(tmp_path):
    path = tmp_path / "crash.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    assert run.engine.run() == "awaiting_approval"
    run.close()  # the process goes away here

    transcript = read_transcript(path)
    resumed = resume_run(scenarios.get("support"), transcript, approve="all")
    assert resumed.engine.status == "awaiting_approval"
    assert resumed.engine.run() == "awaiting_approval"
    assert resumed.world.requests == []
    assert "open_return_request" not in resumed.engine.state.tool_calls
    resumed.engine.approve()
    resumed.engine.run()
    resumed.close()
    assert resumed.world.requests == ["R-1 for 1187"]
    saved = read_transcript(path)
    assert [e.type for e in saved.events].count("approval_requested") == 1
    assert saved.events == resumed.engine.events
    assert saved.events[-1].answer.startswith("I opened request R-1")


def test_resume_continues_a_decision_whose_actions_were_not_all_processed(tmp_path):
    counted = _Counted()
    header = Header(scenario="counting", task="t", task_text="do the thing", policy="script")
    decision = DecisionMade(
        step=1, policy="script", thought="two", actions=[Action(tool="echo", args={"text": "a"}), Action(tool="echo", args={"text": "b"})]
    )
    first = Observed(step=1, index=0, tool="echo", args={"text": "a"}, text="echo ok", executed=True)
    path = tmp_path / "half.jsonl"
    write_transcript(path, header, [decision, first])
    resumed = resume_run(counted.scenario, read_transcript(path), script(name="script"))
    resumed.engine.run()
    resumed.close()
    assert counted.calls == [("echo", {"text": "b"})]
    events = read_transcript(path).events
    assert [(e.type, getattr(e, "index", None)) for e in events[:3]] == [("decision", None), ("observation", 0), ("observation", 1)]
    assert events[-1].type == "run_ended"


def test_resume_cuts_a_torn_last_line_and_appends_cleanly(tmp_path):
    path = tmp_path / "torn.jsonl"
    run = new_run(scenarios.get("library"), None, "good", out=path)
    run.engine.step()
    run.engine.step()
    run.close()
    whole = list(run.engine.events)
    with open(path, "ab") as f:
        f.write(b'{"type": "decision", "step": 3, "pol')
    transcript = read_transcript(path)
    assert transcript.warnings and "cut off" in transcript.warnings[0]
    resumed = resume_run(scenarios.get("library"), transcript)
    resumed.engine.run()
    resumed.close()
    again = read_transcript(path)
    assert again.warnings == [] and again.errors == []
    assert again.events[: len(whole)] == whole
    assert [e.step for e in again.events if e.type == "decision"] == [1, 2, 3, 4]
    assert again.events[-1].answer == "2"
    assert verify_run(scenarios.get("library"), again).match


def test_resume_of_a_file_cut_between_the_answer_and_the_end_keeps_the_answer(tmp_path):
    """A file that stops right after the final answer's decision (a full disk cut the
    batch before its run_ended line) is ended with that answer; nobody decides again."""
    path = tmp_path / "cut.jsonl"
    _saved(path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # drop run_ended
    transcript = read_transcript(path)
    assert transcript.events[-1].type == "decision" and transcript.events[-1].answer == "2"
    resumed = resume_run(scenarios.get("library"), transcript, "stuck")
    resumed.engine.run()
    resumed.close()
    events = read_transcript(path).events
    assert [e.step for e in events if e.type == "decision"] == [1, 2, 3, 4]
    assert [e.type for e in events[-2:]] == ["decision", "run_ended"]
    assert (events[-1].outcome, events[-1].answer) == ("answer", "2")


def test_resume_of_a_file_cut_between_a_repeated_action_and_its_brake_never_runs_it(tmp_path):
    """The repetition brake ends a run right after the decision that repeats: a file cut
    between the two lines (a full disk) is ended by the brake on resume; the repeated
    action, which the brake stopped, never runs."""
    counted = _Counted()
    path = tmp_path / "repeat.jsonl"
    same = Decision.act("again", "echo", text="x")
    run = new_run(counted.scenario, "t", script(same, same, same), out=path)
    run.engine.run()
    run.close()
    braked = read_transcript(path).events[-1]
    assert braked.type == "run_ended" and braked.reason.startswith("repetition")
    assert counted.calls == [("echo", {"text": "x"})]
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # drop run_ended
    resumed = resume_run(counted.scenario, read_transcript(path), script(same))
    resumed.engine.run()
    resumed.close()
    assert counted.calls == [("echo", {"text": "x"})]  # the repeated call never ran
    events = read_transcript(path).events
    assert [e.type for e in events[-2:]] == ["decision", "run_ended"]
    assert (events[-1].outcome, events[-1].reason) == ("stopped", braked.reason)


def test_headless_resume_that_ends_at_once_prints_its_outcome_line(tmp_path, capsys):
    """A resumed run can end while it is rebuilt (paused at a budget, or cut after its
    answer): the headless output still ends with the outcome line."""
    from tui.cli import main

    paused = tmp_path / "budget.jsonl"
    library = scenarios.get("library")
    run = new_run(library, None, "good", out=paused, interactive=True, budget=library.budget.model_copy(update={"max_steps": 2}))
    assert run.engine.run() == "awaiting_budget"
    run.close()
    assert main(["run", "--resume", str(paused), "--headless"]) == 3
    assert capsys.readouterr().out.splitlines()[-1] == "outcome: stopped after 2 steps: steps budget reached: 2 of 2"
    cut = tmp_path / "cut.jsonl"
    _saved(cut)
    cut.write_bytes(b"".join(cut.read_bytes().splitlines(keepends=True)[:-1]))
    assert main(["run", "--resume", str(cut), "--headless"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "outcome: answer after 4 steps: 2"


def test_resume_with_another_policy_records_the_swap(tmp_path):
    path = tmp_path / "swap.jsonl"
    run = new_run(scenarios.get("library"), None, "hallucinating", out=path)
    run.engine.step()
    run.close()
    resumed = resume_run(scenarios.get("library"), read_transcript(path), "good")
    resumed.engine.run()
    resumed.close()
    events = read_transcript(path).events
    assert events[2].type == "policy_swapped" and (events[2].old, events[2].new) == ("hallucinating", "good")
    assert events[-1].answer == "2"


def test_resume_refuses_ended_runs_imports_and_other_scenarios(tmp_path):
    from engine.stored.importers import load_any

    path = tmp_path / "done.jsonl"
    _saved(path)
    with pytest.raises(ResumeError, match="already ended"):
        resume_run(scenarios.get("library"), read_transcript(path))
    with pytest.raises(ResumeError, match="of scenario 'library', not 'support'"):
        resume_run(scenarios.get("support"), read_transcript(path))
    imported = load_any(DATA / "trace_000_stuck.txt")
    with pytest.raises(ResumeError, match="can be replayed, shown, exported and forked with the human or model policy, not resumed"):
        resume_run(scenarios.get("library"), imported)


def test_cli_resume_and_fork(tmp_path, capsys):
    from tui.cli import main

    parent = tmp_path / "stuck.jsonl"
    _saved(parent, policy="stuck")
    child = tmp_path / "child.jsonl"
    assert main(["run", "--fork", str(parent), "--at", "1", "--policy", "good", "--headless", "--out", str(child)]) == 0
    out = capsys.readouterr().out
    assert f"forked from {parent.resolve()} at step 1, then policy good (stuck before)" in out
    assert "policy: good" in out.splitlines()[0] and "outcome: answer after 4 steps: 2" in out
    assert main(["run", "--resume", str(parent), "--headless"]) == 2
    assert "already ended" in capsys.readouterr().err
    assert main(["run", "--resume", str(DATA / "trace_000_stuck.txt"), "--headless"]) == 2
    assert "forked (--policy human or model), not resumed or verified" in capsys.readouterr().err
    assert main(["run", "--at", "1", "--headless"]) == 2
    assert "--at goes with --fork" in capsys.readouterr().err


def test_cli_resume_with_a_pending_approval_and_no_terminal_says_so(tmp_path):
    path = tmp_path / "crash.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    run.engine.run()
    run.close()
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "--resume", str(path), "--headless", "--approve", "all"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ROOT, timeout=60,
    )
    assert proc.returncode == 2
    assert "waiting for approval of open_return_request" in proc.stderr
    assert read_transcript(path).events == run.engine.events, "nothing was added"




def _handed_to_a_person(path: Path) -> None:
    """A library run whose operator took over (the human policy) after two steps, then closed it."""
    run = new_run(scenarios.get("library"), None, "good", out=path)
    run.engine.step()
    run.engine.step()
    run.engine.swap_policy(run.human)
    assert run.engine.run() == "awaiting_input"
    run.close()


def test_a_headless_fork_or_resume_where_a_person_is_in_charge_is_refused_and_leaves_no_file(tmp_path, capsys):
    """A fork whose policy at the fork point is the human one cannot go on headless: refused before
    a step, its new file removed (it once stayed, so that a retry with the same --out was refused);
    a resume is refused with nothing added to its file. --policy goes on with another."""
    from tui.cli import main

    parent = tmp_path / "taken-over.jsonl"
    _handed_to_a_person(parent)
    before = parent.read_bytes()
    child = tmp_path / "fork.jsonl"
    for _ in range(2):  # the same --out again: not refused for the file the first left
        assert main(["run", "--fork", str(parent), "--at", "2", "--headless", "--approve", "all", "--out", str(child)]) == 2
        err = capsys.readouterr().err
        assert "the policy where the fork starts is human, who needs the cockpit" in err and "--policy NAME" in err
        assert not child.exists()
    assert main(["run", "--resume", str(parent), "--headless", "--approve", "all"]) == 2
    assert "the policy where the run stopped is human" in capsys.readouterr().err
    assert parent.read_bytes() == before
    placeholder = tmp_path / "placeholder.jsonl"  # an empty file of the user's (mktemp, touch): emptied again, kept
    placeholder.touch(mode=0o600)
    assert main(["run", "--fork", str(parent), "--at", "2", "--headless", "--approve", "all", "--out", str(placeholder)]) == 2
    capsys.readouterr()
    assert placeholder.is_file() and placeholder.stat().st_size == 0 and placeholder.stat().st_mode & 0o777 == 0o600
    assert main(["run", "--fork", str(parent), "--at", "2", "--policy", "good", "--headless", "--out", str(child)]) == 0
    assert "outcome: answer" in capsys.readouterr().out


def test_resume_after_sigkill_finishes_the_run_with_nothing_duplicated(tmp_path):
    transcript = tmp_path / "killed.jsonl"
    log = tmp_path / "ticks.log"
    mark = tmp_path / "hanging"
    env = {**os.environ, "SLOW_HANG_AT": "3", "SLOW_HANG_MARK": str(mark), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tui.cli", "run", str(DATA / "slow_world.py"), "--headless",
           "--out", str(transcript), "--option", f"log={log}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: mark.exists() or proc.poll() is not None, "the policy to hang at tick 3", timeout=60)
        assert proc.poll() is None, proc.stderr.read().decode()
        wait_for(lambda: len(transcript.read_bytes().splitlines()) >= 5, "four events in the transcript", timeout=60)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    before = read_transcript(transcript)
    assert [e.type for e in before.events] == ["decision", "observation"] * 2
    assert log.read_text().split() == ["1", "2"]

    env.pop("SLOW_HANG_AT")
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", str(DATA / "slow_world.py"), "--resume", str(transcript), "--headless"],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert log.read_text().split() == ["1", "2", "3", "4", "5"], "a tick ran twice or not at all"
    after = read_transcript(transcript)
    assert after.warnings == [] and after.errors == []
    assert sum(1 for line in transcript.read_bytes().splitlines() if b'"type":"header"' in line) == 1
    assert after.events[:4] == before.events
    assert [e.step for e in after.events if e.type == "decision"] == [1, 2, 3, 4, 5, 6]
    observed = [(e.step, e.index) for e in after.events if e.type == "observation"]
    assert observed == sorted(set(observed)) and len(observed) == 5
    assert after.events[-1].type == "run_ended" and after.events[-1].answer == "5 ticks"


def _unfinished_library(path: Path) -> Path:
    """A library run stopped after its first step, its header unsealed (another machine's):
    the operator's rules are the ones a continuation believes."""
    run = new_run(scenarios.get("library"), None, "good", out=path)
    run.engine.step()
    run.close()
    saved = read_transcript(path)
    path.unlink()
    write_transcript(path, saved.header.model_copy(update={"seal": None}), saved.events)
    return path


def _continue(how: str, saved: Path, policy=None, **options):
    transcript = read_transcript(saved)
    if how == "resume":
        return resume_run(scenarios.get("library"), transcript, policy, **options)
    out = saved.parent / "fork.jsonl"
    return fork_run(scenarios.get("library"), transcript, fork_position(transcript, 1), policy, out=out, **options)


@pytest.mark.parametrize("how", ["resume", "fork"])
def test_resume_and_fork_refuse_an_unknown_keyword_as_python_does(tmp_path, how):
    saved = _unfinished_library(tmp_path / "run.jsonl")
    name = "resume_run" if how == "resume" else "fork_run"
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'clok'$"):
        _continue(how, saved, clok=time.time)


@pytest.mark.parametrize("how", ["resume", "fork"])
def test_resume_and_fork_take_each_shared_option_to_the_engine(tmp_path, how):
    from engine.core.events import RuleInfo
    from engine.core.tools import Tool
    from engine.model.config import ModelConfig
    from engine.model.policy import ModelPolicy

    saved = _unfinished_library(tmp_path / "run.jsonl")
    heard: list = []
    extra = Tool("extra_lookup", "an MCP server's tool")
    rule = RuleInfo(tool="extra_lookup", effect="deny", source="configuration")
    run = _continue(
        how, saved, clock=lambda: 42.0, interactive=True, approve="all", listeners=[heard.append],
        extra_tools=[extra], operator_rules=[rule],
    )
    engine = run.engine
    assert (engine.clock(), engine.interactive, engine.approve_mode) == (42.0, True, "all")
    assert heard.append in engine.listeners and engine.tools["extra_lookup"] is extra
    assert rule in engine.header.rules
    run.close()
    (tmp_path / "fork.jsonl").unlink(missing_ok=True)

    endpoint = ModelConfig(model="m", base_url="http://127.0.0.1:9", api_key="k", max_retries=0)
    run = _continue(how, saved, "mine", named={"mine": endpoint})
    assert isinstance(run.engine.policy, ModelPolicy) and run.engine.policy.name == "mine"
    run.close()
    (tmp_path / "fork.jsonl").unlink(missing_ok=True)
    run = _continue(how, saved, "model", model=endpoint)
    assert isinstance(run.engine.policy, ModelPolicy)
    run.close()
