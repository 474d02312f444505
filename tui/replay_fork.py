"""Where the replay viewer's `f` forks from, and what its dialog says about it.

A fork continues a saved run from a point with another policy. At some points a
fork could do nothing: the run has ended there, the step shown is the final
answer, or the run ended right after this decision without running its actions
(the repetition brake, an exit tool), which a fork would only repeat. There `f`
forks from the nearest point before that a fork can continue from: just before
the run's end when the run stopped with a step still open (an abort, a budget
the operator ended), else the end of the last step the engine can keep (as
`agent-tui run --fork FILE --at end` does). The dialog says which.

`_fork_from` starts the fork the viewer hands to the cockpit, and
`imported_fork_policies` names the policies an imported log can fork with.
"""

from __future__ import annotations

from pathlib import Path

from engine.core.state import RunState
from engine.sessions.resume import fork_refusal, last_forkable_step
from engine.stored.replay import Timeline
from engine.stored.transcript import Transcript


def why_not_here(timeline: Timeline, position: int, state: RunState) -> str | None:
    """Why a fork from the first `position` events could do nothing, or None."""
    refusal = fork_refusal(state)
    if refusal is not None:
        if state.history and state.history[-1].answer is not None:
            return f"Step {state.step} is the final answer"
        outcome = f" ({state.ended.outcome})" if state.ended is not None else ""
        return f"The run ended here{outcome}"
    if 0 < position < len(timeline) and timeline.event(position - 1).type == "decision" and timeline.event(position).type == "run_ended":
        return f"The run ended right after step {state.step}'s decision, before its action ran"
    return None


def fork_target(timeline: Timeline, position: int, state: RunState) -> tuple[int, str]:
    """The position `f` forks from when the viewer shows `position` (whose fold is
    `state`), and the title of the dialog that asks for the policy."""
    why = why_not_here(timeline, position, state)
    if why is None:
        return position, f"Fork here (step {state.step}, event {position}) with"
    if position == len(timeline) and state.status == "ended" and position > 0:
        before = position - 1
        if why_not_here(timeline, before, timeline.state_at(before)) is None:
            return before, f"{why}: fork from just before its end with"
    step, _, _ = last_forkable_step(timeline, state.step)
    where = "the task, before step 1" if step == 0 else f"the end of step {step}"
    return timeline.position_after_step(step), f"{why}: fork from {where} with"


def _fork_from(timeline: Timeline, position: int, policy: str):
    """Start a live run from `position` of the timeline's file (the cockpit takes it).

    An imported log forks in a world of its own tools (engine.sessions.imported),
    with the operator or the configured model. A configuration that cannot be read
    refuses the fork with its message (the viewer shows it)."""
    import scenarios
    from engine.sessions.resume import continue_run

    model = None
    if timeline.header.scenario == "imported":
        from engine.sessions.imported import imported_scenario

        scenario = imported_scenario(timeline.header)
        if policy == "model":
            from engine.model.policy import config_from_env

            model = config_from_env()
            if model is None:
                raise ValueError("no model is configured: set AGENT_TUI_MODEL (and AGENT_TUI_BASE_URL)")
    else:
        scenario = scenarios.get_named(timeline.header.scenario)
    transcript = Transcript(
        path=Path(timeline.path) if timeline.path else Path("imported"),
        header=timeline.header,
        events=timeline.events(0, position),
    )
    from engine.sessions.config import load_config

    # As `run --fork` does: a header without this machine's seal gives way to the
    # scenario's rules and the configuration's, so a deny the operator keeps there holds.
    rules = load_config().rules
    return continue_run(scenario, transcript, policy, position=position, interactive=True, operator_rules=rules, model=model)


def imported_fork_policies() -> list[str]:
    """An imported run forks with the operator, and with the model when one is configured."""
    from engine.model.policy import config_from_env

    try:
        configured = config_from_env() is not None
    except ValueError:
        configured = False
    return ["human", *(["model"] if configured else [])]
