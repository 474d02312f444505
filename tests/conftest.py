"""Shared fixtures: a fixed clock, an isolated data folder for every test, a private tmux server."""

from __future__ import annotations

import os

import pytest

from tests.support.tmux import tmux  # noqa: F401 (the fixture: a private tmux server per test)


class FakeClock:
    """A clock that advances by `tick` seconds each time it is read."""

    def __init__(self, start: float = 1_790_000_000.0, tick: float = 0.0) -> None:
        self.now = start
        self.tick = tick

    def __call__(self) -> float:
        value = self.now
        self.now += self.tick
        return value


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (pytest.mark.anyio) run on asyncio, as Textual does."""
    return "asyncio"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _write_key(home, key: bytes) -> None:
    """The approval key (engine.sessions.seals) in `home`, private as the engine makes it."""
    fd = os.open(home / "seal.key", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key)
    finally:
        os.close(fd)


@pytest.fixture(scope="session", autouse=True)
def _session_key(tmp_path_factory):
    """One machine, one key: runs made by module fixtures (before a test's own home is set)
    and by the tests all use it, and nothing goes to the real data folder."""
    home = tmp_path_factory.mktemp("agent-tui-session-home")
    key = os.urandom(32)
    _write_key(home, key)
    before = os.environ.get("AGENT_TUI_HOME")
    os.environ["AGENT_TUI_HOME"] = str(home)
    yield key
    if before is None:
        os.environ.pop("AGENT_TUI_HOME", None)
    else:
        os.environ["AGENT_TUI_HOME"] = before


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch, _session_key):
    home = tmp_path_factory.mktemp("agent-tui-home")
    _write_key(home, _session_key)
    monkeypatch.setenv("AGENT_TUI_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))  # never the user's configuration file
    yield home


@pytest.fixture
def in_tmp(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """Run from a temporary folder, so paths shown relative to it (runs/cockpit.jsonl) are stable."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
