"""Shared fixtures: a fixed clock and an isolated data folder for every test."""

from __future__ import annotations

import itertools

import pytest


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


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("agent-tui-home")
    monkeypatch.setenv("AGENT_TUI_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))  # never the user's configuration file
    yield home
