"""Calling a tool with a deadline, at no cost when it returns in time.

On the main thread (a headless run) the tool runs inline: a real-time timer
(`setitimer`) is armed before the call and disarmed after it, and if it fires
first the handler raises `DeadlineExceeded` (a BaseException, so a tool's
`except Exception` cannot swallow it) inside the tool, which stops the tool
where it waits (`time.sleep`, a socket, a lock) and unwinds it. The handler
is installed once and stays (an alarm that is no call's goes on to the
handler it replaced), so a quick call costs two `setitimer` calls and starts
no thread. An alarm
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


class _Call:
    """A call running under our alarm on the main thread."""

    __slots__ = ("deadline", "passed_on")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.passed_on = False
        """An alarm came that was not this call's (passed on to the handler ours replaced)."""


_calls: list[_Call] = []
"""The calls under our alarm, innermost last (a tool may call another tool)."""
_replaced: list[Any] = [None]
"""The SIGALRM handler ours replaced: an alarm that is no call's goes to it."""


def _on_alarm(signum: int, frame: Any) -> None:
    now = time.monotonic()
    for depth in range(len(_calls) - 1, -1, -1):
        call = _calls[depth]
        if now >= call.deadline - 0.001:
            raise DeadlineExceeded(call)
        call.passed_on = True
    _pass_on(_replaced[0], signum, frame)


def _call_with_alarm(fn: Callable[..., Any], kwargs: dict[str, Any], timeout: float) -> Any:
    # Our handler stays installed between calls (installed again only when somebody
    # else's replaced it), so a quick call costs two `setitimer` and no `signal`.
    if _signal.getsignal(_ALARM) is not _on_alarm:
        _replaced[0] = _signal.signal(_ALARM, _on_alarm)
    start = time.monotonic()
    call = _Call(start + timeout)
    _calls.append(call)
    previous_delay, previous_interval = _signal.setitimer(_REAL_TIMER, timeout)
    if 0 < previous_delay < timeout:
        _signal.setitimer(_REAL_TIMER, previous_delay)
    try:
        try:
            return fn(**kwargs)
        finally:
            _signal.setitimer(_REAL_TIMER, 0)
            _calls.remove(call)
            if call.passed_on and previous_interval > 0:
                _signal.setitimer(_REAL_TIMER, previous_interval, previous_interval)
            elif previous_delay > 0 and not call.passed_on:
                left = previous_delay - (time.monotonic() - start)
                _signal.setitimer(_REAL_TIMER, max(left, 1e-6), previous_interval)
    except DeadlineExceeded as exc:
        if exc.args and exc.args[0] is call:
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
