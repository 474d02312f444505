"""Policies: whatever proposes the next thought and action.

A policy has a `name` and one method, `decide(view) -> Decision`. The view is
the run as the policy may see it: the task, the tools, and the history of
thoughts, actions and observations (including operator rejections, which
reach the policy as observations).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from engine.core.events import Action, Usage
from engine.core.tools import Tool


class PolicyError(Exception):
    """A policy could not decide (a model endpoint failed, a script broke).

    The engine records it as a `policy_error` event; `retryable` tells the
    operator whether trying the same step again may help.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class AwaitingInput(Exception):
    """The human policy has no decision queued: the operator must type one."""


@dataclass
class Decision:
    """What a policy returns.

    Either structured (`actions` or `answer`) or `text` in the seeds' format,
    which the engine parses; a parse failure becomes an observation.
    """

    thought: str = ""
    actions: list[Action] = field(default_factory=list)
    answer: str | None = None
    text: str | None = None
    usage: Usage | None = None
    cost: float | None = None
    """The decision's cost in dollars as the policy reports it (an ACP agent's `usage_update`);
    None: priced from the usage by the run's price table."""

    @classmethod
    def act(cls, thought: str, tool: str, /, **args: Any) -> Decision:
        return cls(thought=thought, actions=[Action(tool=tool, args=args)])

    @classmethod
    def final(cls, thought: str, answer: str) -> Decision:
        return cls(thought=thought, answer=answer)

    @classmethod
    def from_text(cls, text: str) -> Decision:
        return cls(text=text)


@dataclass(frozen=True, slots=True, init=False)
class ObservationView:
    tool: str | None
    args: dict[str, Any]
    text: str
    error: bool
    executed: bool

    def __init__(self, tool: str | None, args: dict[str, Any], text: str, error: bool, executed: bool) -> None:
        # Each slot set through its own descriptor: the `__init__` a frozen dataclass is given
        # goes through `object.__setattr__` field by field, and the fold makes one a call.
        set_tool, set_args, set_text, set_error, set_executed = _OBSERVATION_SLOTS
        set_tool(self, tool)
        set_args(self, args)
        set_text(self, text)
        set_error(self, error)
        set_executed(self, executed)


_OBSERVATION_SLOTS = tuple(ObservationView.__dict__[name].__set__ for name in ("tool", "args", "text", "error", "executed"))


@dataclass(slots=True)
class StepView:
    step: int
    policy: str
    thought: str
    actions: list[Action]
    answer: str | None
    parse_error: str | None
    raw: str | None
    observations: list[ObservationView] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    """What the user said after this step (an imported multi-turn run's later user messages)."""

    def copy(self) -> StepView:
        """A copy whose lists can grow without touching this one's."""
        return replace(self, actions=list(self.actions), observations=list(self.observations), edits=list(self.edits),
                       said=list(self.said))


@dataclass
class RunView:
    """The run as a policy sees it."""

    task: str
    tools: Sequence[Tool]
    history: Sequence[StepView]
    step: int
    stream: Callable[[str], None] = lambda _delta: None
    time_left: float | None = None
    """Seconds left in the run's time budget (None: no limit); a policy that waits
    on something (a model server) gives up when they run out."""

    def observations(self) -> list[ObservationView]:
        return [o for s in self.history for o in s.observations]

    def valid_observations(self) -> list[str]:
        return [o.text for o in self.observations() if not o.error]

    def text(self) -> str:
        """The run so far in the seeds' text format, starting with the question."""
        lines = [f"Question: {self.task}"]
        for s in self.history:
            if s.thought:
                lines.append(f"Thought: {s.thought}")
            if s.raw and s.parse_error:
                lines.append(s.raw)
            for a in s.actions:
                lines.append(f"Action: {a.render()}")
            for o in s.observations:
                lines.append(f"Observation: {o.text}")
            if s.answer is not None:
                lines.append(f"Final Answer: {s.answer}")
        return "\n".join(lines)


@runtime_checkable
class Policy(Protocol):
    name: str

    def decide(self, view: RunView) -> Decision: ...


@runtime_checkable
class Cancellable(Protocol):
    """A policy whose call in flight can be dropped from another thread (a model request).

    Optional: the cockpit's second escape cancels a policy that is one, and
    waits for any other.
    """

    def cancel(self) -> None: ...


class ScriptedPolicy:
    """A policy from a plain function of the view (the seeds' hand-written policies)."""

    def __init__(self, name: str, fn: Callable[[RunView], Decision | str]) -> None:
        self.name = name
        self._fn = fn

    def decide(self, view: RunView) -> Decision:
        out = self._fn(view)
        return Decision.from_text(out) if isinstance(out, str) else out


class HumanPolicy:
    """The operator: decisions are supplied from outside and taken in order."""

    name = "human"

    def __init__(self) -> None:
        self._queue: deque[Decision] = deque()

    def supply(self, decision: Decision) -> None:
        self._queue.append(decision)

    @property
    def needs_input(self) -> bool:
        return not self._queue

    def decide(self, view: RunView) -> Decision:
        if not self._queue:
            raise AwaitingInput("the human policy is waiting for the operator's next action")
        return self._queue.popleft()


PolicyFactory = Callable[[], Policy]
