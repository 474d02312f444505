"""The replay viewer: keys move through the run, the panes show the state there."""

from __future__ import annotations

import pytest

from engine.stored.replay import Timeline
from engine.core.state import fold
from tui.replay_app import ReplayApp, _fork_from
from tui.widgets.gauges import BudgetGauges
from tui.widgets.grid_map import GridMap
from tui.widgets.timeline import TimelineBar
from tui.widgets.tools import ToolPanel
from tui.widgets.transcript import TranscriptPane
from tests.support.runs import saved_run

pytestmark = pytest.mark.anyio


def pane_text(app) -> str:
    pane = app.query_one(TranscriptPane)
    return "\n".join(pane.render_line(y).text for y in range(pane.size.height))


async def test_keys_move_by_event_step_marker_and_end(tmp_path):
    path, run = saved_run(tmp_path)
    timeline = Timeline.open(path)
    total = len(run.engine.events)
    app = ReplayApp(timeline)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        assert app.position == 0
        await pilot.press("right", "right")
        assert app.position == 2
        assert app.state.step == 1 and app.state.tool_calls == {"get_order_status": 1}
        await pilot.press("left")
        assert app.position == 1 and app.state.tool_calls == {}
        await pilot.press("shift+right")
        assert app.position == timeline.next_step(1)
        await pilot.press("end")
        assert app.position == total and app.state.ended is not None
        await pilot.press("home")
        assert app.position == 0
        await pilot.press("right_square_bracket")
        marker = timeline.markers()[0]
        assert marker.kind == "approval" and app.position == marker.position
        assert app.query_one(ToolPanel).rows()[2].pending  # open_return_request highlighted
        await pilot.press("shift+left")
        assert app.position == timeline.prev_step(marker.position)


async def test_a_marker_key_with_no_marker_that_way_says_so(tmp_path):
    path, _ = saved_run(tmp_path)
    app = ReplayApp(Timeline.open(path))
    notes: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.notify = lambda message, **kwargs: notes.append(str(message))  # type: ignore[method-assign]
        await pilot.press("left_square_bracket")
        assert app.position == 0 and notes == ["No marker before this point."]
        await pilot.press("end", "right_square_bracket")
        assert app.position == len(app.timeline) and notes[1:] == ["No marker after this point."]


async def test_every_position_shows_the_fold_of_its_events(tmp_path):
    path, run = saved_run(tmp_path, reject=True)
    app = ReplayApp(Timeline.open(path))
    async with app.run_test(size=(120, 40)) as pilot:
        for position in range(len(run.engine.events) + 1):
            app.seek(position)
            await pilot.pause()
            expected = fold(run.engine.header, run.engine.events[:position])
            assert app.state.step == expected.step
            assert app.state.tool_calls == expected.tool_calls
            assert app.query_one(TranscriptPane).event_count == position
            steps = app.query_one(BudgetGauges).gauge("steps")
            assert steps.used == expected.step


async def test_stepping_back_then_forward_returns_the_same_screen(tmp_path):
    path, _ = saved_run(tmp_path)
    app = ReplayApp(Timeline.open(path), at=5)
    async with app.run_test(size=(120, 40)) as pilot:
        before = pane_text(app)
        await pilot.press("left", "left", "left", "right", "right", "right")
        assert app.position == 5
        assert pane_text(app) == before


async def test_go_to_step_asks_on_the_status_line_of_the_same_screen(tmp_path):
    """g asks for the step on the timeline's status line, not on a screen of its own, and moves
    no focus: the screen is not dimmed, laid out or drawn again whole for the question."""
    path, _ = saved_run(tmp_path, scenario="library", task=None, policy="good")
    timeline = Timeline.open(path)
    app = ReplayApp(timeline)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        main = app.screen
        bar = app.query_one(TimelineBar)
        await pilot.press("g", "1")
        assert app.screen is main and len(app.screen_stack) == 1 and app.focused is None
        assert app.ask_line.asking
        assert bar.render().plain.splitlines()[2].startswith(f"Go to step (0-{timeline.steps()}): 1")
        await pilot.press("q", "[", "b", "o", "l", "d", "]")  # typed into the answer as text: nothing quits
        assert app.is_running and "1q[bold]" in bar.render().plain
        await pilot.press(*["backspace"] * 7, "enter")
        assert app.screen is main and app.position == timeline.position_after_step(1)
        assert not app.ask_line.asking and bar.render().plain.splitlines()[2].startswith("event ")


async def test_goto_step_search_and_play(tmp_path):
    path, run = saved_run(tmp_path, scenario="library", task=None, policy="good")
    timeline = Timeline.open(path)
    app = ReplayApp(timeline)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("g")
        await pilot.press("9", "enter")  # out of range: refused, the question stays
        ask = app.ask_line
        assert ask.asking
        assert "a step number from 0 to" in app.query_one(TimelineBar).render().plain
        await pilot.press("backspace", "2", "enter")
        assert not ask.asking
        assert app.position == timeline.position_after_step(2)
        assert app.state.step == 2
        await pilot.press("g", "1", "escape")  # cancelled: nothing moves
        assert not ask.asking and app.position == timeline.position_after_step(2)
        await pilot.press("slash", *"calc")  # asked on the status line too
        assert app.ask_line.asking and len(app.screen_stack) == 1
        await pilot.press("enter")
        assert "calc" in pane_text(app)
        assert app.state.history[-1].actions[0].tool == "calc"
        await pilot.press("home", "minus", "space")  # half speed: one event a second
        assert app.player is not None
        await pilot.press("plus", "plus", "plus")  # x4: eight events a second
        assert app.player is not None
        shown = {b.binding.action for b in app.screen.active_bindings.values() if b.binding.show}
        assert "pause" in shown and "play" not in shown, "the footer says what space does now"
        for _ in range(100):  # the player's timer runs on a loaded machine too: wait up to 10 s for a move
            if app.position > 0:
                break
            await pilot.pause(0.1)
        await pilot.press("space")
        assert app.player is None
        assert 0 < app.position
        shown = {b.binding.action for b in app.screen.active_bindings.values() if b.binding.show}
        assert "play" in shown and "pause" not in shown


async def test_grid_replay_draws_the_map_at_each_position(tmp_path):
    path, run = saved_run(tmp_path, scenario="grid", task="3", policy="memory")
    app = ReplayApp(Timeline.open(path))
    async with app.run_test(size=(130, 45)) as pilot:
        grid_map = app.query_one(GridMap)
        assert grid_map.at == (0, 0)
        await pilot.press("end")
        assert grid_map.at == grid_map.goal
        await pilot.press("home", "shift+right", "shift+right", "shift+right")
        assert len(grid_map.cells) == 3  # start + two moves (step 1 looks)


async def test_fork_from_the_viewer_runs_nothing_before_the_point(tmp_path):
    path, run = saved_run(tmp_path, scenario="library", task=None, policy="hallucinating")
    timeline = Timeline.open(path)
    app = ReplayApp(timeline, at=timeline.position_after_step(1), fork=_fork_from, policy_names=["good", "stuck", "human"])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f")
        await pilot.press("enter")  # the first policy: good
        await pilot.pause()
    forked = app.return_value
    assert forked is not None and forked.engine.header.parent == str(path.resolve())
    assert forked.engine.state.step == 1
    forked.engine.run()
    assert forked.engine.state.ended.answer == "2"
    forked.close()


async def test_markers_show_on_the_timeline_bar(tmp_path):
    path, _ = saved_run(tmp_path, reject=True)
    timeline = Timeline.open(path)
    app = ReplayApp(timeline)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        bar = app.query_one(TimelineBar)
        first_line = bar.render().plain.splitlines()[0]
        assert "A" in first_line and "R" in first_line and "■" in first_line


def test_fork_of_an_ended_step_is_refused_with_a_message(tmp_path):
    path, run = saved_run(tmp_path, scenario="library", task=None, policy="good")
    timeline = Timeline.open(path)
    with pytest.raises(Exception, match="ended"):
        _fork_from(timeline, len(timeline), "good")


async def test_fork_between_the_final_answer_and_the_end_forks_before_the_answer(tmp_path):
    """One event back from the end is the step that answered: `f` there must not
    start a run that answers twice (the engine refuses that point, as the CLI
    refuses that step); it forks from the end of the step before instead."""
    path, run = saved_run(tmp_path, scenario="library", task=None, policy="good")
    timeline = Timeline.open(path)
    answered = len(timeline) - 1  # after the answer's decision, before run_ended
    assert fold(timeline.header, timeline.events(0, answered)).history[-1].answer == "2"
    app = ReplayApp(timeline, at=answered, fork=_fork_from, policy_names=["good", "stuck", "human"])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f")
        await pilot.press("enter")
        await pilot.pause()
    forked = app.return_value
    assert forked is not None and not forked.engine.state.history[-1].answer
    assert forked.engine.state.step == timeline.steps() - 1
    forked.close()
    with pytest.raises(Exception, match="final answer"):
        _fork_from(timeline, answered, "good")


async def test_timeline_keys_work_after_the_terminal_was_too_small(tmp_path):
    """Opened in a 40x12 terminal and then enlarged, home and end still move the timeline
    (the transcript pane must not have kept the focus and its own home/end scrolling)."""
    path, run = saved_run(tmp_path)
    app = ReplayApp(Timeline.open(path))
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        await pilot.press("right", "end")
        assert app.position == len(run.engine.events)
        await pilot.press("home")
        assert app.position == 0
