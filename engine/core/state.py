"""Run state as a fold over the event stream.

`RunState.apply(event)` is the only way state changes, so replaying the first
k events of a transcript gives exactly the state the live run had after its
k-th event. The engine, the replay viewer and resume all use this fold.
"""

from __future__ import annotations

import copy as _copy
import math
from dataclasses import dataclass, field, fields
from typing import Any, Hashable, Iterable, Literal

from engine.core import events as ev
from engine.core.approvals import always_rule
from engine.core.collector import collector_paused
from engine.core.events import Action, Budget, BudgetExhausted, BudgetKind, Event, Header, RuleInfo, RunEnded
from engine.core.history import History, as_history, observation_of, step_of
from engine.core.jsonvalues import args_key

Status = Literal["ready", "awaiting_approval", "awaiting_budget", "policy_failed", "ended"]
"""Where the fold leaves a run."""
RunStatus = Literal[
    "running", "ready", "awaiting_input", "awaiting_approval", "awaiting_budget", "policy_failed", "ended", "halted"
]
"""The one status vocabulary of a run, as the engine, the cockpit and the command line speak of it:
a fold `Status`, or `awaiting_input` (the operator's turn to type the step) or `running` (a step
is under way in the cockpit) or `halted` (the transcript cannot take another event)."""


def run_status(status: Status, *, human_needs_input: bool, busy: bool = False, halted: bool = False) -> RunStatus:
    """The run's status from the fold's, whether the human policy waits for the operator, and
    whether a step is running now."""
    if busy:
        return "running"
    if halted:
        return "halted"
    if status in ("ready", "policy_failed") and human_needs_input:
        return "awaiting_input"
    return status
TOKENS_PER_WORD = 1.3


def estimate_tokens(text_or_words: str | int) -> int:
    """Seed 002's rule of thumb: words x 1.3, rounded up."""
    words = text_or_words if isinstance(text_or_words, int) else len(text_or_words.split())
    return math.ceil(words * TOKENS_PER_WORD)


def decision_text(e: ev.DecisionMade) -> str:
    """The words a decision adds to the context (what the policy wrote)."""
    return written_text(e.raw, e.thought, e.actions, e.answer)


def added_words(event: Event) -> int:
    """The words `event` adds to the context a policy reads next, as the fold counts them into
    `RunState.context_words`: a decision's text, an observation's or a note's; none for the rest."""
    kind = event.type
    if kind == "decision":
        return decision_words(event)  # type: ignore[arg-type]
    if kind == "observation" or kind == "note":
        return len(event.text.split())  # type: ignore[union-attr]
    return 0


def decision_words(e: ev.DecisionMade) -> int:
    """`len(decision_text(e).split())` (see `written_words`)."""
    return written_words(e.raw, e.thought, e.actions, e.answer)


def written_words(raw: str | None, thought: str, actions: Iterable[Action], answer: str | None) -> int:
    """`len(written_text(...).split())`: the words of each part summed (the parts are joined by
    newlines), a call's without writing it out when none of its parts holds a space or another
    character `str.split` splits at (the usual call: then its words are its arguments, or 1)."""
    if raw is not None:
        return len(raw.split())
    words = len(thought.split()) if thought else 0
    for action in actions:
        words += _call_words(action)
    if answer is not None:
        words += len(answer.split())
    return words


def _call_words(action: Action) -> int:
    """The words of `action.render()`: `tool(k=v, k=v)` splits at its ", " only, when no tool
    name, key or string value holds a character that is whitespace (each such is not printable,
    but for the space) and the values are scalars (their JSON holds no whitespace either) or
    non-empty lists of them (`["wc", "-w"]` splits at its ", " too: a word an item)."""
    args, tool = action.args, action.tool
    words = 0  # what lists add to a word a value
    if action.args_error is None and type(args) is dict and tool.isprintable() and " " not in tool:
        for key, value in args.items():
            if type(key) is not str or not key.isprintable() or " " in key:
                break
            kind = type(value)
            if kind is str:
                if not value.isprintable() or " " in value:
                    break
            elif kind is list and value:
                if not _bare_items(value):
                    break
                words += len(value) - 1
            elif kind not in _BARE_SCALARS:
                break
        else:
            return words + (len(args) or 1)
    return len(action.render().split())


def _bare_items(values: list[Any]) -> bool:
    """Every item a string without whitespace (nor any other character that is not printable) or
    a scalar whose JSON holds none (a command's words, the usual list argument)."""
    for value in values:
        kind = type(value)
        if kind is str:
            if not value.isprintable() or " " in value:
                return False
        elif kind not in _BARE_SCALARS:
            return False
    return True


_BARE_SCALARS = (int, float, bool, type(None))
"""Values whose JSON holds no whitespace."""


def written_text(raw: str | None, thought: str, actions: Iterable[Action], answer: str | None) -> str:
    """`decision_text` from a decision's parts, before its event exists."""
    if raw is not None:
        return raw
    parts = [thought]
    parts.extend(a.render() for a in actions)
    if answer is not None:
        parts.append(answer)
    return "\n".join(parts)


@dataclass
class PendingApproval:
    step: int
    index: int
    tool: str
    args: dict
    reason: str
    thought: str


@dataclass
class PolicyUsage:
    """Tokens and dollars one policy spent in a run (the budget panel shows each and their sum)."""

    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


@dataclass
class RunState:
    header: Header
    status: Status = "ready"
    step: int = 0
    events: int = 0
    policy: str = ""
    budget: Budget = field(default_factory=Budget)
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_usage: bool = False
    cost: float = 0.0
    seconds: float = 0.0
    context_words: int = 0
    input_tokens_per_step: list[int] = field(default_factory=list)
    policy_usage: dict[str, PolicyUsage] = field(default_factory=dict)
    tool_calls: dict[str, int] = field(default_factory=dict)
    tool_last_error: dict[str, bool] = field(default_factory=dict)
    rules: list[RuleInfo] = field(default_factory=list)
    history: History = field(default_factory=History)
    """The steps as the policies see them: a sequence of `StepView` (`engine.core.history`)."""
    said_before: list[str] = field(default_factory=list)
    """What the user said after the task and before the first step (an imported run's further user messages)."""
    queue: list[tuple[int, Action]] = field(default_factory=list)
    pending: PendingApproval | None = None
    warned: set[str] = field(default_factory=set)
    exhausted: BudgetExhausted | None = None
    last_policy_error: str | None = None
    repeat_count: int = 0
    last_signature: Hashable | None = None
    """What the last step ran (the repetition brake compares a new proposal with it):
    its actions' keys (`args_key`) as executed, edited arguments included, rejected ones left out."""
    step_signatures: list[Hashable | None] = field(default_factory=list)
    ended: RunEnded | None = None

    def __post_init__(self) -> None:
        self.history = as_history(self.history)

    @classmethod
    def start(cls, header: Header) -> RunState:
        state = cls(header=header, policy=header.policy, budget=header.budget, rules=list(header.rules))
        state.context_words = len(header.task_text.split())
        return state

    def under(self, header: Header) -> RunState | None:
        """This state as the fold of the same events under `header` (a fork's own), when a
        fold starts the same there (`start` reads only these fields of a header); else None."""
        mine = self.header
        if (header.policy, header.budget, header.rules, header.task_text) != (mine.policy, mine.budget, mine.rules, mine.task_text):
            return None
        self.header = header
        return self

    def copy(self) -> RunState:
        """An independent copy, much faster than `copy.deepcopy`.

        Immutable parts (the header, frozen events, numbers, strings) are shared;
        containers are copied. Completed steps in `history` are shared too: the
        fold only ever changes the last step (its observations and edits), so
        only that one is copied. Fields not named in `_SHARED` / `_SHALLOW` are
        deep copied, so a new field stays correct here without an edit.
        """
        new = RunState.__new__(RunState)
        target = new.__dict__
        for name in _field_names():
            value = getattr(self, name)
            if name in _SHARED:
                target[name] = value
            elif name in _SHALLOW:
                target[name] = value.copy()  # the list's, dict's, set's or history's own (copy.copy looks it up)
            elif name == "policy_usage":
                target[name] = {policy: _copy.copy(usage) for policy, usage in value.items()}
            elif name == "pending":
                target[name] = None if value is None else _copy.deepcopy(value)
            else:
                target[name] = _copy.deepcopy(value)
        return new

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def context_tokens(self) -> int:
        return estimate_tokens(self.context_words)

    def used(self, kind: BudgetKind) -> float:
        if kind == "steps":
            return self.step
        if kind == "tokens":
            return self.input_tokens + self.output_tokens
        return self.cost if kind == "cost" else self.seconds

    def apply(self, event: Event, *, decision_words: int | None = None) -> None:
        """Fold one event in. `decision_words`: a decision's word count when the
        caller has already rendered its text (the engine), so it is not rendered twice."""
        self.events += 1
        if decision_words is not None and event.type == "decision":
            self._decision(event, decision_words)  # type: ignore[arg-type]
            return
        handler = _HANDLERS[event.type]
        handler(self, event)

    # -- handlers -------------------------------------------------------------

    def _decision(self, e: ev.DecisionMade, words: int | None = None) -> None:
        usage, actions = e.usage, e.actions
        input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
        self.step = e.step
        self.status = "ready"
        self.last_policy_error = None
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.estimated_usage = self.estimated_usage or usage.estimated
        cost = e.cost
        if cost is None:
            budget = self.budget
            cost = (input_tokens * budget.price_in_per_1k + output_tokens * budget.price_out_per_1k) / 1000
        self.cost += cost
        spent = self.policy_usage.get(e.policy)
        if spent is None:
            spent = self.policy_usage[e.policy] = PolicyUsage()
        spent.steps += 1
        spent.input_tokens += input_tokens
        spent.output_tokens += output_tokens
        spent.cost += cost
        self.seconds += e.duration
        self.input_tokens_per_step.append(input_tokens)
        self.context_words += decision_words(e) if words is None else words
        self.history.add(step_of(e), self.events - 1)
        self.queue = list(enumerate(actions)) if e.answer is None else []
        keys: list[Hashable | None] = [args_key(a.tool, a.args) for a in actions]
        signature = tuple(keys) if keys else None
        if signature is not None and signature == self.last_signature:
            self.repeat_count += 1
        else:
            self.repeat_count = 1 if signature is not None else 0
        self.step_signatures = keys
        self.last_signature = signature

    def _operator_changed(self, index: int, signature: Hashable | None) -> None:
        """An edit or a rejection: the step ran something else than was proposed (or nothing)."""
        if 0 <= index < len(self.step_signatures):
            self.step_signatures[index] = signature
            self.last_signature = tuple(s for s in self.step_signatures if s is not None) or None

    def _approval_requested(self, e: ev.ApprovalRequested) -> None:
        thought = self.history[-1].thought if self.history else ""
        self.pending = PendingApproval(e.step, e.index, e.tool, dict(e.args), e.reason, thought)
        self.status = "awaiting_approval"

    def _approval_decided(self, e: ev.ApprovalDecided) -> None:
        pending = self.pending
        if pending is not None and e.choice == "modify" and e.args is not None:
            self._operator_changed(e.index, args_key(pending.tool, e.args))
        elif e.choice in ("reject", "abort"):
            self._operator_changed(e.index, None)
        self.pending = None
        self.status = "ready"
        if e.rule is not None and _approves_always(e, pending):
            self.rules.append(e.rule)
        if self.history:
            current = self.history[-1]
            if e.choice == "modify" and e.args is not None:
                current.edits.append(f"arguments edited by the operator: {e.args}")
            elif e.choice == "approve_always" and e.rule is not None and pending is not None:
                current.edits.append(f"approved always for {pending.tool}")

    def _observation(self, e: ev.Observed) -> None:
        if self.queue and self.queue[0][0] == e.index:
            self.queue.pop(0)
        elif any(i == e.index for i, _ in self.queue):  # a result that came back out of order (gateway)
            self.queue = [(i, a) for i, a in self.queue if i != e.index]
        if e.executed and e.tool is not None:
            self.tool_calls[e.tool] = self.tool_calls.get(e.tool, 0) + 1
            self.tool_last_error[e.tool] = e.error
        self.seconds += e.duration
        self.context_words += added_words(e)
        current = self.history.last
        if current is not None:
            current.observations.append(observation_of(current, e))

    def _policy_swapped(self, e: ev.PolicySwapped) -> None:
        self.policy = e.new

    def _policy_error(self, e: ev.PolicyFailed) -> None:
        self.status = "policy_failed"
        self.last_policy_error = e.message

    def _budget_warning(self, e: ev.BudgetWarning) -> None:
        self.warned.add(e.kind)

    def _budget_exhausted(self, e: BudgetExhausted) -> None:
        self.exhausted = e
        self.status = "awaiting_budget"

    def _budget_extended(self, e: ev.BudgetExtended) -> None:
        self.budget = self.budget.with_limit(e.kind, e.limit)
        self.exhausted = None
        self.warned.discard(e.kind)
        self.status = "ready"

    def _note(self, e: ev.Note) -> None:
        self.context_words += added_words(e)
        if e.kind == "user":  # a later user turn of an imported run: a fork's model sees it
            (self.history[-1].said if self.history else self.said_before).append(e.text)

    def _run_ended(self, e: RunEnded) -> None:
        self.ended = e
        self.pending = None
        self.queue = []
        self.status = "ended"


def _approves_always(e: ev.ApprovalDecided, pending: PendingApproval | None) -> bool:
    """Whether `e` is an "approve always" of the approval pending now, with the one rule the
    engine makes for it (`always_rule`: allow exactly that tool, any arguments). A transcript is
    untrusted: a line that answers nothing, or carries a wider rule (`*`, another tool), allows nothing."""
    return (
        e.rule is not None
        and pending is not None
        and e.choice == "approve_always"
        and (e.step, e.index) == (pending.step, pending.index)
        and (e.rule.tool, e.rule.effect, e.rule.args) == (always_rule(pending.tool).tool, "allow", {})
    )


_HANDLERS = {
    "decision": RunState._decision,
    "approval_requested": RunState._approval_requested,
    "approval_decided": RunState._approval_decided,
    "observation": RunState._observation,
    "policy_swapped": RunState._policy_swapped,
    "policy_error": RunState._policy_error,
    "budget_warning": RunState._budget_warning,
    "budget_exhausted": RunState._budget_exhausted,
    "budget_extended": RunState._budget_extended,
    "note": RunState._note,
    "run_ended": RunState._run_ended,
}


_SHARED = frozenset({"header", "budget", "exhausted", "ended", "status", "step", "events", "policy",
                     "input_tokens", "output_tokens", "estimated_usage", "cost", "seconds", "context_words",
                     "last_policy_error", "repeat_count", "last_signature"})
_SHALLOW = frozenset({"history", "input_tokens_per_step", "tool_calls", "tool_last_error", "rules", "queue", "warned",
                      "step_signatures", "said_before"})
_FIELD_NAMES: tuple[str, ...] = ()


def _field_names() -> tuple[str, ...]:
    global _FIELD_NAMES
    if not _FIELD_NAMES:
        _FIELD_NAMES = tuple(f.name for f in fields(RunState))
    return _FIELD_NAMES


def fold(header: Header, events: Iterable[Event]) -> RunState:
    """The state after `events` (no garbage collection while folding: see `collector_paused`)."""
    state = RunState.start(header)
    with collector_paused():
        for event in events:
            state.apply(event)
    return state
