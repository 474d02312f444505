"""The replay timeline: states at every position equal the fold, checkpoints, markers, navigation, bad files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import scenarios
from engine.core.events import Action, DecisionMade, Header, Observed
from engine.stored.replay import Timeline
from engine.sessions.run import new_run
from engine.core.state import fold
from engine.stored.transcript import TranscriptError, read_transcript

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(__file__).resolve().parent / "data"

RUNS = [
    (name, task, policy)
    for name in ("support", "library", "calculator")
    for policy in scenarios.get(name).policies
    for task in scenarios.get(name).tasks
]


def _drive(run, reject_first: bool = False) -> None:
    """Run to the end, answering approvals (the first one rejected when asked)."""
    engine = run.engine
    rejected = False
    for _ in range(50):
        status = engine.run()
        if status != "awaiting_approval":
            break
        if reject_first and not rejected:
            engine.reject("not yet")
            rejected = True
        else:
            engine.approve()
    run.close()


def _saved(tmp_path, name, task, policy, reject_first=False, **kw):
    path = tmp_path / f"{name}-{task}-{policy}.jsonl"
    run = new_run(scenarios.get(name), task, policy, out=path, **kw)
    _drive(run, reject_first)
    return run, path


@pytest.mark.parametrize("name, task, policy", RUNS)
def test_replay_of_each_builtin_run_reaches_the_live_final_state(tmp_path, name, task, policy):
    run, path = _saved(tmp_path, name, task, policy)
    timeline = Timeline.open(path, checkpoint_every=2)
    assert len(timeline) == len(run.engine.events)
    assert timeline.state_at(len(timeline)) == run.engine.state
    assert timeline.state_at(len(timeline)) == run.engine.state
    assert timeline.seek(len(timeline)) == run.engine.state
    for k in range(len(timeline) + 1):
        assert timeline.state_at(k) == fold(run.engine.header, run.engine.events[:k]), k


@pytest.mark.parametrize("every", [1, 2, 3, 1000])
def test_stepping_back_then_forward_returns_to_identical_state(tmp_path, every):
    run, path = _saved(tmp_path, "support", "return-1187", "scripted", reject_first=True)
    timeline = Timeline.open(path, checkpoint_every=every)
    for k in range(1, len(timeline) + 1):
        here = timeline.seek(k)
        timeline.back()
        timeline.forward()
        assert timeline.position == k
        assert timeline.state == here == fold(run.engine.header, run.engine.events[:k])
    timeline.seek(0)
    assert timeline.back() == fold(run.engine.header, []) and timeline.position == 0
    timeline.seek(len(timeline))
    assert timeline.forward(5) == run.engine.state and timeline.position == len(timeline)


def test_a_snapshot_is_independent_of_its_original(tmp_path):
    run, _ = _saved(tmp_path, "support", "return-1187", "scripted", reject_first=True)
    events = run.engine.events
    for k in range(len(events)):
        original = fold(run.engine.header, events[:k])
        copy = original.copy()
        assert copy == original
        for event in events[k:]:
            copy.apply(event)
        assert original == fold(run.engine.header, events[:k]), "applying to the copy changed the original"
        assert copy == run.engine.state


def test_a_snapshot_deep_copies_a_pending_approval_and_the_last_step():
    header = Header(scenario="s", task="t", task_text="x", policy="p")
    decision = DecisionMade(step=1, policy="p", actions=[Action(tool="a"), Action(tool="b")])
    state = fold(header, [decision, Observed(step=1, index=0, tool="a", text="one")])
    copy = state.copy()
    copy.apply(Observed(step=1, index=1, tool="b", text="two"))
    assert len(state.history[-1].observations) == 1 and len(copy.history[-1].observations) == 2
    assert state.queue and not copy.queue


def test_markers_name_approvals_rejections_errors_budget_and_the_end(tmp_path):
    _, path = _saved(tmp_path, "support", "return-1187", "scripted", reject_first=True)
    timeline = Timeline.open(path)
    kinds = [m.kind for m in timeline.markers()]
    assert kinds == ["approval", "rejection", "end"]  # the rejected call's observation is not a second marker
    rejection = timeline.markers(["rejection"])[0]
    assert timeline.event(rejection.index).type == "approval_decided"
    assert "not yet" in rejection.label
    _, courier = _saved(tmp_path, "support", "courier-1042", "scripted", repetition_threshold=None)
    budget = Timeline.open(courier).markers(["budget"])
    assert budget and budget[0].label == "budget: steps at 4 of 5"
    _, invented = _saved(tmp_path, "library", None, "hallucinating")
    errors = Timeline.open(invented).markers(["error"])
    assert len(errors) == 1 and "web_search" in errors[0].label


def test_policy_swap_marker(tmp_path):
    path = tmp_path / "swap.jsonl"
    run = new_run(scenarios.get("library"), None, "stuck", out=path)
    run.engine.step()
    run.engine.swap_policy(run.make_policy("good"))
    run.engine.run()
    run.close()
    markers = Timeline.open(path).markers(["policy_swap"])
    assert [m.label for m in markers] == ["policy stuck → good from step 2"]


def test_next_and_previous_marker_and_step(tmp_path):
    run, path = _saved(tmp_path, "library", "copies", "hallucinating")
    timeline = Timeline.open(path)
    events = run.engine.events
    decisions = [i for i, e in enumerate(events) if e.type == "decision"]
    assert timeline.steps() == 5
    assert timeline.step_boundaries() == [0, *decisions[1:], len(events) - 1, len(events)]
    assert timeline.next_step(0) == decisions[1]
    assert timeline.prev_step(decisions[1]) == 0
    assert timeline.next_step(len(events)) == len(events)
    assert timeline.prev_step(0) == 0
    error = timeline.next_marker(0)
    assert error.kind == "error" and events[error.index].type == "observation"
    end = timeline.next_marker(error.position)
    assert end.kind == "end" and end.position == len(events)
    assert timeline.next_marker(end.position) is None
    assert timeline.prev_marker(end.position) == error
    assert timeline.prev_marker(error.position) is None
    assert timeline.state_at(0).step == 0 and timeline.state_at(1).step == 1 and timeline.state_at(len(events)).step == 5


def test_position_after_step_keeps_whole_steps(tmp_path):
    run, path = _saved(tmp_path, "library", "copies", "good")
    timeline = Timeline.open(path)
    events = run.engine.events
    assert timeline.position_after_step(0) == 0
    for step in (1, 2, 3):
        position = timeline.position_after_step(step)
        assert events[position].type == "decision" and events[position].step == step + 1
        assert timeline.state_at(position).step == step
    assert events[timeline.position_after_step(4)].type == "run_ended"
    assert timeline.position_after_step(9) == len(events)


def test_search_finds_thoughts_observations_and_calls(tmp_path):
    run, path = _saved(tmp_path, "library", "copies", "hallucinating")
    timeline = Timeline.open(path)
    events = run.engine.events
    assert [events[i].type for i in timeline.search("SUBTRACT")] == ["decision"]
    assert timeline.search("web_search") == [0, 1]
    assert timeline.search('calc(expression="5 - 3")') == [6]
    assert timeline.search("no such words anywhere") == []
    assert timeline.search("") == []
    assert timeline.search("web_search", start=1) == [1]


def test_a_torn_last_line_loads_the_rest_with_a_warning(tmp_path):
    run, path = _saved(tmp_path, "library", "copies", "good")
    data = path.read_bytes()
    path.write_bytes(data[:-20])
    timeline = Timeline.open(path)
    assert len(timeline) == len(run.engine.events) - 1
    assert len(timeline.warnings) == 1 and "cut off" in timeline.warnings[0]
    assert timeline.state_at(len(timeline)) == fold(run.engine.header, run.engine.events[:-1])


def test_a_bad_line_in_the_middle_ends_the_timeline_there_and_is_named(tmp_path):
    run, path = _saved(tmp_path, "library", "copies", "good")
    lines = path.read_text().splitlines(keepends=True)
    event_lines = [i for i, line in enumerate(lines) if i and '"tool_started"' not in line]
    lines[event_lines[3]] = '{"type": "observation", "step": "x"}\n'
    path.write_text("".join(lines))
    timeline = Timeline.open(path)
    assert timeline.seek(2) == fold(run.engine.header, run.engine.events[:2])
    timeline.build_index()
    assert len(timeline) == 3
    assert timeline.errors and timeline.errors[0].startswith(f"{path}:{event_lines[3] + 1}: not a valid event")
    assert timeline.seek(99) == fold(run.engine.header, run.engine.events[:3])
    assert timeline.line_number(2) == event_lines[2] + 1


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "the file is empty"),
        (b"\n  \n", "the file is empty"),
        (b"not json\n", ":1: not JSON (Expecting value); expected the header line"),
        (b'{"type": "header", "format_version": 7, "scenario": "s"}\n', "format version 7 is newer"),
    ],
)
def test_bad_files_raise_transcript_errors_with_a_clear_message(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(TranscriptError) as info:
        Timeline.open(path)
    assert message in str(info.value) and str(path) in str(info.value)
    with pytest.raises(TranscriptError):
        Timeline.open(tmp_path / "missing.jsonl")


def test_timeline_from_events_in_memory_matches_the_file(tmp_path):
    _, path = _saved(tmp_path, "support", "return-1187", "scripted", reject_first=True)
    transcript = read_transcript(path)
    in_memory = Timeline(transcript.header, transcript.events, checkpoint_every=2)
    on_file = Timeline.open(path, checkpoint_every=3)
    assert in_memory.markers() == on_file.markers()
    assert in_memory.step_boundaries() == on_file.step_boundaries()
    for k in range(len(transcript.events) + 1):
        assert in_memory.state_at(k) == on_file.state_at(k)


def test_a_long_run_seeks_to_any_position_with_the_fold_state(tmp_path):
    """Many checkpoints, random seeks in both directions, against the plain fold."""
    import random

    header = Header(scenario="s", task="t", task_text="count", policy="p")
    events = []
    for step in range(1, 301):
        events.append(DecisionMade(step=step, policy="p", thought=f"t{step}", actions=[Action(tool="echo", args={"n": step})]))
        events.append(Observed(step=step, index=0, tool="echo", text=f"ok {step}", executed=True, error=step % 7 == 0))
    timeline = Timeline(header, events, checkpoint_every=16)
    rng = random.Random(3)
    for k in [rng.randrange(len(events) + 1) for _ in range(40)]:
        assert timeline.seek(k) == fold(header, events[:k])
    assert len(timeline.markers(["error"])) == 300 // 7


def test_the_replay_modules_import_no_ui():
    code = (
        "import sys\n"
        "import engine.stored.replay, engine.sessions.resume, engine.stored.importers, engine.sessions.verify, tui.export, tui.cli.replay, tui.cli.verify, tui.cli.export\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""


def test_replay_headless_prints_as_show_does(tmp_path, capsys):
    from tui.cli import main

    _, path = _saved(tmp_path, "library", "copies", "good")
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert main(["replay", str(path), "--headless"]) == 0
    assert capsys.readouterr().out == shown
    assert main(["replay", str(path), "--headless", "--at", "2"]) == 0
    out = capsys.readouterr().out
    assert "step 2" in out and "step 3" not in out and "stopped at event 4 of 8" in out
    assert main(["replay", str(path), "--headless", "--at", "9"]) == 2
    assert "the run has 4 steps" in capsys.readouterr().err


def test_replay_without_headless_needs_the_viewer(tmp_path, capsys, monkeypatch):
    from tui.cli import main

    _, path = _saved(tmp_path, "library", "copies", "good")
    monkeypatch.setitem(sys.modules, "tui.replay_app", None)
    assert main(["replay", str(path)]) == 2
    assert "the replay viewer needs the cockpit; use --headless" in capsys.readouterr().err
    seen = {}

    def fake_open(timeline, at):
        seen["at"] = at
        seen["events"] = len(timeline)
        seen["lazy"] = timeline.path == path and not timeline.indexed or at is not None
        return None  # nothing forked

    import types

    module = types.ModuleType("tui.replay_app")
    module.run_viewer = fake_open
    monkeypatch.setitem(sys.modules, "tui.replay_app", module)
    assert main(["replay", str(path), "--at", "1"]) == 0
    assert seen == {"at": 2, "events": 8, "lazy": True}
    assert main(["replay", str(path)]) == 0
    assert seen == {"at": None, "events": 8, "lazy": True}
    assert main(["replay", str(DATA_DIR / "chat_calculator.json")]) == 0
    assert seen["events"] == 4


def test_an_index_pass_gives_way_by_the_time_it_runs_not_after_every_chunk(monkeypatch):
    """A pass lets the viewer's thread in every `PASS_SLICE` seconds: a quick pass over many
    chunks of events does not give way after each one (each `time.sleep(0)` costs CPU)."""
    from engine.stored import replay as replay_module

    header = Header(scenario="s", task="t", task_text="x", policy="p")
    events = [DecisionMade(step=1, policy="p", thought="t", actions=[Action(tool="a", args={})])]
    events += [Observed(step=1, index=0, tool="a", text=f"o{i}") for i in range(999)]
    slept: list[float] = []
    monkeypatch.setattr(replay_module.time, "sleep", slept.append)
    monkeypatch.setattr(replay_module, "PASS_SLICE", 3600.0)
    timeline = Timeline(header, events, checkpoint_every=10)
    timeline.build_index()
    assert timeline.indexed and slept == []
    assert timeline.state_at(len(events)) == fold(header, events)
