"""Credentials in an MCP server's URL (user info, a query key) stay in memory: the
transcript's header records the URL without them, messages show it without them, and
a continued run still recognises the operator's server by that URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.mcp.servers import McpServerConfig
from engine.sessions.config import Config, parse_config
from engine.sessions.trust import UnvouchedServers, vouched_servers

SECRET_URL = "https://user:s3cret@tools.example/mcp?token=t0ken"


def test_a_configured_server_s_header_entry_holds_no_credential(tmp_path: Path) -> None:
    config = parse_config(f'[[mcp]]\nname = "tools"\nurl = "{SECRET_URL}"\n', tmp_path / "agent-tui.toml")
    recorded = config.mcp[0].public()
    assert recorded["url"] == "https://tools.example/mcp"
    assert "s3cret" not in repr(recorded) and "t0ken" not in repr(recorded)
    assert config.mcp[0].url == SECRET_URL  # what the hub connects with


def test_a_continued_run_matches_the_recorded_url_to_the_operator_s(tmp_path: Path) -> None:
    given = McpServerConfig(name="tools", url=SECRET_URL, source="--mcp-url")
    recorded = [given.public()]
    assert vouched_servers(recorded, Config(), [given], "run.jsonl") == [given]
    older = [{"name": "tools", "url": SECRET_URL, "trusted": False, "timeout": 60.0}]  # a file from before
    assert vouched_servers(older, Config(), [given], "run.jsonl") == [given]


def test_a_server_nobody_gives_again_is_named_without_its_credentials(tmp_path: Path) -> None:
    older = [{"name": "tools", "url": SECRET_URL}]
    with pytest.raises(UnvouchedServers) as raised:
        vouched_servers(older, Config(), [], "run.jsonl")
    assert "https://tools.example/mcp" in str(raised.value)
    assert "s3cret" not in str(raised.value) and "t0ken" not in str(raised.value)


def test_an_unreachable_server_is_named_without_its_credentials(tmp_path: Path) -> None:
    from engine.mcp import McpHub
    from engine.mcp.hub import McpStartError

    server = McpServerConfig(name="tools", url="http://user:s3cret@127.0.0.1:9/mcp?token=t0ken", timeout=5.0, source="--mcp-url")
    with pytest.raises(McpStartError) as raised:
        McpHub([server], tmp_path).start()
    message = str(raised.value)
    assert "127.0.0.1:9/mcp" in message
    assert "s3cret" not in message and "t0ken" not in message
