"""The pane over a lazily read base (`Prefix`), and its bulk counting: exactly the lines of a list."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
from textual.app import App, ComposeResult

from engine.core.events import Action, DecisionMade, Header, Observed
from tui.widgets.transcript import FigureColumns, Prefix, TranscriptPane

pytestmark = pytest.mark.anyio

HEADER = Header(scenario="s", task="t", task_text="Do the thing.", policy="p")


def make_events(count: int) -> list:
    """Short events, long unwrapped ones (folded), paragraphs wider than the column, step numbers growing past 3 digits."""
    events = []
    step = 990
    while len(events) < count:
        step += 1
        events.append(DecisionMade(step=step, policy="p", thought=f"Step {step}.", actions=[Action(tool="look", args={"n": step})]))
        if step % 3 == 0:
            text = "\n".join(f"line {i}" for i in range(12))  # folded, nothing wraps
        elif step % 3 == 1:
            text = "word " * 60 + "\n" + "short"  # wraps at any pane width here
        else:
            text = "ok"
        events.append(Observed(step=step, index=0, tool="look", text=text, executed=True))
    return events[:count]


class Base:
    """A base read by index, with or without the figure columns."""

    def __init__(self, events, columns: bool) -> None:
        self.events = events
        self.reads = 0
        self.figures: FigureColumns | None = None
        if columns:
            self.figures = FigureColumns()
            for index, event in enumerate(events):
                self.figures.note(index, event)

    def __len__(self) -> int:
        return len(self.events)

    def __getitem__(self, index: int):
        self.reads += 1
        return self.events[index]


class Two(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="a")
        yield TranscriptPane(id="b")

    CSS = "TranscriptPane { height: 1fr; }"


def lines(pane: TranscriptPane) -> list[str]:
    return [pane._row(y).strip.text if pane._row(y) else "" for y in range(pane._total_rows())]


@pytest.mark.parametrize("columns", [False, True])
async def test_a_prefix_shows_exactly_the_lines_of_the_list(columns):
    events = make_events(120)
    base = Base(events, columns)
    app = Two()
    async with app.run_test(size=(70, 40)) as pilot:
        listed, lazy = app.query_one("#a", TranscriptPane), app.query_one("#b", TranscriptPane)
        for stop in (120, 7, 60, 120, 0, 33):
            listed.reset(HEADER, events[:stop])
            lazy.reset(HEADER, Prefix(base, stop, base.figures))
            await pilot.pause()
            assert lazy.event_count == stop
            assert lines(lazy) == lines(listed)
        listed.action_toggle_folds()
        lazy.action_toggle_folds()
        assert lines(lazy) == lines(listed)
        await pilot.resize_terminal(50, 40)
        await pilot.pause()
        assert lines(lazy) == lines(listed)
        if columns:
            base.reads = 0
            lazy.reset(HEADER, Prefix(base, 5, base.figures))
            lazy.reset(HEADER, Prefix(base, 120, base.figures))
            # counted from the columns: only events wider than the column are read (to wrap them)
            assert base.reads < 120


async def test_a_list_after_a_prefix_and_a_longer_prefix():
    events = make_events(40)
    app = Two()
    async with app.run_test(size=(70, 40)) as pilot:
        listed, lazy = app.query_one("#a", TranscriptPane), app.query_one("#b", TranscriptPane)
        base = Base(events, True)
        lazy.reset(HEADER, Prefix(base, 30, base.figures))
        lazy.reset(HEADER, Prefix(base, 31, base.figures))
        listed.reset(HEADER, events[:31])
        await pilot.pause()
        assert lines(lazy) == lines(listed)
        lazy.reset(HEADER, events[:20])
        listed.reset(HEADER, events[:20])
        assert lines(lazy) == lines(listed)


async def test_expanding_one_fold_counts_the_same():
    events = make_events(30)
    app = Two()
    async with app.run_test(size=(70, 40)) as pilot:
        listed, lazy = app.query_one("#a", TranscriptPane), app.query_one("#b", TranscriptPane)
        for pane in (listed, lazy):
            pane.index.expanded.add(5)  # step 993: 12 lines, folded by default
        listed.reset(HEADER, events)
        base = Base(events, True)
        lazy.reset(HEADER, Prefix(base, 30, base.figures))
        await pilot.pause()
        assert lines(lazy) == lines(listed)
        assert any("line 11" in line for line in lines(lazy))


@asynccontextmanager
async def two_panes():
    """(pilot, a pane shown lists grown a few events at a time, a pane under test)."""
    app = Two()
    async with app.run_test(size=(70, 40)) as pilot:
        yield pilot, app.query_one("#a", TranscriptPane), app.query_one("#b", TranscriptPane)


def grown(pane: TranscriptPane, events: list, by: int = 200) -> None:
    """Show `events` a few at a time, as a live run appends them: every event figured."""
    for stop in range(by, len(events) + by, by):
        pane.reset(HEADER, events[:stop])


async def filled(pilot, pane: TranscriptPane) -> None:
    """Until the pane has figured every event it estimated (bounded)."""
    for _ in range(400):
        if not pane.index.estimated:
            return
        await pilot.pause(0.02)
    raise AssertionError(f"{pane.index.estimated} events still estimated")


async def test_a_long_run_is_drawn_from_its_tail_and_figured_as_it_comes_on_screen():
    events = make_events(3000)
    base = Base(events, False)
    async with two_panes() as (pilot, listed, lazy):
        grown(listed, events)
        lazy.reset(HEADER, Prefix(base, len(events)))
        # the first frame reads the events it shows, not every event of the run
        assert base.reads < 600
        assert lazy.index.estimated > 0
        await pilot.pause()
        assert lazy.follow and listed.follow
        height = lazy.scrollable_content_region.height
        end, listed_end = lazy.scroll_offset.y, listed.scroll_offset.y
        assert [lazy._row(end + y).strip.text for y in range(height)] == [listed._row(listed_end + y).strip.text for y in range(height)]
        lazy.scroll_home(animate=False, immediate=True)
        listed.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        assert [lazy._row(y).strip.text for y in range(height)] == [listed._row(y).strip.text for y in range(height)]
        await filled(pilot, lazy)
        assert lazy._total_rows() == listed._total_rows()
        assert lines(lazy) == lines(listed)


async def test_an_estimated_event_in_view_keeps_its_place_when_it_is_figured():
    events = make_events(3000)
    async with two_panes() as (pilot, listed, lazy):
        grown(listed, events)
        lazy.reset(HEADER, events)
        await pilot.pause()
        middle = lazy._total_rows() // 2
        lazy.scroll_to(y=middle, animate=False, immediate=True)
        await pilot.pause()
        part, index, offset = lazy._locate(lazy.scroll_offset.y)
        assert part == "event" and not lazy.follow
        top = lazy._row(lazy.scroll_offset.y).strip.text
        await filled(pilot, lazy)
        assert lazy._locate(lazy.scroll_offset.y) == (part, index, offset)
        assert lazy._row(lazy.scroll_offset.y).strip.text == top
        assert lines(lazy) == lines(listed)
