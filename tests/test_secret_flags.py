"""The gateway's token kept out of the process list: `--token-file PATH` (or `-`), the
environment, and a warning when `--token` is given as an argument; no message shows a token."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI, say

AGENT_TUI = [sys.executable, "-m", "tui.cli"]
TOKEN = "gw-7Hq2-secret-token-0042"


def _gateway(fake: FakeOpenAI, tmp_path: Path, *flags: str, stdin: str | None = None, env: dict[str, str] | None = None):
    """The gateway as a process, listening; (process, base URL, its first stderr lines)."""
    proc = subprocess.Popen(
        [*AGENT_TUI, "gateway", "--headless", "--approve", "all", "--upstream", fake.url, "--listen", "127.0.0.1:0",
         "--out", str(tmp_path / "gw.jsonl"), *flags],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**{k: v for k, v in os.environ.items() if k != "AGENT_TUI_GATEWAY_TOKEN"}, **(env or {})},
    )
    if stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
        proc.stdin = None
    seen = []
    while True:
        line = proc.stderr.readline()
        seen.append(line)
        if "listening on" in line or not line:
            break
    assert "listening on" in seen[-1], "".join(seen) + proc.stderr.read()
    return proc, seen[-1].split("listening on ")[1].split(" ")[0], "".join(seen)


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    return out + err


def _argv_of(proc: subprocess.Popen) -> str:
    """What every user of the machine reads in `ps`: the process's arguments."""
    return Path(f"/proc/{proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _asks_for_the_token(url: str) -> None:
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=url, api_key="wrong", max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}])
    reply = openai.OpenAI(base_url=url, api_key=TOKEN, max_retries=0).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "hello"


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads the process list from /proc")
@pytest.mark.parametrize("how", ["file", "stdin", "environment", "argument"])
def test_the_token_reaches_the_gateway_and_only_the_argument_shows_in_the_process_list(tmp_path, how):
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    secret.chmod(0o600)
    flags, stdin, env = {
        "file": (["--token-file", str(secret)], None, None),
        "stdin": (["--token-file", "-"], TOKEN + "\n", None),
        "environment": ([], None, {"AGENT_TUI_GATEWAY_TOKEN": TOKEN}),
        "argument": (["--token", TOKEN], None, None),
    }[how]
    with FakeOpenAI() as fake:
        fake.add(say("hello"))
        proc, url, before = _gateway(fake, tmp_path, *flags, stdin=stdin, env=env)
        try:
            listed = _argv_of(proc)
            _asks_for_the_token(url)
        finally:
            printed = before + _stop(proc)
    assert (TOKEN in listed) == (how == "argument")
    warnings = [line for line in printed.splitlines() if "warning:" in line]
    if how == "argument":
        assert warnings == ["agent-tui: warning: --token on the command line can be read by other users in the process "
                            "list; give it with --token-file PATH (- for stdin) or $AGENT_TUI_GATEWAY_TOKEN instead"]
    else:
        assert warnings == []
    assert TOKEN not in printed
    assert TOKEN not in (tmp_path / "gw.jsonl").read_text()


def _refused(tmp_path: Path, *flags: str, stdin: str | None = None) -> str:
    done = subprocess.run([*AGENT_TUI, "gateway", "--upstream", "http://127.0.0.1:9/v1", "--listen", "0.0.0.0:8765", *flags],
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    return done.stderr


def test_bad_token_files_are_refused_without_showing_the_token(tmp_path):
    missing = tmp_path / "nowhere"
    assert f"--token-file: {missing}: no such file or directory" in _refused(tmp_path, "--token-file", str(missing))
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert f"--token-file {empty}: empty; it should hold the bearer token agents must send" in _refused(
        tmp_path, "--token-file", str(empty))
    two = tmp_path / "two"
    two.write_text(f"{TOKEN}\n{TOKEN}\n")
    err = _refused(tmp_path, "--token-file", str(two))
    assert f"--token-file {two}: the bearer token agents must send holds a line break (character 26)" in err
    assert TOKEN not in err
    err = _refused(tmp_path, "--token-file", "-", stdin=f"{TOKEN}\x1b[2J\n")
    assert "--token-file stdin: the bearer token agents must send holds a control character" in err and TOKEN not in err
    err = _refused(tmp_path, "--token", TOKEN, "--token-file", str(two))
    assert "give --token or --token-file, not both" in err and TOKEN not in err
    assert f"--token-file: {tmp_path}: is a directory" in _refused(tmp_path, "--token-file", str(tmp_path))
    huge = tmp_path / "huge"
    huge.write_bytes(b"x" * (70 * 1024))
    assert "longer than 64 KiB" in _refused(tmp_path, "--token-file", str(huge))


def test_off_loopback_without_a_token_names_the_safe_way(tmp_path):
    err = _refused(tmp_path)
    assert "needs --token-file PATH (or $AGENT_TUI_GATEWAY_TOKEN)" in err


def test_a_token_file_others_can_read_is_warned_about(tmp_path):
    secret = tmp_path / "token"
    secret.write_text(TOKEN)
    secret.chmod(0o644)
    with FakeOpenAI() as fake:
        fake.add(say("hello"))
        proc, url, before = _gateway(fake, tmp_path, "--token-file", str(secret))
        printed = before + _stop(proc)
    assert f"agent-tui: warning: --token-file {secret}: other users may read the file; make it yours alone with chmod 600 {secret}" in printed
    assert TOKEN not in printed


@pytest.mark.parametrize("argv, flag", [
    (["run", "--model", "m", "--base-url", "https://user:sk-url-secret@example.test/v1"], "--base-url"),
    (["run", "--mcp-url", "https://sk-url-secret@example.test/mcp"], "--mcp-url"),
    (["gateway", "--upstream", "work=https://user:sk-url-secret@example.test/v1#m"], "--upstream"),
])
def test_a_url_holding_credentials_is_warned_about_without_showing_them(capsys, argv, flag):
    from tui.cli import build_parser

    build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert err.startswith(f"agent-tui: warning: {flag} holds credentials (user info in the URL), which other users can "
                          "read in the process list; ") and "sk-url-secret" not in err
    build_parser().parse_args([a.replace("user:sk-url-secret@", "").replace("sk-url-secret@", "") for a in argv])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("content", "said"), [
    ("tok en\n", "holds a space (character 4)"),
    ("tokén\n", "holds a character outside ASCII (character 4)"),
    ("to\tken\n", "holds a control character (character 3)"),
])
def test_a_token_that_could_never_match_is_refused_without_showing_it(tmp_path, content, said) -> None:
    """An HTTP header's value loses its outer spaces and is read as Latin-1: a token with a
    space or a non-ASCII character inside would be accepted here and refused on every request."""
    path = tmp_path / "token"
    path.write_text(content, encoding="utf-8")
    os.chmod(path, 0o600)
    err = _refused(tmp_path, "--token-file", str(path))
    assert said in err
    assert content.strip() not in err


def test_spaces_and_line_ends_around_a_token_file_s_token_are_not_part_of_it(tmp_path) -> None:
    from tui.cli.gateway import GATEWAY_TOKEN
    from tui.cli.secrets import _read_secret

    path = tmp_path / "token"
    path.write_text("  tok-1234 \r\n", encoding="utf-8")
    os.chmod(path, 0o600)
    assert _read_secret(str(path), GATEWAY_TOKEN) == "tok-1234"


def test_a_token_in_the_environment_that_could_never_match_is_refused_without_showing_it(tmp_path) -> None:
    done = subprocess.run([*AGENT_TUI, "gateway", "--upstream", "http://127.0.0.1:9/v1", "--listen", "0.0.0.0:8765"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
                          env={**os.environ, "AGENT_TUI_GATEWAY_TOKEN": "tok en-1234"})
    assert done.returncode == 2, done.stderr
    assert "$AGENT_TUI_GATEWAY_TOKEN: the bearer token agents must send holds a space (character 4)" in done.stderr
    assert "tok en-1234" not in done.stderr and "Traceback" not in done.stderr
