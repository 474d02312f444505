"""Tools run inline with a deadline: a quick tool starts no thread, a hanging one is stopped."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from engine import Param, Tool
from engine.core import deadline
from engine.core.tools import DEFAULT_TIMEOUT, execute


def quick(text: str) -> str:
    return text.upper()


@pytest.fixture
def thread_starts(monkeypatch):
    """Counts every thread started while the test runs."""
    started: list[str] = []
    real_start = threading.Thread.start

    def counting_start(self):
        started.append(self.name)
        return real_start(self)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    return started


def test_a_quick_tool_with_the_default_timeout_starts_no_thread(thread_starts):
    tool = Tool("shout", "Shout.", (Param("text"),), quick)
    assert tool.timeout == DEFAULT_TIMEOUT
    before = threading.active_count()
    for n in range(200):
        result = execute(tool, {"text": f"hi {n}"})
        assert result.text == f"HI {n}" and result.executed and not result.error
    assert thread_starts == []
    assert threading.active_count() == before


def test_the_default_timeout_still_stops_a_hanging_tool():
    """The default timeout (10 s) interrupts a tool that sleeps past it."""
    finished: list[bool] = []

    def hang() -> str:
        time.sleep(DEFAULT_TIMEOUT + 20)
        finished.append(True)
        return "too late"

    tool = Tool("hang", "Sleeps.", (), hang)
    assert tool.timeout == DEFAULT_TIMEOUT == 10
    start = time.monotonic()
    result = execute(tool, {})
    took = time.monotonic() - start
    assert result.error and result.executed
    assert result.text == "ERROR: tool 'hang' timed out after 10 s"
    assert DEFAULT_TIMEOUT - 0.01 <= took < DEFAULT_TIMEOUT + 15, took
    time.sleep(0.1)
    assert finished == []  # the tool was stopped, not left running
    assert execute(Tool("shout", "Shout.", (Param("text"),), quick), {"text": "after"}).text == "AFTER"


def test_a_tool_that_catches_every_exception_is_still_stopped():
    def stubborn() -> str:
        try:
            time.sleep(30)
        except Exception:
            return "swallowed"
        return "slept"

    result = execute(Tool("stubborn", "Sleeps.", (), stubborn, timeout=0.2), {})
    assert result.text == "ERROR: tool 'stubborn' timed out after 0.2 s"


def test_an_alarm_armed_by_someone_else_still_fires(monkeypatch):
    """pytest-timeout and others arm SIGALRM themselves: theirs is kept and re-armed."""
    fired: list[float] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(time.monotonic()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.4)
        start = time.monotonic()
        assert execute(Tool("shout", "Shout.", (Param("text"),), quick, timeout=5), {"text": "a"}).text == "A"
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 0.4
        # Their alarm comes first while a tool runs: their handler runs, the tool goes on.
        result = execute(Tool("nap", "Naps.", (), lambda: time.sleep(0.6) or "rested", timeout=5), {})
        assert result.text == "rested"
        assert len(fired) == 1 and 0.3 < fired[0] - start < 2
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_off_the_main_thread_a_runner_is_reused_and_a_hanging_tool_abandoned(thread_starts, monkeypatch):
    monkeypatch.setattr(deadline, "_idle", [])  # no runner left idle by an earlier test
    release = threading.Event()
    results: dict[str, object] = {}

    def work() -> None:
        shout = Tool("shout", "Shout.", (Param("text"),), quick)
        results["quick"] = [execute(shout, {"text": str(n)}).text for n in range(50)]
        results["hang"] = execute(Tool("wait", "Waits.", (), lambda: release.wait(30) and "released", timeout=0.2), {})
        results["after"] = execute(shout, {"text": "after"}).text

    worker = threading.Thread(target=work, name="engine-worker")
    worker.start()
    worker.join(20)
    release.set()
    assert results["quick"] == [str(n) for n in range(50)]
    assert results["hang"].text == "ERROR: tool 'wait' timed out after 0.2 s"
    assert results["after"] == "AFTER"
    # The worker itself, one runner for the 50 quick calls and the hanging one, a fresh one after it.
    assert thread_starts == ["engine-worker", "tool-runner", "tool-runner"]


def test_exceptions_from_the_tool_pass_through_the_deadline():
    def broken() -> str:
        raise KeyError("missing")

    assert execute(Tool("broken", "Breaks.", (), broken), {}).text == "ERROR: KeyError: 'missing'"
    with pytest.raises(ValueError):
        deadline.call_with_deadline(lambda: int("x"), {}, 5)


def assert_timer_given_back(before: tuple[float, float]) -> None:
    """Our alarm is disarmed; one armed before (pytest-timeout's) runs on with what was left."""
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    assert interval == before[1]
    assert left == 0.0 if before[0] == 0.0 else 0.0 < left <= before[0]


def test_a_quick_call_changes_no_signal_handler_after_the_first(monkeypatch):
    """The handler is installed once: quick calls cost two setitimer calls, no signal()."""
    deadline.call_with_deadline(quick, {"text": "first"}, 5)  # installs it if a test before replaced it
    installs: list[object] = []
    real_signal = deadline._signal.signal

    def counting_signal(signum, handler):
        installs.append(handler)
        return real_signal(signum, handler)

    monkeypatch.setattr(deadline._signal, "signal", counting_signal)
    before = signal.getitimer(signal.ITIMER_REAL)  # pytest-timeout's alarm, if it armed one
    assert [deadline.call_with_deadline(quick, {"text": str(n)}, 5) for n in range(100)] == [str(n) for n in range(100)]
    assert installs == []
    assert_timer_given_back(before)


def test_an_outer_call_whose_deadline_comes_first_is_stopped_inside_an_inner_one():
    """A tool that calls another tool: the outer deadline (0.3 s) cuts the inner call (5 s)."""
    inner_finished: list[bool] = []

    def inner() -> str:
        time.sleep(3)
        inner_finished.append(True)
        return "inner done"

    def outer() -> str:
        return deadline.call_with_deadline(inner, {}, 5)

    before = signal.getitimer(signal.ITIMER_REAL)
    start = time.monotonic()
    with pytest.raises(deadline.DeadlineExceeded):
        deadline.call_with_deadline(outer, {}, 0.3)
    assert time.monotonic() - start < 2.5
    assert inner_finished == []
    assert_timer_given_back(before)
    assert deadline.call_with_deadline(quick, {"text": "after"}, 5) == "AFTER"


def test_an_alarm_when_no_call_runs_goes_to_the_handler_ours_replaced():
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        deadline.call_with_deadline(quick, {"text": "x"}, 5)  # ours replaces theirs and stays
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        time.sleep(0.5)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
