"""`f` in the replay viewer where a fork here could do nothing (the end of the run, a
final answer, a decision the run ended on before it ran): it forks from the nearest
point before that a fork can continue, and its dialog says so; the viewer also
scrolls its transcript from the keyboard and says why a run cannot be forked."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from engine.sessions.run import new_run
from engine.stored.replay import Timeline
from tests.support.runs import saved_run
from tui.replay_app import ReplayApp, _fork_from
from tui.replay_fork import fork_target
from tui.screens.dialogs import PolicyPicker
from tui.widgets.transcript import TranscriptPane

pytestmark = pytest.mark.anyio


def saved(tmp_path: Path, scenario: str, task: str | None, policy: str | None = None) -> Path:
    return saved_run(tmp_path, scenario=scenario, task=task, policy=policy)[0]


def aborted_at_the_approval(tmp_path: Path) -> Path:
    path = tmp_path / "aborted.jsonl"
    run = new_run(scenarios.get("support"), "return-1187", None, out=path)
    run.engine.run()
    run.engine.abort()
    run.close()
    return path


def picker_title(app) -> str:
    screen = app.screen
    assert isinstance(screen, PolicyPicker), type(screen)
    return screen.title_text


async def test_f_at_the_end_of_an_answered_run_forks_from_the_step_before_the_answer(tmp_path: Path) -> None:
    path = saved(tmp_path, "library", None, "good")
    timeline = Timeline.open(path)
    steps = timeline.steps()
    app = ReplayApp(timeline, fork=_fork_from, policy_names=["good", "stuck", "human"])
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("end")
        await pilot.pause()
        assert app.check_action("fork", ()) is True  # offered, and it does something
        await pilot.press("f")
        await pilot.pause()
        title = picker_title(app)
        assert f"Step {steps} is the final answer" in title and f"end of step {steps - 1}" in title, title
        assert app.position == timeline.position_after_step(steps - 1), "the view shows what the fork keeps"
        await pilot.press("enter")  # the first policy: good
        await pilot.pause()
    forked = app.return_value
    assert forked is not None, "f at the end starts a fork"
    assert forked.engine.state.step == steps - 1 and forked.engine.state.ended is None
    forked.engine.run()
    assert forked.engine.state.ended.answer == "2"
    forked.close()


async def test_escape_in_the_fork_dialog_goes_back_to_where_the_viewer_was(tmp_path: Path) -> None:
    timeline = Timeline.open(saved(tmp_path, "library", None, "good"))
    app = ReplayApp(timeline, fork=_fork_from, policy_names=["good", "human"])
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("end", "f")
        await pilot.pause()
        assert app.position < len(timeline)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, PolicyPicker)
        assert app.position == len(timeline) and app.is_running
    assert app.return_value is None


async def test_f_mid_run_forks_right_there(tmp_path: Path) -> None:
    timeline = Timeline.open(saved(tmp_path, "library", None, "hallucinating"))
    here = timeline.position_after_step(1) + 1  # inside step 2, after its decision
    app = ReplayApp(timeline, at=here, fork=_fork_from, policy_names=["good", "human"])
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("f")
        await pilot.pause()
        assert picker_title(app) == f"Fork here (step 2, event {here}) with"
        assert app.position == here


def test_where_f_forks_from_when_the_run_ended_on_a_decision_or_by_an_abort(tmp_path: Path) -> None:
    braked = Timeline.open(saved(tmp_path, "support", "courier-1042"))  # stopped for repetition at step 2
    end = len(braked)
    target, title = fork_target(braked, end, braked.state_at(end))
    assert target == braked.position_after_step(1), title
    assert title.startswith("The run ended here (stopped)") and "end of step 1" in title
    target, title = fork_target(braked, end - 1, braked.state_at(end - 1))
    assert target == braked.position_after_step(1)
    assert "right after step 2's decision, before its action ran" in title

    aborted = Timeline.open(aborted_at_the_approval(tmp_path))  # aborted at the approval
    end = len(aborted)
    target, title = fork_target(aborted, end, aborted.state_at(end))
    assert target == end - 1 and aborted.state_at(target).queue, "the call the operator aborted is asked again"
    assert title == "The run ended here (aborted): fork from just before its end with"


async def test_f_on_a_run_whose_scenario_is_missing_says_why(tmp_path: Path) -> None:
    timeline = Timeline.open(saved(tmp_path, "library", None, "good"))
    app = ReplayApp(timeline)  # no fork: the scenario could not be loaded
    notes: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        app.notify = lambda message, **kwargs: notes.append(str(message))  # type: ignore[method-assign]
        await pilot.press("f")
        await pilot.pause()
        assert not isinstance(app.screen, PolicyPicker)
    assert notes and "cannot be forked" in notes[0] and "'library'" in notes[0], notes


async def test_up_down_and_page_keys_scroll_the_transcript(tmp_path: Path) -> None:
    """The pane cannot take the focus (its arrows would shadow the timeline's), so the
    viewer scrolls it: a step taller than the pane could not be read from its top."""
    timeline = Timeline.open(saved(tmp_path, "research", None))
    app = ReplayApp(timeline)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("end", "o")
        await pilot.pause()
        pane = app.query_one(TranscriptPane)
        assert pane.max_scroll_y > pane.size.height, "the run is taller than two pages"
        bottom = pane.scroll_y
        assert bottom == pane.max_scroll_y
        await pilot.press("up")
        await pilot.pause()
        assert pane.scroll_y == bottom - 1
        await pilot.press("pageup")
        await pilot.pause()
        assert pane.scroll_y < bottom - pane.size.height + 2
        await pilot.press("pagedown", "down")
        await pilot.pause()
        assert pane.scroll_y == bottom
        await pilot.press("pageup", "left")  # scrolled up to read, then a step back:
        await pilot.pause()
        assert pane.scroll_y == pane.max_scroll_y, "the event moved to shows at the foot"
