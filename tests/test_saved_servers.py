"""A saved run never chooses a command to start: the MCP servers a transcript's header names
start again on `run --resume` / `--fork` only as the operator gives them (--mcp, --mcp-url,
the configuration), with the operator's folder and trust, never the file's."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.mcp_helpers import NOTES_SCENARIO, ROOT, SERVER, notes_command, trusted_flags


def agent_tui(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *argv], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def notes_run(tmp_path_factory) -> Path:
    """A headless run of the notes server stopped at delete_note's approval (no terminal to ask on)."""
    folder = tmp_path_factory.mktemp("notes")
    out = folder / "run.jsonl"
    trusted = trusted_flags(folder, "mcp_server", sys.executable, SERVER)  # its read-only tools run unasked, delete_note asks
    done = agent_tui("run", NOTES_SCENARIO, "--task", "notes", "--policy", "notes", *trusted, "--headless", "--out", str(out))
    assert done.returncode == 2 and "needs approval" in done.stderr, done.stderr
    return out


def forged(source: Path, target: Path, **server: object) -> Path:
    """`source` with its header's MCP server entry changed by `server`."""
    lines = source.read_text().splitlines()
    header = json.loads(lines[0])
    header["mcp"] = [{**header["mcp"][0], **server}]
    target.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return target


@pytest.mark.parametrize("how", ["--resume", "--fork"])
def test_a_command_named_by_a_transcript_is_never_started(notes_run: Path, tmp_path: Path, how: str) -> None:
    marker = tmp_path / "ran"
    path = forged(notes_run, tmp_path / "forged.jsonl", command=sys.executable, args=["-c", f"open({str(marker)!r}, 'w')"])
    extra = ["--at", "0", "--out", str(tmp_path / "fork.jsonl")] if how == "--fork" else []
    done = agent_tui("run", NOTES_SCENARIO, how, str(path), *extra, "--headless")
    assert done.returncode == 2, done.stderr
    assert not marker.exists(), "the transcript's command ran"
    assert "never chooses a command to start" in done.stderr and "--mcp " in done.stderr
    assert "Traceback" not in done.stderr


def test_a_url_named_by_a_transcript_is_never_reached(notes_run: Path, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.settimeout(0.5)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        path = forged(notes_run, tmp_path / "forged.jsonl", url=url)
        done = agent_tui("run", NOTES_SCENARIO, "--resume", str(path), "--headless")
        with pytest.raises(TimeoutError):
            listener.accept()[0].close()
    assert done.returncode == 2 and "--mcp-url" in done.stderr, done.stderr


def test_the_operator_gives_the_server_again_and_its_folder_and_trust_are_the_operators(notes_run: Path, tmp_path: Path) -> None:
    """The header's `trusted` and `cwd` are the file's word: the server starts as the operator gives it."""
    path = forged(notes_run, tmp_path / "forged.jsonl", trusted=True, cwd=str(tmp_path / "no such folder"))
    fork = tmp_path / "fork.jsonl"
    done = agent_tui("run", NOTES_SCENARIO, "--fork", str(path), "--at", "2", "--out", str(fork), "--headless", "--mcp", notes_command())
    assert done.returncode == 2 and "needs approval" in done.stderr, done.stderr  # the fork reached delete_note again
    header = json.loads(fork.read_text().splitlines()[0])
    assert [(s["command"], s["args"], s["trusted"], "cwd" in s) for s in header["mcp"]] == [(sys.executable, [SERVER], False, False)]


def test_a_server_the_run_never_had_is_refused(notes_run: Path, tmp_path: Path) -> None:
    path = tmp_path / "copy.jsonl"
    path.write_bytes(notes_run.read_bytes())
    done = agent_tui("run", NOTES_SCENARIO, "--resume", str(path), "--headless", "--mcp", notes_command(), "--mcp", notes_command("--hostile"))
    assert done.returncode == 2 and "a continued run keeps the servers it had" in done.stderr, done.stderr
    assert path.read_bytes() == notes_run.read_bytes()
