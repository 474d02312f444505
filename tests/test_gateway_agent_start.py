"""`agent-tui gateway ... -- COMMAND`: the agent started as the gateway's child, pointed at it
with a token of the gateway's own; the upstream key never in its environment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest

from engine.gateway import Gateway, GatewayServer, Upstream
from engine.gateway.agents import UPSTREAM_KEYS, agent_launch
from tests.support.fake_openai import FakeOpenAI, say

AGENT_TUI = [sys.executable, "-m", "tui.cli"]
SECRET = "sk-upstream-secret-0123456789"

ECHO_CHILD = """
import json, os, sys
import httpx
environ = open("/proc/self/environ", "rb").read().decode()
reply = httpx.post(os.environ["OPENAI_BASE_URL"] + "/chat/completions", trust_env=False,
                   headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
                   json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
print("status", reply.status_code)
print("answered:", reply.json()["choices"][0]["message"]["content"])
print("environ", json.dumps(environ))
sys.exit(3)
"""


def test_the_started_agent_reaches_the_upstream_through_the_gateway_without_its_key(tmp_path: Path) -> None:
    child = tmp_path / "child.py"
    child.write_text(ECHO_CHILD)
    with FakeOpenAI() as fake:
        fake.add(say("hello from the model"))
        done = subprocess.run(
            [*AGENT_TUI, "gateway", "--headless", "--approve", "all", "--upstream", fake.url, "--listen", "127.0.0.1:0",
             "--out", str(tmp_path / "gw.jsonl"), "--", sys.executable, str(child)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
            env={**os.environ, "OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": "sk-ant-other", "A_COPY": f"x{SECRET}x"},
        )
        assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET}", "the gateway asks the upstream with its key"
    assert done.returncode == 3, done.stdout + done.stderr
    assert "agent| status 200" in done.stdout and "agent| answered: hello from the model" in done.stdout
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("agent| environ ")]
    environ = dict(v.split("=", 1) for v in json.loads(line.removeprefix("agent| environ ")).split("\0") if v)
    assert SECRET not in json.dumps(environ) and "sk-ant-other" not in json.dumps(environ)
    assert "A_COPY" not in environ and "ANTHROPIC_API_KEY" not in environ
    assert environ["OPENAI_BASE_URL"].startswith("http://127.0.0.1:") and environ["OPENAI_BASE_URL"].endswith("/v1")
    assert len(environ["OPENAI_API_KEY"]) >= 24
    assert "the agent exited with code 3" in done.stdout + done.stderr
    assert SECRET not in done.stdout + done.stderr


def test_an_agent_that_wants_the_terminal_is_not_started_and_its_lines_are_printed(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        proc = subprocess.Popen(
            [*AGENT_TUI, "gateway", "--headless", "--approve", "all", "--upstream", fake.url, "--listen", "127.0.0.1:0",
             "--out", str(tmp_path / "gw.jsonl"), "--", "claude", "--model", "sonnet"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "OPENAI_API_KEY": SECRET},
        )
        lines = []
        while not lines or lines[-1] != "claude --model sonnet":
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            lines.append(line.rstrip("\n"))
        settings = dict(line.removeprefix("export ").split("=", 1) for line in lines if line.startswith("export "))
        url = settings["ANTHROPIC_BASE_URL"]
        assert url.startswith("http://127.0.0.1:") and settings["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        assert lines[0].startswith("unset ") and "OPENAI_API_KEY" in lines[0].split()
        token = settings["ANTHROPIC_API_KEY"]
        models = httpx.get(url + "/v1/models", headers={"x-api-key": token}, trust_env=False)
        refused = httpx.get(url + "/v1/models", headers={"x-api-key": SECRET}, trust_env=False)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert models.status_code == 200 and refused.status_code == 401
    assert SECRET not in "\n".join(lines) + out + err


@pytest.mark.parametrize("header", ["authorization", "x-api-key", "x-goog-api-key"])
def test_the_gateway_token_is_taken_in_each_wires_key_header(header: str, tmp_path: Path) -> None:
    gw = Gateway([Upstream("fake", "http://127.0.0.1:9/v1")], save=False)
    server = GatewayServer(gw, "127.0.0.1", 0, token="the-token")
    server.start()
    try:
        value = "Bearer the-token" if header == "authorization" else "the-token"
        wrong = "Bearer other" if header == "authorization" else "other"
        url = server.url + "/models"
        assert httpx.get(url, headers={header: value}, trust_env=False).status_code == 200
        assert httpx.get(url, headers={header: wrong}, trust_env=False).status_code == 401
    finally:
        gw.stop("the test ended")
        server.close()


def test_each_agent_gets_its_own_settings_and_no_upstream_key(tmp_path: Path) -> None:
    environ = {"PATH": "/bin", "HOME": "/home/x", **{name: SECRET for name in UPSTREAM_KEYS}, "SHELL_COPY": SECRET}

    folders = iter(range(100))

    def launch(*argv: str, kind: str | None = None):
        folder = tmp_path / f"agent-{next(folders)}"
        got = agent_launch(argv, host="127.0.0.1", port=8765, token="tok", folder=folder, environ=environ, secrets=[SECRET], kind=kind, model="m1")
        assert SECRET not in json.dumps(got.env) and got.env["PATH"] == "/bin"
        return got

    claude = launch("claude", "-p", "fix it", "--allowedTools", "Bash")
    assert (claude.kind, claude.interactive) == ("claude", False)
    assert claude.settings["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8765" and claude.settings["ANTHROPIC_API_KEY"] == "tok"
    assert {"DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "DISABLE_AUTOUPDATER", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"} <= set(claude.env)
    assert launch("claude").interactive

    codex = launch("codex", "exec", "--skip-git-repo-check", "do it")
    config = tomllib.loads((Path(codex.settings["CODEX_HOME"]) / "config.toml").read_text())
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == "http://127.0.0.1:8765/v1" and provider["wire_api"] == "responses"
    assert codex.env[provider["env_key"]] == "tok" and config["analytics"]["enabled"] is False
    assert config["check_for_update_on_startup"] is False and not codex.interactive and launch("codex").interactive

    gemini = launch("gemini", "-p", "do it", "--approval-mode", "yolo")
    assert gemini.settings["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:8765" and gemini.settings["GEMINI_API_KEY"] == "tok"
    settings = json.loads(Path(gemini.settings["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key" and settings["privacy"]["usageStatisticsEnabled"] is False

    opencode = launch("opencode", "run", "do it")
    config = json.loads(Path(opencode.settings["OPENCODE_CONFIG"]).read_text())
    assert config["model"] == "agent-tui/m1" and config["provider"]["agent-tui"]["options"]["baseURL"] == "http://127.0.0.1:8765/v1"
    assert "tok" not in json.dumps(config) and opencode.env["AGENT_TUI_GATEWAY_KEY"] == "tok"

    other = launch("/usr/bin/python3", "agent.py")
    assert other.kind == "openai" and other.settings == {"OPENAI_BASE_URL": "http://127.0.0.1:8765/v1", "OPENAI_API_KEY": "tok"}
    assert launch("my-agent", kind="claude").kind == "claude"


SIGTERM_AS_THE_AGENT_STARTS = """
import os, signal, subprocess, sys
from tui.cli import main

started = subprocess.Popen._execute_child


def then_sigterm(self, *args, **kwargs):
    started(self, *args, **kwargs)
    if "paused_agent" in str(self.args):
        print("agent", self.pid, flush=True)
        os.kill(os.getpid(), signal.SIGTERM)  # just after the fork, before Popen returns


subprocess.Popen._execute_child = then_sigterm
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("mode", [["--headless"], []], ids=["headless", "cockpit"])
def test_sigterm_as_the_agent_starts_stops_the_agent(tmp_path: Path, mode: list[str]) -> None:
    """SIGTERM inside `subprocess.Popen` as the gateway starts its agent takes effect once the
    agent is known: it is stopped with the gateway. Before, the signal's exception left Popen
    before it returned, and the agent ran on with nobody to stop it."""
    agent = tmp_path / "paused_agent.py"
    agent.write_text("import signal\nsignal.pause()\n")
    with FakeOpenAI() as fake:
        done = subprocess.run(
            [sys.executable, "-c", SIGTERM_AS_THE_AGENT_STARTS, "gateway", *mode, "--approve", "all", "--upstream", fake.url,
             "--listen", "127.0.0.1:0", "--out", str(tmp_path / "gw.jsonl"), "--", sys.executable, str(agent)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, env={**os.environ, "AGENT_TUI_HOME": str(tmp_path / "home")},
        )
    (pid,) = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("agent ")]
    try:
        assert not Path(f"/proc/{pid}").exists(), f"the agent {pid} runs on: {done.stdout}{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        assert "outcome: no request came; no run" in done.stdout, done.stdout + done.stderr
    finally:
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
