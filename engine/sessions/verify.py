"""Re-run a saved run of scripted policies and find the first event that differs.

The operator's part of the run is taken from the file: approvals, rejections,
edits, aborts, policy swaps and budget extensions are applied again at the
same points; everything else (decisions, observations, warnings, the end) is
produced again by the scenario's scripted policies and ordinary tools, in a
fresh world, and compared event by event. Times and durations are not compared.

An irreversible tool never runs again: its call is answered with the
observation the file recorded for it (the same step, index, tool and
arguments), and the world is restored from the file's executions up to there
(`world.restore`, when it has one). A call the file has no matching execution
for, a forged approval for instance, is answered "NOT RUN" and shows as a
difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from engine.core.text import with_article
from engine.core.collector import HeapFreezer
from engine.core.answers import Answer
from engine.core.engine import Engine
from engine.core.events import Event, Observed
from engine.core.operator import EngineError
from engine.core.policy import Policy
from engine.core.scenario import Scenario, Task
from engine.core.state import RunState
from engine.core.tools import Tool
from engine.sessions.resume import ResumeError, header_world
from engine.stored.transcript import Transcript

_VOLATILE = {"at", "duration", "seal"}
_LIVE = {
    "gateway": "a gateway run's decisions came from the agent's own model through the gateway",
    "mcp": "an MCP run's results came from its live MCP servers (and a model's decisions from the model)",
}
"""Where a run's events came from when verify cannot produce them again (`live_source`)."""


class VerifyError(Exception):
    """A run that cannot be re-run (not scripted, an import, another scenario)."""


@dataclass
class VerifyResult:
    events: int
    """How many events were compared."""
    index: int | None = None
    """The first event that differs (0-based), None when they match."""
    expected: Event | None = None
    got: Event | None = None
    message: str = ""
    unfinished: bool = False
    """The file stops before the run ended (a crash, a closed terminal); its events all match."""

    @property
    def match(self) -> bool:
        return self.index is None


NOT_RUN = "NOT RUN: verify never runs an irreversible tool, and the file records no execution of this call"


class _ReplayingEngine(Engine):
    """An engine whose irreversible calls are answered from the saved run, never run."""

    def __init__(self, *args: Any, saved: Sequence[Event], world: object, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._saved = list(saved)
        self._world = world

    def _execute(self, index: int, tool: Tool, args: dict[str, Any]) -> None:
        if tool.kind != "irreversible":
            super()._execute(index, tool, args)
            return
        step = self.state.step
        for position, event in enumerate(self._saved):
            if (
                isinstance(event, Observed)
                and event.executed
                and (event.step, event.index, event.tool) == (step, index, tool.name)
                and event.args == args
            ):
                restore = getattr(self._world, "restore", None)
                if callable(restore):
                    restore([e for e in self._saved[: position + 1] if isinstance(e, Observed) and e.executed])
                self._observe(
                    index, tool.name, args, event.text, error=event.error, executed=True,
                    truncated=event.truncated, duration=event.duration,
                )
                return
        self._observe(index, tool.name, args, NOT_RUN, error=True)


def comparable(event: Event) -> dict[str, Any]:
    """The event without its times (`at`, `duration`) and its seal (a re-run seals nothing), for comparison."""
    return event.model_dump(exclude=_VOLATILE)


def _differing_fields(a: Event, b: Event) -> list[str]:
    da, db = comparable(a), comparable(b)
    return [k for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)]


def verify_run(scenario: Scenario, transcript: Transcript, *, max_events: int | None = None) -> VerifyResult:
    header, saved = transcript.header, list(transcript.events)
    if header.scenario != scenario.name:
        raise VerifyError(f"{transcript.path}: the run is of scenario '{header.scenario}', not '{scenario.name}'")
    names = [header.policy, *(e.new for e in saved if e.type == "policy_swapped")]
    for name in names:
        if name not in scenario.policies:
            raise VerifyError(
                f"{transcript.path}: policy '{name}' is not one of {scenario.name}'s scripted policies "
                f"({', '.join(scenario.policies)}); only runs of scripted policies can be re-run"
            )
    try:
        task = scenario.task(header.task)
    except KeyError:
        task = Task(header.task, header.task_text)
    try:
        world = header_world(scenario, task, header, transcript.path)
    except ResumeError as exc:
        raise VerifyError(str(exc)) from None
    bys = {e.by for e in saved if e.type == "approval_decided"}
    approve = "all" if "auto (--approve all)" in bys else "none" if "auto (--approve none)" in bys else "ask"
    interactive = any(e.type in ("budget_exhausted", "budget_extended") for e in saved)

    def make(name: str) -> Policy:
        return scenario.policy(name, world, task)

    engine = _ReplayingEngine(
        header, world.tools, make(header.policy), interactive=interactive, approve=approve, saved=saved, world=world  # type: ignore[attr-defined]
    )
    freezer = HeapFreezer(now=True)  # the events read, and the re-run's growing history: out of the full passes
    try:
        return _compare(engine, saved, make, max_events if max_events is not None else len(saved) + 1000, freezer)
    finally:
        freezer.close()


def _compare(engine: Engine, saved: list[Event], make: Callable[[str], Policy], limit: int, freezer: HeapFreezer) -> VerifyResult:
    """Step the re-run and compare each event it makes with the saved one."""
    compared = 0
    while True:
        produced = engine.events
        for i in range(compared, min(len(produced), len(saved))):
            if comparable(produced[i]) != comparable(saved[i]):
                fields = ", ".join(_differing_fields(saved[i], produced[i]))
                return VerifyResult(
                    i, i, saved[i], produced[i],
                    f"event {i + 1} differs ({saved[i].type}; {fields})",
                )
        compared = min(len(produced), len(saved))
        if len(produced) > len(saved):
            extra = produced[len(saved)]
            if not any(e.type == "run_ended" for e in saved):
                return VerifyResult(
                    len(saved),
                    message=f"all {len(saved)} events match, and the run is unfinished: the file stops before "
                    f"its end (the re-run goes on with {extra.type}); resume it with agent-tui run --resume FILE",
                    unfinished=True,
                )
            return VerifyResult(
                len(saved), len(saved), None, extra,
                f"event {len(saved) + 1}: the re-run goes on with {extra.type} where the file ends",
            )
        if engine.ended or len(produced) >= limit:
            break
        before = len(produced)
        _advance(engine, saved, make)
        freezer.grown(len(engine.events))
        if len(engine.events) == before:
            break
    if len(engine.events) < len(saved):
        missing = saved[len(engine.events)]
        return VerifyResult(
            len(engine.events), len(engine.events), missing, None,
            f"event {len(engine.events) + 1}: the re-run stops ({engine.status}) where the file has {missing.type}",
        )
    if not any(e.type == "run_ended" for e in saved):  # e.g. stopped at an approval nobody answered
        return VerifyResult(
            len(saved),
            message=f"all {len(saved)} events match, and the run is unfinished: the file stops before its end "
            f"(the re-run is {engine.status.replace('_', ' ')} there); resume it with agent-tui run --resume FILE",
            unfinished=True,
        )
    return VerifyResult(len(saved), message=f"all {len(saved)} events match")


def _advance(engine: Engine, saved: Sequence[Event], make) -> None:
    """One move: the operator's next recorded input if it is due, else a step."""
    k = len(engine.events)
    upcoming = saved[k] if k < len(saved) else None
    status = engine.status
    try:
        if upcoming is not None and upcoming.type == "policy_swapped":
            engine.swap_policy(make(upcoming.new))
            return
        if upcoming is not None and upcoming.type == "budget_extended":
            engine.extend_budget(upcoming.kind, upcoming.limit)
            return
        if status == "awaiting_approval" and upcoming is not None and upcoming.type == "approval_decided":
            engine.answer(Answer.recorded(upcoming))
            return
        if upcoming is not None and upcoming.type == "run_ended":
            if status == "awaiting_budget":
                engine.end_at_budget()
                return
            if upcoming.outcome == "aborted":
                engine.abort(upcoming.reason)
                return
        if status in ("ready", "policy_failed"):
            engine.step()
    except (EngineError, ValueError):
        return


def live_source(header: Any) -> str | None:
    """"gateway" or "mcp" for a run whose events came from outside agent-tui (the agent's model,
    MCP servers), which verify cannot re-run; None for a run it can try to."""
    if header.scenario == "gateway":
        return "gateway"
    if header.mcp:
        return "mcp"
    return None


def check_recorded(transcript: Transcript) -> VerifyResult:
    """What can be verified of a run that cannot be re-run (a gateway or MCP run): that its
    events agree with each other as the fold reads them. Each approval and result answers a
    call of the step's decision (the same tool), each operator's answer an approval asked and
    not yet answered, and nothing follows the end. Its decisions and results are not re-derived."""
    kind = live_source(transcript.header)
    source = _LIVE.get(kind or "", "its events came from outside agent-tui")
    state = RunState.start(transcript.header)
    calls: dict[int, str] = {}
    asked: set[int] = set()
    answered: set[int] = set()
    events = transcript.events
    for i, event in enumerate(events):
        problem = None
        t = event.type
        if state.ended is not None:
            problem = f"{_a(t)} line after the run ended"
        elif t == "decision":
            calls = {n: action.tool for n, action in enumerate(event.actions)}
            asked, answered = set(), set()
        elif t == "observation" and event.index < 0 and event.tool is None:
            pass  # a word about the run outside its calls (`Engine._emit_outside`)
        elif t in ("approval_requested", "approval_decided", "observation"):
            if event.step != state.step or calls.get(event.index) is None:
                problem = f"{_a(t)} for call {event.index} of step {event.step}, which the run's decisions never made"
            elif getattr(event, "tool", calls[event.index]) != calls[event.index]:
                problem = f"{_a(t)} for {event.tool}, where step {event.step} called {calls[event.index]}"
            elif t == "approval_requested":
                asked.add(event.index)
            elif t == "approval_decided":
                if event.index not in asked:
                    problem = f"an operator's answer for call {event.index} of step {event.step}, which asked for none"
                asked.discard(event.index)
            elif event.index in answered:
                problem = f"a second result for call {event.index} of step {event.step}"
            else:
                answered.add(event.index)
        if problem is not None:
            return VerifyResult(i, i, event, None, f"event {i + 1}: {problem}")
        state.apply(event)
    ended = "" if state.ended is not None else " (the run is unfinished: the file stops before its end)"
    return VerifyResult(
        len(events),
        message=("its one event agrees" if len(events) == 1 else f"all {len(events)} events agree with each other")
        + f" as the run's fold reads them{ended}; {source}, "
        "which cannot be re-derived without them: verify re-runs only runs of scripted policies and built-in tools",
    )


def _a(event_type: str) -> str:
    return with_article(event_type.replace("_", " "))
