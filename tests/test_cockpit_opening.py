"""`run --resume FILE` in the cockpit: the first frame is the file's tail, the whole resume
is built in a worker, and the cockpit then shows the real run; a refusal is said before the
cockpit when the file's ends decide it, else in the cockpit, the file untouched."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import scenarios
from engine.sessions.run import new_run
from engine.stored.transcript import TranscriptWriter, read_transcript
from tests.support.cockpit_mcp import header_text
from tests.support.cockpit_worlds import screen_text, wait_until
from tests.support.waiting import wait_for
from tui.app import CockpitApp, Opening
from tui.cli import build_parser
from tui.cli.run import open_cockpit, open_resumed
from tui.exits import EXIT_ABORTED, EXIT_UNFINISHED, EXIT_USAGE, UsageError

WORLD = Path(__file__).resolve().parent.parent / "bench" / "worlds" / "lookup_world.py"
STEPS = 600  # 1,200 events: more than the tail's 400
SIZE = (120, 40)
pytestmark = pytest.mark.anyio


def _lookup_run(path: Path, steps: int = STEPS, *, cut: bool = True) -> None:
    """A lookup run of `steps` steps in `path`, its end line cut off when `cut` (it did not end)."""
    scenario = scenarios.load_file(WORLD)
    run = new_run(scenario, "all", "looker", out=path, budget=scenario.budget.with_limit("steps", steps))
    run.engine.run()
    run.close()
    if cut:
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]))


def _args(path: Path):
    return build_parser().parse_args(["run", str(WORLD), "--resume", str(path)])


def _held(opening: Opening, release: threading.Event) -> Opening:
    """`opening` whose build waits for `release` (the whole read is not done until the test says so)."""
    build = opening.build

    def held():
        assert release.wait(30), "the test never released the build"
        return build()

    opening.build = held
    return opening


async def test_the_cockpit_shows_the_tail_before_the_resume_is_built_then_the_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _lookup_run(path)
    total = len(read_transcript(path).events)
    opening = open_resumed(_args(path))
    assert isinstance(opening, Opening) and len(opening.tail.events) < total
    release = threading.Event()
    app = CockpitApp(_held(opening, release))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "opening…" in header_text(app), what="the opening's header")
        await wait_until(pilot, lambda: any(f"item-{STEPS}" in row for row in screen_text(app)), what="the last step drawn")
        assert app.run_ is None and app.busy
        assert "lookup" in header_text(app)
        assert not any(app.action_applies(action) for action in ("step", "continue_run", "abort", "save", "pick_policy"))
        await pilot.press("n")  # does nothing while opening
        assert app.run_ is None
        release.set()
        await wait_until(pilot, lambda: app.run_ is not None and not app.busy, what="the resumed run")
        await pilot.pause()
        engine = app.run_.engine
        assert app.opening is None and "opening" not in header_text(app)
        assert app.seen == len(engine.events) == total and app.view_state.step == STEPS
        assert app.pane.index.shown == len(engine.events)
        assert app.pane.scroll_y == app.pane.max_scroll_y, "the pane stays at the end"
        assert any(f"item-{STEPS}" in row for row in screen_text(app))
        assert app.action_applies("step")
        await pilot.press("n")
        await wait_until(pilot, lambda: len(engine.events) > total and not app.busy, what="a step after the resume")
    app.run_.close()
    assert len(read_transcript(path).events) > total


async def test_a_refusal_only_the_whole_read_finds_is_said_in_the_cockpit_and_the_file_is_kept(tmp_path: Path, capsys) -> None:
    path = tmp_path / "run.jsonl"
    _lookup_run(path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[5] = b'{"type": "decision", "step": \n'  # a bad line in the middle: the tail reads well
    path.write_bytes(b"".join(lines))
    before = path.read_bytes()
    opening = open_resumed(_args(path))
    app = CockpitApp(opening)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.open_error is not None, what="the refusal")
        await pilot.pause()
        assert "run.jsonl:6: not JSON" in app.open_error and "not opened" in header_text(app)
        assert not any(app.action_applies(action) for action in ("step", "abort", "save"))
        await pilot.press("q")  # leaves at once: there is nothing to keep
    assert app.return_code is not None
    assert path.read_bytes() == before


def test_open_cockpit_says_the_refusal_after_the_cockpit_with_a_usage_code(tmp_path: Path, capsys, monkeypatch) -> None:
    path = tmp_path / "run.jsonl"
    _lookup_run(path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[5] = b"not json\n"
    path.write_bytes(b"".join(lines))
    opening = open_resumed(_args(path))

    def refused(self: CockpitApp) -> None:  # the cockpit's run until q, without a terminal
        try:
            self.opening.build()
        except UsageError as exc:
            self.open_error = str(exc)

    monkeypatch.setattr(CockpitApp, "run", refused)
    assert open_cockpit(opening) == EXIT_USAGE
    assert "run.jsonl:6: not JSON" in capsys.readouterr().err


def test_the_refusals_the_files_ends_decide_come_before_the_cockpit(tmp_path: Path) -> None:
    ended = tmp_path / "ended.jsonl"
    _lookup_run(ended, 30, cut=False)
    with pytest.raises(UsageError, match="the run already ended"):
        open_resumed(_args(ended))
    busy = tmp_path / "busy.jsonl"
    _lookup_run(busy, 30)
    writer = TranscriptWriter(busy)  # another run holds the file
    try:
        with pytest.raises(UsageError, match="another run is writing this transcript"):
            open_resumed(_args(busy))
    finally:
        writer.close()
    assert isinstance(open_resumed(_args(busy)), Opening)


async def test_a_run_built_after_the_cockpit_closed_lets_go_of_its_file(tmp_path: Path) -> None:
    from engine.stored.lock import TranscriptBusy

    path = tmp_path / "run.jsonl"
    _lookup_run(path)
    release = threading.Event()
    opening = _held(open_resumed(_args(path)), release)
    built: list = []
    build = opening.build
    opening.build = lambda: built.append(build()) or built[-1]
    app = CockpitApp(opening)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "opening…" in header_text(app), what="the opening's header")
        app.exit()
    release.set()

    def let_go() -> bool:
        if not built:
            return False
        try:
            TranscriptWriter(path).close()
        except TranscriptBusy:
            return False
        return True

    wait_for(let_go, "the run built after the cockpit closed to let go of its file")
    assert app.run_ is None


async def test_sigterm_while_the_run_is_opening_closes_the_cockpit(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _lookup_run(path)
    release = threading.Event()
    app = CockpitApp(_held(open_resumed(_args(path)), release))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: "opening…" in header_text(app), what="the opening's header")
            app.terminate()  # what SIGTERM calls (`tui.run_guard.sigterm_closes`)
            await pilot.pause()
            assert app.terminated and app._leaving
    finally:
        release.set()
    assert app.return_code == EXIT_ABORTED


def test_quit_while_opening_says_how_to_resume_and_does_not_wait_for_the_build(tmp_path: Path, capsys, monkeypatch) -> None:
    import tui.cli.run as run_command

    path = tmp_path / "run.jsonl"
    _lookup_run(path)
    before = path.read_bytes()
    release = threading.Event()
    opening = _held(open_resumed(_args(path)), release)

    original = CockpitApp.run

    def run_quitting(self: CockpitApp, **_: object):
        async def quit_at_once(pilot) -> None:
            await wait_until(pilot, lambda: "opening…" in header_text(self), what="the opening's header")
            await pilot.press("q")

        return original(self, headless=True, size=SIZE, auto_pilot=quit_at_once)

    monkeypatch.setattr(CockpitApp, "run", run_quitting)
    monkeypatch.setattr(run_command, "abandoned_work", False)
    try:
        code = open_cockpit(opening, _args(path))
    finally:
        release.set()
    err = capsys.readouterr().err
    assert code == EXIT_UNFINISHED  # asked nothing: nothing of the run changed
    assert run_command.abandoned_work, "the process would wait for the build to end before it exits"
    assert f"unfinished: resume with agent-tui run {WORLD} --resume {path}" in err
    assert path.read_bytes() == before


def test_the_scenario_file_is_loaded_once_and_a_follow_up_refused_before_the_cockpit(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "run.jsonl"
    _lookup_run(path, 30)
    loads: list[str] = []
    real = scenarios.load_file
    monkeypatch.setattr(scenarios, "load_file", lambda where, *a, **k: loads.append(str(where)) or real(where, *a, **k))
    opening = open_resumed(_args(path))
    run = opening.build()
    try:
        assert run.scenario is opening.scenario and loads == [str(WORLD)]
    finally:
        run.close()
    args = build_parser().parse_args(["run", str(WORLD), "--resume", str(path), "--follow-up", "and then?"])
    with pytest.raises(UsageError, match="follow-up"):
        open_resumed(args)
