"""Credentials written into the upstream URL (user info, a query such as `?api-key=`) never show:
not in the gateway's banner on stderr, not in its cockpit's header, not in a transcript."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.gateway import Gateway, Upstream
from tests.fake_openai import FakeOpenAI
from tui.gateway_app import GatewayApp

SECRETS = ("user-secret-1", "query-secret-2")


def secret_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://me:{SECRETS[0]}@{rest}?api-key={SECRETS[1]}"


def test_the_banner_and_outcome_hold_no_url_credential(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "gateway", "--headless", "--approve", "none", "--upstream", secret_url(fake.url),
             "--listen", "127.0.0.1:0", "--out", str(tmp_path / "gw.jsonl")],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
        )
        warning = proc.stderr.readline()  # the URL's credentials are in the process list: said, never shown
        banner = proc.stderr.readline()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert warning.startswith("agent-tui: warning: --upstream holds credentials"), warning + banner + err
    assert "listening on" in banner and "127.0.0.1" in banner, banner + err
    assert [s for s in SECRETS if s in warning + banner + out + err] == []


@pytest.mark.anyio
async def test_the_cockpit_header_holds_no_url_credential(tmp_path: Path) -> None:
    gateway = Gateway([Upstream("up", secret_url("http://127.0.0.1:9/v1"))], out=tmp_path / "gw.jsonl")
    app = GatewayApp(gateway, "http://127.0.0.1:8765/v1")
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            shown = str(app.query_one("#gw-status").render())
            assert "127.0.0.1:9/v1" in shown
            assert [s for s in SECRETS if s in shown] == []
    finally:
        gateway.stop("the test ended")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
