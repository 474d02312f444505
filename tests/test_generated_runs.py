"""Generated runs: random tools, policies, operator choices, swaps and budgets.

Whatever happens, in every transcript: no irreversible execution without an
approval before it, every run ends with a recorded reason, and the file reads
back to the same events. Lone surrogates can turn up in every text (thoughts,
arguments, answers, raw text, tool output, rejection reasons); a second writer
tries the file mid-run and is refused; the writer may fail at any line (then
nothing runs after it, and every execution is on file); and the approvals in
the file are forged afterwards (approve or edit instead of reject or abort):
verifying the forged file, or resuming it with --approve none, never runs an
irreversible tool. AGENT_TUI_LONG=1 runs 10,000 cases instead of 300.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Budget, Decision, Param, PolicyError, Scenario, ScriptedPolicy, Task, Tool, ToolError
from engine.core.events import Action
from engine.core.guards import RecordError
from engine.sessions.resume import ResumeError, resume_run
from engine.sessions.run import new_run
from engine.sessions.verify import verify_run
from engine.stored.lock import TranscriptBusy
from engine.stored.transcript import TranscriptWriter, read_transcript, write_transcript
from tests.support.invariants import assert_no_unapproved_irreversible

KINDS = ["ordinary", "irreversible", "exit"]
BAD = "\ud800\udfff\udc00"
"""Lone surrogates: text no UTF-8 writer can encode."""
GARBAGE = [f"Thought: {BAD}\nAction: t0[1]", "", "Thought: hmm", "Action: ???", "[bold]x[/]", "\x1b]0;t\x07", "Final Answer", "Action: x[", "{}"]


def make_tools(kinds: list[str], behaviours: list[str], calls: list) -> list[Tool]:
    tools = []
    for i, (kind, behaviour) in enumerate(zip(kinds, behaviours)):
        name = f"t{i}"

        def fn(value: int, _name=name, _behaviour=behaviour) -> str:
            calls.append(_name)
            if _behaviour == "raise":
                raise RuntimeError("tool broke")
            if _behaviour == "tool_error":
                raise ToolError("no such thing")
            if _behaviour == "huge":
                return "x" * 9000
            if _behaviour == "surrogates":
                return f"out {BAD}"
            return f"{_name}={value}"

        tools.append(
            Tool(
                name,
                f"tool {i}",
                (Param("value", "integer"),),
                None if kind == "exit" else fn,
                kind=kind,  # type: ignore[arg-type]
                timeout=None,
                outcome="answer" if i % 2 else "handed_off",
                answer_param="value",
            )
        )
    return tools


@st.composite
def decisions(draw, n_tools: int):
    kind = draw(st.sampled_from(["act", "act", "act", "multi", "unknown", "bad_args", "text", "answer", "raise", "policy_error", "garbage_type"]))
    tool = f"t{draw(st.integers(0, n_tools - 1))}"
    value = draw(st.integers(0, 3))
    if kind == "act":
        return Decision.act(draw(st.sampled_from(["go", f"go {BAD}"])), tool, value=value)
    if kind == "multi":
        other = f"t{draw(st.integers(0, n_tools - 1))}"
        return Decision(thought="two", actions=[Action(tool=tool, args={"value": value}), Action(tool=other, args={"value": 1})])
    if kind == "unknown":
        return Decision.act("invent", "made_up_tool", value=1)
    if kind == "bad_args":
        return Decision.act("bad", tool, value=draw(st.sampled_from(["not a number", BAD])), extra=draw(st.text(max_size=5)))
    if kind == "text":
        return Decision.from_text(draw(st.sampled_from(GARBAGE + [f"Thought: t\nAction: {tool}[{value}]"])))
    if kind == "answer":
        return Decision.final(f"done {BAD}", draw(st.text(max_size=20)) + draw(st.sampled_from(["", BAD])))
    return kind  # raise / policy_error / garbage_type, handled by the policy


def make_policy(name: str, script: list):
    def decide(view):
        item = script[(view.step - 1) % len(script)]
        if item == "raise":
            raise ValueError("policy bug")
        if item == "policy_error":
            raise PolicyError("endpoint down")
        if item == "garbage_type":
            return {"not": "a decision"}
        return item

    return ScriptedPolicy(name, decide)


@st.composite
def scenarios_and_runs(draw):
    n_tools = draw(st.integers(1, 4))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=n_tools, max_size=n_tools))
    behaviours = draw(st.lists(st.sampled_from(["ok", "ok", "raise", "tool_error", "huge", "surrogates"]), min_size=n_tools, max_size=n_tools))
    scripts = [draw(st.lists(decisions(n_tools), min_size=1, max_size=6)) for _ in range(3)]
    budget = Budget(
        max_steps=draw(st.integers(1, 12)),
        max_tokens=draw(st.none() | st.integers(20, 2000)),
        max_cost=draw(st.none() | st.floats(0.0001, 0.01)),
        price_in_per_1k=draw(st.sampled_from([0.0, 0.5])),
    )
    repetition = draw(st.none() | st.integers(2, 4))
    operator = draw(st.lists(st.sampled_from(["approve", "always", "reject", "edit", "bad_edit", "abort", "swap", "extend"]), min_size=1, max_size=20))
    interactive = draw(st.booleans())
    approve_mode = draw(st.sampled_from(["ask", "ask", "all", "none"]))
    fail_at = draw(st.none() | st.integers(1, 40))
    return kinds, behaviours, scripts, budget, repetition, operator, interactive, approve_mode, fail_at


def drive(case, path: Path):
    kinds, behaviours, scripts, budget, repetition, operator, interactive, approve_mode, fail_at = case
    calls: list[str] = []

    class World:
        tools = make_tools(kinds, behaviours, calls)

    scenario = Scenario(
        name="generated",
        description="",
        tasks={"t": Task("t", "generated task")},
        policies={f"p{i}": (lambda w, t, s=s, i=i: make_policy(f"p{i}", s)) for i, s in enumerate(scripts)},
        make_world=lambda task, options: World(),
        budget=budget,
        repetition_threshold=repetition,
    )
    run = new_run(scenario, "t", "p0", out=path, interactive=interactive, approve=approve_mode)
    if fail_at is not None:
        _fail_after(run, fail_at)
    engine = run.engine
    moves = iter(operator * 30)
    for turn in range(300):
        if turn == 1:
            with pytest.raises(TranscriptBusy):
                TranscriptWriter(path)  # a second writer, while the run holds the file
        try:
            _move(engine, run, next(moves, "abort"))
        except RecordError:
            break
        if engine.stopped:
            break
    if not engine.stopped:
        engine.abort("driver bound reached")
    run.close()
    return run, calls, scenario


def _fail_after(run, lines: int) -> None:
    """The transcript takes `lines` more lines, then every write fails (a full disk)."""
    write, left = run.writer.write, [lines]

    def failing(event_type: str, line: bytes) -> None:
        if left[0] <= 0:
            raise OSError(28, "No space left on device")
        left[0] -= 1
        write(event_type, line)

    run.writer.write = failing


def _move(engine, run, move: str) -> None:
    """One step, then the operator's move where the run waits for one."""
    status = engine.step()
    if status in ("ended", "halted"):
        return
    if status == "awaiting_approval":
        if move == "approve":
            engine.approve()
        elif move == "always":
            engine.approve(always=True)
        elif move == "edit":
            engine.modify({"value": 2})
        elif move == "bad_edit":
            with pytest.raises(ValueError):
                engine.modify({"value": "nope"})
        elif move == "abort":
            engine.abort()
        else:
            engine.reject(f"operator says {move} {BAD}")
    elif status == "awaiting_budget":
        if move == "extend":
            kind = engine.state.exhausted.kind
            engine.extend_budget(kind, engine.state.used(kind) * 2 + 1)
        else:
            engine.end_at_budget()
    elif status == "policy_failed" and move in ("abort", "reject"):
        engine.abort("gave up after a policy error")
    if move == "swap" and not engine.stopped:
        engine.swap_policy(run.scenario.policy(f"p{len(engine.events) % 3}", run.world, run.task))


def check(case) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        run, calls, scenario = drive(case, path)
        transcript = read_transcript(path)
        assert_no_unapproved_irreversible(transcript.header, transcript.events)
        executed = [e.tool for e in transcript.events if e.type == "observation" and e.executed]
        running = [transcript.unfinished.tool] if transcript.unfinished is not None else []
        assert executed + running == calls, "every execution is recorded, and only executions"
        if run.engine.halted is None:
            assert transcript.events == run.engine.events
            assert transcript.events[-1].type == "run_ended" and transcript.events[-1].reason
            assert sum(1 for e in transcript.events if e.type == "run_ended") == 1
        else:
            assert transcript.events == list(run.engine.events), "an event counted that the file does not hold"
        check_forged(scenario, transcript, calls, Path(tmp) / "forged.jsonl")


def check_forged(scenario, transcript, calls: list[str], path: Path) -> None:
    """Forge every reject and abort into an approve or an edit; neither verify nor a
    resume with --approve none of the forged file runs an irreversible tool."""
    irreversible = {t.name for t in transcript.header.tools if t.kind == "irreversible"}
    events = []
    for n, event in enumerate(transcript.events):
        if event.type == "approval_decided" and event.choice in ("reject", "abort"):
            choice = "modify" if n % 2 else "approve"
            event = event.model_copy(update={"choice": choice, "args": {"value": 3} if choice == "modify" else None})
        if event.type != "run_ended":
            events.append(event)
    write_transcript(path, transcript.header, events)
    forged = read_transcript(path)
    before = len(calls)
    verify_run(scenario, forged)
    assert not irreversible & set(calls[before:]), "verify ran an irreversible tool"
    try:
        resumed = resume_run(scenario, forged, approve="none")
    except ResumeError:
        return
    resumed.engine.run()
    resumed.close()
    assert not irreversible & set(calls[before:]), "a resume with --approve none ran an irreversible tool"


CASES = 10_000 if os.environ.get("AGENT_TUI_LONG") else 300
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], derandomize=True)


@settings(max_examples=CASES, **_SETTINGS)
@given(scenarios_and_runs())
def test_generated_runs_keep_the_invariants(case):
    check(case)
