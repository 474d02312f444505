"""Credentials written into the upstream URL (user info, a query such as `?api-key=`) never show:
not in the gateway's banner on stderr, not in its cockpit's header, not in a transcript."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from engine.gateway import Gateway, Upstream
from tests.support.fake_openai import FakeOpenAI
from tui.gateway_cockpit import GatewayCockpit

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
    app = GatewayCockpit(gateway, "http://127.0.0.1:8765/v1")
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            shown = str(app.query_one("#header").render())
            assert "127.0.0.1:9/v1" in shown
            assert [s for s in SECRETS if s in shown] == []
    finally:
        gateway.stop("the test ended")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- a key in the URL's query ------------------------------------------------------

QUERY_KEY = "query-secret-77d1"


def test_a_key_in_the_query_is_warned_about_as_user_info_is(capfd: pytest.CaptureFixture[str]) -> None:
    from tui.cli.secrets import url_argument

    for flag in ("--upstream", "--base-url"):
        assert url_argument(flag, "give the key elsewhere")(f"https://h.example/v1?key={QUERY_KEY}").endswith(QUERY_KEY)
        err = capfd.readouterr().err
        assert f"warning: {flag} holds credentials (a key in the URL's query)" in err and QUERY_KEY not in err
    url_argument("--upstream", "x")("https://h.example/v1?api-version=2024-06-01")
    assert capfd.readouterr().err == ""


def test_an_upstream_url_with_a_query_key_works_and_the_key_echoed_back_is_masked(tmp_path: Path) -> None:
    from tests.support.fake_openai import Status, say
    from tests.support.gateway_harness import gateway as serve

    def echo_the_path(request) -> Status:
        return Status(404, f"no route {request.path}", {"x-ratelimit-limit-requests": request.path})

    with FakeOpenAI() as fake:
        fake.url_with_key = f"{fake.url}?key={QUERY_KEY}"
        with serve(_KeyedUrl(fake), tmp_path, headless=True, mode="continue") as (gw, server):
            fake.add(echo_the_path, say("hi"))
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            echoed = httpx.post(server.url + "/chat/completions", json=body, timeout=30)
            body["messages"].append({"role": "user", "content": "again"})
            answered = httpx.post(server.url + "/chat/completions", json=body, timeout=30)
        paths = [r.path for r in fake.requests]
    assert paths == [f"/v1/chat/completions?key={QUERY_KEY}"] * 2  # the path appended before the query
    assert echoed.status_code == 404 and QUERY_KEY not in echoed.text + str(echoed.headers)
    assert "no route /v1/chat/completions?key=***" in echoed.json()["error"]["message"]
    assert answered.status_code == 200
    written = "".join(p.read_text() for p in tmp_path.glob("*.jsonl"))
    assert written and QUERY_KEY not in written


class _KeyedUrl:
    """The fake upstream as the gateway's harness sees it, its URL carrying a key in the query."""

    def __init__(self, fake: FakeOpenAI) -> None:
        self.url = fake.url_with_key


def test_a_base_url_with_a_query_key_works_and_is_masked(tmp_path: Path) -> None:
    from tests.support.fake_openai import Status, say
    from tests.support.model_policy import config, run_until_failure, start_policy_run
    from engine.model.policy import ModelPolicy

    with FakeOpenAI() as fake:
        fake.add(say("291"))
        cfg = config(f"{fake.url}?api-key={QUERY_KEY}")
        run, _ = start_policy_run("calculator", None, ModelPolicy(cfg), tmp_path, cfg=cfg)
        assert run.engine.run() == "ended"
        assert fake.requests[0].path == f"/v1/chat/completions?api-key={QUERY_KEY}"
        fake.add(Status(400, f"bad request to {fake.requests[0].path}"))
        _, message = run_until_failure(fake, tmp_path / "again", config(f"{fake.url}?api-key={QUERY_KEY}"))
    assert QUERY_KEY not in message and "api-key=***" in message
    written = "".join(p.read_text() for p in tmp_path.rglob("*.jsonl"))
    assert QUERY_KEY not in written
