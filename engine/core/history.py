"""A run's steps as its policies see them (`RunState.history`, `RunView.history`).

The fold makes a `StepView` of each decision, and only the last step changes after
it (its observations, its edits, what the user said next). As objects a long run's
steps cost about 1.3 KB each (65 MB for 100,000 events) and keep alive the parts of
the parsed events they were made from, which pin the memory of every freed event
around them. Told where the run's events can be read again (`read_from`: the
engine's event log), a history keeps its last steps as objects (`HOT` to twice
as many) and of each older step only where its events stand: such a step is made
again, as the fold made it, from its decision and observations when it is read
(its edits and what the user said, which the fold writes, are kept as they were).
A history not told where its events are (a replay's fold, the tail's) keeps every
step as an object, as a list does.

Reads and appends may come from different threads (the cockpit reads what the
engine's worker folds): the hot steps and how many steps went cold change together,
as one tuple.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from sys import intern

from engine.core import events as ev
from engine.core.eventlog import Indexed
from engine.core.events import Event
from engine.core.policy import ObservationView, StepView

HOT = 2048
"""Steps kept as objects at least (at most twice as many) once a history reads its old steps back."""


def step_of(e: ev.DecisionMade) -> StepView:
    """The step a decision begins."""
    return StepView(e.step, intern(e.policy), e.thought, list(e.actions), e.answer, e.parse_error, e.raw)  # one policy string for all steps


def observation_of(current: StepView, e: ev.Observed) -> ObservationView:
    """What `current`, the last step, records of observation `e`."""
    tool = None if e.tool is None else intern(e.tool)
    args = e.args
    if 0 <= e.index < len(current.actions) and current.actions[e.index].args == args:
        args = current.actions[e.index].args  # the call as proposed: one dict for both (a replay holds every step)
    else:
        args = dict(args)
    return ObservationView(tool, args, e.text, e.error, e.executed)


class History(Indexed[StepView]):
    """The steps of a run, in order: a sequence of `StepView` (see the module)."""

    __slots__ = ("_split", "_at", "_kept", "_read")

    def __init__(self, steps: Iterable[StepView] = ()) -> None:
        hot = list(steps)
        self._split: tuple[int, list[StepView]] = (0, hot)
        """How many steps are cold (read back when asked), and the steps after them as objects."""
        self._at = array("q", [-1] * len(hot))
        """The position of each step's decision among the run's events (-1: not known)."""
        self._kept: dict[int, tuple[list[str], list[str]]] = {}
        """The edits and what the user said of each cold step that has any."""
        self._read: Callable[[int], Event] | None = None

    # -- what the fold does -------------------------------------------------

    def add(self, step: StepView, position: int) -> None:
        """A new last step, whose decision is event `position` of the run."""
        cold, hot = self._split
        hot.append(step)
        self._at.append(position)
        if self._read is not None and len(hot) >= 2 * HOT:
            self._cool()

    def append(self, step: StepView) -> None:
        """A new last step whose decision's position is not known (it stays an object)."""
        self.add(step, -1)

    def read_from(self, read: Callable[[int], Event]) -> None:
        """Read old steps back with `read(position)`, the run's event at that position (the
        positions the fold gave `add`); steps beyond the last `HOT` go cold now and as the run grows."""
        self._read = read
        if len(self._split[1]) > HOT:
            self._cool()

    def _cool(self) -> None:
        """Every step but the last `HOT` goes cold, up to the first whose events are not known."""
        cold, hot = self._split
        at, stop = self._at, len(hot) - HOT
        drop = 0
        while drop < stop and at[cold + drop] >= 0 and at[cold + drop + 1] >= 0:
            step = hot[drop]
            if step.edits or step.said:
                self._kept[cold + drop] = (list(step.edits), list(step.said))
            drop += 1
        if drop:
            self._split = (cold + drop, hot[drop:])

    def _made(self, number: int) -> StepView:
        """Cold step `number` made again from its events, as the fold made it."""
        read = self._read
        assert read is not None  # a step goes cold only once its events can be read
        start, end = self._at[number], self._at[number + 1]
        step = step_of(read(start))  # type: ignore[arg-type]
        for position in range(start + 1, end):
            event = read(position)
            if event.type == "observation":
                step.observations.append(observation_of(step, event))  # type: ignore[arg-type]
        kept = self._kept.get(number)
        if kept is not None:
            step.edits, step.said = list(kept[0]), list(kept[1])
        return step

    # -- copies ---------------------------------------------------------------

    def copy(self) -> History:
        """An independent copy: the last step copied (the only one a fold changes), the others shared."""
        cold, hot = self._split
        return self._like(cold, hot[:-1] + [hot[-1].copy()] if hot else [], len(self._at))

    def upto(self, count: int, last: StepView) -> History:
        """The first `count` steps, `last` standing for the last of them (a replay's checkpoint)."""
        cold, hot = self._split
        keep = count - 1
        cold_kept = min(cold, keep)
        return self._like(cold_kept, hot[: keep - cold_kept] + [last], count)

    def _like(self, cold: int, hot: list[StepView], count: int) -> History:
        new = History.__new__(History)
        new._split = (cold, hot)
        new._at = self._at[:count]
        new._kept = {k: v for k, v in self._kept.items() if k < cold} if len(self._kept) else {}
        new._read = self._read
        return new

    # -- the sequence ---------------------------------------------------------

    def __len__(self) -> int:
        cold, hot = self._split
        return cold + len(hot)

    def _get(self, index: int) -> StepView:
        cold, hot = self._split  # a step's index stays its own whether it is cold or hot
        return hot[index - cold] if index >= cold else self._made(index)

    def __iter__(self) -> Iterator[StepView]:
        cold, hot = self._split
        for number in range(cold):
            yield self._made(number)
        yield from hot

    def __bool__(self) -> bool:
        cold, hot = self._split
        return bool(cold or hot)

    def __repr__(self) -> str:
        cold, hot = self._split
        return f"History({cold + len(hot)} steps, {cold} read back when asked)"

    @property
    def last(self) -> StepView | None:
        """The last step, the one a fold changes (None before the first)."""
        hot = self._split[1]
        return hot[-1] if hot else None

    @property
    def cold(self) -> int:
        """How many of the first steps are read back from the run's events when asked."""
        return self._split[0]


def as_history(steps: Sequence[StepView]) -> History:
    """`steps` as a `History` (a list given to `RunState`)."""
    return steps if isinstance(steps, History) else History(steps)
