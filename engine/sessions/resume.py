"""Resume a run that did not end, or fork a saved run at a step with another policy.

Both rebuild the run from its transcript without running any tool again: the
state is the fold of the saved events, the world is rebuilt from the recorded
executions (`world.restore(executed)` when the world has one), and the engine
continues from there. A pending approval is asked again, never run on its own
(whatever `approve` says, and also when its line was torn by a crash);
a decision whose actions were not all processed continues with the rest; a
call that was running when the run stopped (its `tool_started` line has no
observation) is answered "unknown outcome" and never run again.

- Resume appends to the same file (the torn last line a crash may leave is cut
  off first).
- Fork writes a new file whose header names its parent and the fork position
  (`fork_at`, the number of events copied from the parent), then the copied
  events, then what the new policy does.

The engine knows no scenarios: callers pass the Scenario the header names
(the CLI looks it up with `scenarios.get(header.scenario)`).
"""

from __future__ import annotations

import time
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence, TypedDict, Unpack

from engine.core.approvals import rule_warnings
from engine.core.collector import collector_paused
from engine.core.engine import ApproveMode, Engine, Listener
from engine.sessions.build import build_engine
from engine.sessions.seals import Sealer
from engine.core.events import Event, Header, Observed, RuleInfo, ToolStarted
from engine.core.policy import Decision, HumanPolicy, Policy, RunView
from engine.stored.lock import check_new
from engine.stored.replay import Timeline
from engine.sessions.policies import resolve_policy
from engine.sessions.run import Run, default_transcript_path
from engine.sessions.trust import Trust, believe, believed, trust_in
from engine.core.scenario import Restorable, Scenario, Task
from engine.core.sink import event_line
from engine.core.state import RunState, fold
from engine.core.tools import Tool
from engine.stored.transcript import Transcript, TranscriptError, TranscriptWriter, read_transcript

if TYPE_CHECKING:
    from engine.model.config import ModelConfig

IMPORTED = "imported"


class ResumeError(Exception):
    """A transcript that cannot be resumed or forked as asked; the message says why."""


class ContinueOptions(TypedDict, total=False):
    """What `resume_run` and `fork_run` both take by keyword, with the defaults of `_DEFAULTS`:
    the engine's `clock`, `interactive` (a cockpit) and `approve` mode, its `listeners`, the
    `extra_tools` of the run's MCP servers (started again by the caller), the `operator_rules`
    (the configuration's) believed of a file without this machine's seal, and the model policies
    a policy name may be: `model` (the flags' endpoint) and `named` (the configured ones)."""

    clock: Callable[[], float]
    interactive: bool
    approve: ApproveMode
    listeners: Sequence[Listener]
    extra_tools: Sequence[Tool]
    operator_rules: Sequence[RuleInfo]
    model: ModelConfig | None
    named: Mapping[str, ModelConfig] | None


_DEFAULTS: ContinueOptions = {
    "clock": time.time, "interactive": False, "approve": "ask", "listeners": (), "extra_tools": (),
    "operator_rules": (), "model": None, "named": None,
}


def _options(function: str, given: Mapping[str, Any]) -> ContinueOptions:
    """`given` over the defaults; a keyword that is not an option is refused as Python refuses it."""
    for name in given:
        if name not in _DEFAULTS:
            raise TypeError(f"{function}() got an unexpected keyword argument '{name}'")
    return {**_DEFAULTS, **given}  # type: ignore[typeddict-item]


class _Named:
    """Stands for the policy that made the saved events, so that a new policy
    comes in through `Engine.swap_policy` and is recorded as a swap."""

    def __init__(self, name: str) -> None:
        self.name = name

    def decide(self, view: RunView) -> Decision:  # pragma: no cover - replaced before any decision
        raise RuntimeError("placeholder policy")


def _check_source(scenario: Scenario, transcript: Transcript, what: str) -> None:
    header = transcript.header
    if header.scenario == IMPORTED and (scenario.name != IMPORTED or what != "forked"):
        raise ResumeError(
            f"{transcript.path}: an imported {header.options.get('format', 'foreign')} log has no world to act on; "
            f"it can be replayed, shown, exported and forked with the human or model policy, not {what}"
        )
    if scenario.name != header.scenario:
        raise ResumeError(f"{transcript.path}: the run is of scenario '{header.scenario}', not '{scenario.name}'")
    if transcript.errors:
        raise ResumeError(f"{transcript.path}: has unreadable lines ({transcript.errors[0]}); it cannot be {what}")


def _task(scenario: Scenario, header: Header) -> Task:
    try:
        return scenario.task(header.task)
    except KeyError:
        return Task(header.task, header.task_text)


def header_world(scenario: Scenario, task: Task, header: Header, path: object) -> object:
    """The world a saved run's header names. A transcript is untrusted: options or a task
    the scenario cannot build a world from are a ResumeError naming the file, not a traceback."""
    try:
        return scenario.make_world(task, dict(header.options))
    except (ValueError, TypeError, KeyError) as exc:
        detail = exc.args[0] if exc.args else type(exc).__name__
        raise ResumeError(f"{path}: scenario '{scenario.name}' cannot rebuild this run's world from its header: {detail}") from None


def no_restore_warning(scenario: str, calls: int) -> str:
    what = "1 tool call" if calls == 1 else f"{calls} tool calls"
    return (
        f"the world of scenario '{scenario}' has no restore(executed) hook, so it starts fresh: what the {what} "
        "before changed in it (a balance, a file, a counter) is not there. Give the world a restore method "
        "(see the README, 'Scenario files') if its tools change anything."
    )


def _rebuild(
    scenario: Scenario,
    header: Header,
    events: Sequence[Event],
    policy: str | Policy | None,
    state: RunState,
    warnings: list[str],
    path: object,
    options: ContinueOptions,
    executed_at: Sequence[int] | None = None,
) -> tuple[Task, object, Policy, HumanPolicy]:
    """Task, world restored from the recorded executions (at `executed_at` among `events`, when
    the caller found them), and the policy to continue with."""
    task = _task(scenario, header)
    world = header_world(scenario, task, header, path)
    if executed_at is None:
        executed_at = [i for i, e in enumerate(events) if isinstance(e, Observed) and e.executed]
    if isinstance(world, Restorable):
        world.restore([events[i] for i in executed_at])
    elif executed_at:
        warnings.append(no_restore_warning(scenario.name, len(executed_at)))
    human = HumanPolicy()
    try:
        policy_obj = resolve_policy(
            state.policy if policy is None else policy, scenario, world, task, human, model=options["model"], named=options["named"]
        )
    except (KeyError, ValueError) as exc:
        raise ResumeError(exc.args[0]) from None
    return task, world, policy_obj, human


def _believed_fold(transcript: Transcript, operator_rules: Sequence[RuleInfo]) -> tuple[Trust, RunState, array]:
    """What a resume believes of `transcript`, the fold of its events as believed, and where its
    executed calls are, in one pass: each event of a lazily read transcript is parsed once and
    dropped (the fold's old steps are read back from the file's lines when asked).
    ResumeError naming FILE:LINE for a line that is not an event or does not follow."""
    trust = trust_in(transcript.header, operator_rules)
    events = transcript.events
    state = RunState.start(trust.header)
    state.history.read_from(events.__getitem__)
    executed_at = array("q")
    try:
        with collector_paused():
            for position, event in enumerate(believed(trust, transcript.header, events)):
                state.apply(event)
                if event.type == "observation" and event.executed:
                    executed_at.append(position)
    except TranscriptError as exc:
        raise ResumeError(str(exc)) from None
    return trust, state, executed_at


def _engine(
    header: Header,
    world: object,
    events: Sequence[Event],
    state: RunState,
    policy: Policy,
    options: ContinueOptions,
    unfinished: ToolStarted | None = None,
    sink: TranscriptWriter | None = None,
    event_lines: Sequence[bytes] | None = None,
    sealer: Sealer | None = None,
) -> Engine:
    engine = build_engine(
        header,
        [*world.tools, *options["extra_tools"]],  # type: ignore[attr-defined]
        _Named(state.policy),
        writer=sink,
        sealer=sealer,
        events=events,
        state=state if state.header is header else None,  # a fork's header is its own: folded again under it
        event_lines=event_lines,
        listeners=options["listeners"],
        clock=options["clock"],
        interactive=options["interactive"],
        approve=options["approve"],
        unfinished=unfinished,
    )
    if state.history and state.history[-1].answer is not None:
        engine.end_answered()  # cut between an answer and its end: the answer stands
    else:
        engine.end_if_braked()  # cut between a repeated action and the brake's end: it never runs
    if policy.name != state.policy:
        engine.swap_policy(policy)
    else:
        engine.policy = policy
    if not options["interactive"] and engine.state.status == "awaiting_budget":
        engine.end_at_budget()  # a headless run ends at a limit instead of pausing
    return engine


def _say(trust: Trust, path: object, warnings: list[str]) -> None:
    warning = trust.warning(path)
    if warning is not None:
        warnings.append(warning)


def _repair_tail(path: Path) -> None:
    """Make the file end at a line boundary before appending: drop a torn last
    line (the reader already warned about it), or end a whole one with a newline."""
    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ResumeError(
            f"{path}: the file is UTF-16 text (read as well as UTF-8) and a resume appends UTF-8 lines to it; "
            f"fork the run into a new file instead: agent-tui run --fork {path}"
        )
    if not data or data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    tail = data[cut:]
    import json

    try:
        json.loads(tail)
        whole = True
    except (ValueError, RecursionError):  # RecursionError: a torn line of many "["
        whole = False
    with open(path, "r+b") as f:
        if whole:
            f.seek(0, 2)
            f.write(b"\n")
        else:
            f.truncate(cut)


def _same_as_read(path: Path, transcript: Transcript) -> None:
    """Refuse to go on when another process appended to the file after it was read.

    Called with the file locked. A file that ended at a line boundary and has the
    same size now had nothing appended (it would have grown; only a torn last line
    is ever cut, before appending); any other file is read again and compared."""
    if transcript.whole_size is not None:
        try:
            if path.stat().st_size == transcript.whole_size:
                return
        except OSError:
            pass  # read again below, which says what is wrong
    try:
        now = read_transcript(path)
    except TranscriptError as exc:
        raise ResumeError(str(exc)) from None
    if len(now.events) != len(transcript.events) or now.unfinished != transcript.unfinished:
        raise ResumeError(f"{path}: another run wrote to this transcript after it was read; read it again before resuming")


def ended_refusal(path: object, state: RunState) -> str | None:
    """Why a run whose fold is `state` cannot be resumed: it ended (None: it did not)."""
    end = state.ended
    if state.status != "ended" or end is None:
        return None
    return f"{path}: the run already ended ({end.outcome}: {end.reason}); fork it to go on from a step: agent-tui run --fork FILE --at N"


def resume_run(
    scenario: Scenario,
    transcript: Transcript,
    policy: str | Policy | None = None,
    **given: Unpack[ContinueOptions],
) -> Run:
    """Continue a run that did not end, appending to its own transcript (`given`: see `ContinueOptions`).

    The file's approval rules are believed only with this machine's seal (`engine.sessions.trust`);
    without it the header's are the scenario's and `operator_rules`.

    `policy` defaults to the policy in charge when the file stops; another one
    is recorded as a policy swap. Raises ResumeError if the run has ended, is
    an import, or is not of `scenario`.
    """
    options = _options("resume_run", given)
    _check_source(scenario, transcript, "resumed")
    trust, state, executed_at = _believed_fold(transcript, [*scenario.rules, *options["operator_rules"]])
    header, events = trust.header, transcript.events
    refusal = ended_refusal(transcript.path, state)
    if refusal is not None:
        raise ResumeError(refusal)
    warnings: list[str] = []
    path = Path(transcript.path)
    writer = TranscriptWriter(path)  # the lock first: from here on nobody else appends
    try:
        _same_as_read(path, transcript)
        _repair_tail(path)
        task, world, policy_obj, human = _rebuild(
            scenario, header, events, policy, state, warnings, transcript.path, options, executed_at
        )
        engine = _engine(
            header, world, events, state, policy_obj, options, transcript.unfinished, writer,
            event_lines=transcript.lines_kept(),  # the lines as read: not serialised again
            sealer=trust.sealer(transcript.header),  # the file's header: the next resume checks against it
        )
    except BaseException:
        writer.close()
        raise
    # One rule for an approval the earlier session reached, whether its line was
    # recorded (the run is awaiting it) or torn (its action is still queued): ask again.
    engine.ask_again = {(state.step, index) for index, _ in state.queue}
    _say(trust, transcript.path, warnings)
    return Run(scenario=scenario, task=task, world=world, engine=engine, path=path, writer=writer, human=human, warnings=warnings)  # type: ignore[arg-type]


def fork_position(transcript: Transcript, at: int | Literal["end"]) -> int:
    """The event position where a fork at step `at` starts.

    Fork at step N keeps steps 1..N whole (each decision with its approvals
    and observations, and the warnings and swaps that follow) and lets the
    new policy make decision N+1. N = 0 starts over from the task. A step
    that ended the run (a final answer, a brake, an exit tool) or was left
    unfinished cannot be kept: fork at an earlier one. "end" is the last step
    that can be kept.
    """
    return fork_point(transcript, at)[0]


def fork_point(transcript: Transcript, at: int | Literal["end"]) -> tuple[int, RunState]:
    """`fork_position`, and the fold of the events before it (for `fork_run`, which
    then does not fold them again)."""
    if at != "end" and at < 0:
        raise ResumeError("the fork step must be 0 or more")
    # The fold over every event makes no cycles and is dropped here: no collection walks it.
    with collector_paused():
        return _fork_point(Timeline(transcript.header, transcript.events), transcript, at)


def _fork_point(timeline: Timeline, transcript: Transcript, at: int | Literal["end"]) -> tuple[int, RunState]:
    last = timeline.steps()
    forkable, state, problems = last_forkable_step(timeline, last)
    if at == "end" or at == forkable:
        return timeline.position_after_step(forkable), state
    steps = "1 step" if last == 1 else f"{last} steps"
    can = f"fork at step 0..{forkable}" if forkable else "fork at step 0"
    if at > last:
        raise ResumeError(f"{transcript.path}: the run has {steps}; {can}")
    if at in problems:
        raise ResumeError(f"{transcript.path}: cannot fork at step {at}: {problems[at]}; {can}")
    position = timeline.position_after_step(at)
    return position, timeline.state_at(position)


def last_forkable_step(timeline: Timeline, up_to: int) -> tuple[int, RunState, dict[int, str]]:
    """The last step at or before `up_to` whose end a fork can keep (see `fork_position`),
    the fold at that end, and why each later step up to `up_to` cannot be kept.

    Step 0 (the task alone) is the answer when no step can be kept."""
    problems: dict[int, str] = {}
    state = None
    for step in range(up_to, -1, -1):
        state = timeline.state_at(timeline.position_after_step(step))
        problem = _incomplete(state, step)
        if problem is None:
            return step, state, problems
        problems[step] = problem
    assert state is not None  # up_to >= 0: the loop ran
    return 0, state, problems


def fork_refusal(state: RunState) -> str | None:
    """Why a fork cannot continue from `state` (`fork_run` refuses it), or None."""
    if state.status == "ended":
        return "the run has ended there"
    if state.history and state.history[-1].answer is not None:
        return f"step {state.step} is the final answer"
    return None


def _incomplete(state: RunState, step: int) -> str | None:
    if state.status == "ended":
        return f"the run ended at step {step}"
    if step == 0:
        return None
    last = state.history[-1] if state.history else None
    if last is not None and last.answer is not None:
        return f"step {step} is the final answer"
    if state.pending is not None or state.queue:
        return f"step {step} did not finish (its actions were not all processed)"
    return None


def fork_run(
    scenario: Scenario,
    transcript: Transcript,
    position: int,
    policy: str | Policy | None = None,
    *,
    out: str | Path | None = None,
    mcp: Sequence[dict] | None = None,
    header_changes: dict[str, Any] | None = None,
    folded: RunState | None = None,
    added_rules: Sequence[RuleInfo] = (),
    **given: Unpack[ContinueOptions],
) -> Run:
    """Start a new run from the first `position` events of a saved one (`mcp`: the
    restarted servers, for the new header; `header_changes`: rules, budget or
    repetition threshold of the new header, which apply from the copied events on;
    `added_rules`: rules the operator adds to those believed of the saved run;
    `folded`: the fold of those events under the saved header when the caller has
    it, from `fork_point` or a timeline's `state_at`, taken over instead of folding).

    The saved run's approval rules are believed only with this machine's seal, as for
    `resume_run` (`given`: see `ContinueOptions`); the fork's header and the "approve always"
    it believes are sealed again for the fork.

    `position` is an event position (see `fork_position` for a step). The new
    transcript's header has parent=<the saved file> and fork_at=position; its
    first events are the copied ones, so the fold of the new file at
    `position` equals the parent's. No tool runs for the copied events.
    """
    options = _options("fork_run", given)
    _check_source(scenario, transcript, "forked")
    header = transcript.header
    if not 0 <= position <= len(transcript.events):
        raise ResumeError(f"{transcript.path}: fork position {position} is outside 0..{len(transcript.events)}")
    events = list(transcript.events[:position])
    trust = believe(header, events, [*scenario.rules, *options["operator_rules"]])
    header = trust.header
    state = folded if folded is not None and trust.whole else fold(header, trust.events)
    refusal = fork_refusal(state)
    if refusal is not None:
        raise ResumeError(f"{transcript.path}: cannot fork at event {position}: {refusal}; fork at an earlier step")
    warnings: list[str] = []
    task, world, policy_obj, human = _rebuild(scenario, header, events, policy, state, warnings, transcript.path, options)
    started = options["clock"]()
    child = trust.seal(header.model_copy(
        update={
            "parent": str(Path(transcript.path).resolve()),
            "fork_at": position,
            "fork_step": state.step,
            "fork_policy": policy_obj.name,
            "started_at": started,
            "rules": [*header.rules, *added_rules],
            **({"mcp": list(mcp)} if mcp is not None else {}),
            **(header_changes or {}),
        }
    ))
    warnings += rule_warnings(child.rules, [*world.tools, *options["extra_tools"]])  # type: ignore[attr-defined]
    _say(trust, transcript.path, warnings)
    path = Path(out) if out is not None else default_transcript_path(header.scenario, header.task, started)
    if path.exists() and path.resolve() == Path(transcript.path).resolve():
        raise ResumeError(f"{path}: a fork cannot overwrite its parent")
    try:
        check_new(path)
    except (FileExistsError, IsADirectoryError) as exc:
        raise ResumeError(str(exc)) from None
    writer = TranscriptWriter(path, child)
    events = trust.resealed(events, child)
    lines = [event_line(event) for event in events]  # the event log keeps them too
    try:
        for event, line in zip(events, lines):  # one write to the system at the end, not one an event
            writer.write(event.type, line)
        writer.flush()
    except BaseException:
        writer.close()
        raise
    engine = _engine(
        child, world, events, state.under(child) or fold(child, trust.events), policy_obj, options,
        sink=writer, event_lines=lines, sealer=trust.sealer(child),
    )
    return Run(scenario=scenario, task=task, world=world, engine=engine, path=path, writer=writer, human=human, warnings=warnings)  # type: ignore[arg-type]


def continue_run(
    scenario: Scenario,
    transcript: Transcript,
    policy: str | Policy | None = None,
    *,
    resume: bool = False,
    at: int | Literal["end"] | None = None,
    position: int | None = None,
    **options: Any,
) -> Run:
    """A saved run continued, from the command line (`run --resume` / `--fork`) or the viewer (`f`):
    resumed in its own file (`resume`), or forked into a new one at step `at` (N or "end", the
    default; see `fork_position`) or at the event `position` the viewer shows.

    `options` are `resume_run`'s or `fork_run`'s; a fork's own (`out`, `mcp`, `header_changes`,
    `added_rules`) are refused with a resume when they say anything."""
    if resume:
        fork_only = [k for k in ("out", "mcp", "header_changes", "added_rules") if options.pop(k, None)]
        if at is not None or position is not None or fork_only:
            raise ValueError("a resume continues its own file where it stopped: a fork point, a new file or new header fields go with a fork")
        return resume_run(scenario, transcript, policy, **options)
    folded = None
    if position is None:
        position, folded = fork_point(transcript, "end" if at is None else at)
    return fork_run(scenario, transcript, position, policy, folded=folded, **options)
