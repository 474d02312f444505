"""What the engine checks in a policy's return value, and what a policy reads for a call
whose outcome a crash left unknown."""

from __future__ import annotations

from engine.core.events import Action, ToolStarted, Usage
from engine.core.jsonvalues import jsonable
from engine.core.policy import Decision, PolicyError


def check_decision(decision: object) -> None:
    """Raise a non-retryable PolicyError naming what is wrong with a policy's return value.

    A policy is untrusted code: a Decision whose fields have the wrong types
    (a number for the thought, a dict for an action, arguments that cannot be
    written as JSON) must become a `policy_error`, not an exception out of the
    engine.
    """
    if not isinstance(decision, Decision):
        raise PolicyError(f"policy returned {type(decision).__name__}, not a Decision", retryable=False)
    problems: list[str] = []
    if not isinstance(decision.thought, str):
        problems.append(f"thought is {type(decision.thought).__name__}, not str")
    for name in ("answer", "text"):
        value = getattr(decision, name)
        if value is not None and not isinstance(value, str):
            problems.append(f"{name} is {type(value).__name__}, not str or None")
    if decision.usage is not None and not isinstance(decision.usage, Usage):
        problems.append(f"usage is {type(decision.usage).__name__}, not Usage or None")
    cost = decision.cost
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost < float("inf")):
        problems.append(f"cost is {cost!r}, not a number of dollars >= 0 or None")
    if not isinstance(decision.actions, (list, tuple)):
        problems.append(f"actions is {type(decision.actions).__name__}, not a list")
    else:
        for n, action in enumerate(decision.actions):
            if not isinstance(action, Action):
                problems.append(f"actions[{n}] is {type(action).__name__}, not Action")
                continue
            problem = jsonable(action.args)
            if problem is not None:
                problems.append(f"actions[{n}] arguments cannot be written as JSON ({problem})")
    if problems:
        raise PolicyError("policy returned a malformed Decision: " + "; ".join(problems), retryable=False)


def unknown_outcome_text(started: ToolStarted) -> str:
    """What the policy reads for a call that was running when the run stopped."""
    call = Action(tool=started.tool, args=dict(started.args)).render()
    return (
        f"UNKNOWN OUTCOME: the run stopped while {call} was running; it may or may not have "
        "taken effect, and it was not run again. Check before repeating it."
    )


MAX_TOKENS_PER_STEP = 1_000_000_000
"""More tokens than any model reads or writes in one step: a count above is not believed."""


def usage_problem(usage: Usage) -> str | None:
    """Why a reported usage cannot be believed (a negative or absurd count), or None.

    Usage comes from a policy or a model server: believed, a negative count would
    switch the token and cost budgets off."""
    for name in ("input_tokens", "output_tokens"):
        value = getattr(usage, name)
        if not 0 <= value <= MAX_TOKENS_PER_STEP:
            shown = str(value) if len(str(value)) <= 20 else f"a {len(str(value))}-digit number of"
            return f"the reported usage was refused ({shown} {name.replace('_', ' ')})"
    return None
