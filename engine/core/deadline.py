"""Calling a tool with a deadline, at no cost when it returns in time.

On the main thread (a headless run) the tool runs inline: a real-time timer
(`setitimer`) is armed before the call and disarmed after it, and if it fires
first the handler raises `DeadlineExceeded` (a BaseException, so a tool's
`except Exception` cannot swallow it) inside the tool, which stops the tool
where it waits (`time.sleep`, a socket, a lock) and unwinds it. A quick call
costs two `setitimer` and two `signal` calls and starts no thread. An alarm
somebody else armed (pytest-timeout, say) is kept: the earlier of the two
fires first, and theirs is re-armed with what was left of it.

Signals reach only the main thread, so on any other thread (the cockpit's
worker) the tool runs on a reusable runner thread and the caller waits for it
up to the deadline; a runner whose call overran is abandoned (it finishes, or
not, on its own) and the next call takes a fresh one. Threads are started only
when no idle runner is left, never one per call.
"""

from __future__ import annotations

import _signal
import _thread
import queue
import threading
import time
from typing import Any, Callable

_MAIN_THREAD = threading.main_thread().ident
_ALARM = getattr(_signal, "SIGALRM", None)
_REAL_TIMER = getattr(_signal, "ITIMER_REAL", None)


class DeadlineExceeded(BaseException):
    """The call ran past its deadline (raised inside the call on the main thread)."""


def call_with_deadline(fn: Callable[..., Any], kwargs: dict[str, Any], timeout: float) -> Any:
    """`fn(**kwargs)`, or DeadlineExceeded after `timeout` seconds; the call's own exceptions pass through."""
    if _ALARM is not None and _thread.get_ident() == _MAIN_THREAD:
        return _call_with_alarm(fn, kwargs, timeout)
    return _call_on_runner(fn, kwargs, timeout)


# -- the main thread: an alarm ----------------------------------------------------------


def _call_with_alarm(fn: Callable[..., Any], kwargs: dict[str, Any], timeout: float) -> Any:
    start = time.monotonic()
    deadline = start + timeout
    mine = DeadlineExceeded()
    previous_handler: Any = None
    passed_on: list[bool] = []

    def on_alarm(signum: int, frame: Any) -> None:
        if time.monotonic() >= deadline - 0.001:
            raise mine
        passed_on.append(True)
        _pass_on(previous_handler, signum, frame)

    previous_handler = _signal.signal(_ALARM, on_alarm)
    previous_delay, previous_interval = _signal.setitimer(_REAL_TIMER, timeout)
    if 0 < previous_delay < timeout:
        _signal.setitimer(_REAL_TIMER, previous_delay)
    try:
        try:
            return fn(**kwargs)
        finally:
            _signal.setitimer(_REAL_TIMER, 0)
            _signal.signal(_ALARM, previous_handler)
            if passed_on and previous_interval > 0:
                _signal.setitimer(_REAL_TIMER, previous_interval, previous_interval)
            elif previous_delay > 0 and not passed_on:
                left = previous_delay - (time.monotonic() - start)
                _signal.setitimer(_REAL_TIMER, max(left, 1e-6), previous_interval)
    except DeadlineExceeded as exc:
        if exc is mine:
            raise DeadlineExceeded() from None
        raise


def _pass_on(handler: Any, signum: int, frame: Any) -> None:
    """An alarm that was not ours: do what the handler before ours would have done."""
    if callable(handler):
        handler(signum, frame)
    elif handler == _signal.SIG_DFL:
        _signal.signal(signum, _signal.SIG_DFL)
        _signal.raise_signal(signum)


# -- other threads: a reusable runner ------------------------------------------------------


class _Runner:
    """A thread that runs one call at a time for callers that wait with a timeout."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[tuple[Callable[..., Any], dict[str, Any], list[Any], threading.Event]] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._loop, name="tool-runner", daemon=True).start()

    def _loop(self) -> None:
        while True:
            fn, kwargs, box, done = self.inbox.get()
            try:
                box.append((True, fn(**kwargs)))
            except BaseException as exc:  # handed back to the caller, never lost here
                box.append((False, exc))
            done.set()
            del fn, kwargs, box, done


_idle: list[_Runner] = []
_idle_lock = threading.Lock()


def _call_on_runner(fn: Callable[..., Any], kwargs: dict[str, Any], timeout: float) -> Any:
    with _idle_lock:
        runner = _idle.pop() if _idle else None
    if runner is None:
        runner = _Runner()
    box: list[Any] = []
    done = threading.Event()
    runner.inbox.put((fn, kwargs, box, done))
    if not done.wait(timeout):
        raise DeadlineExceeded()  # the runner is left to its call; it is not reused
    with _idle_lock:
        _idle.append(runner)
    ok, value = box[0]
    if ok:
        return value
    raise value
