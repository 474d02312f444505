"""`agent-tui gateway --headless` as a process: flags, --approve none, SIGTERM and the outcome line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import openai
import pytest

from engine.stored.transcript import read_transcript
from tests.support.fake_openai import FakeOpenAI, call, say
from tests.support.gateway_harness import TOOLS, Files
from tests.support.gateway_harness import agent_loop
from tests.support.gateway_harness import AGENT_TUI, start_headless_gateway, stop_gateway


def test_approve_none_rejects_every_held_call_and_sigterm_ends_with_the_answer(tmp_path: Path) -> None:
    files = Files(tmp_path)
    with FakeOpenAI() as fake:
        fake.add(
            call("read_file", path="notes.txt", id="c1"),
            call("delete_file", path="notes.txt", id="c2"),
            call("delete_file", path="notes.txt", id="c3"),
            say("I could not delete anything."),
        )
        proc, url = start_headless_gateway(fake, tmp_path, "--approve", "none", env={"OPENAI_API_KEY": "sk-upstream-secret"})
        client = openai.OpenAI(base_url=url, api_key="agent-key", max_retries=0)
        answer, seen = agent_loop(client, files)
        code, out, err = stop_gateway(proc)
        assert fake.requests[0].headers["authorization"] == "Bearer sk-upstream-secret"
    assert answer == "I could not delete anything."
    assert seen == ["read_file"] and files.notes_exist
    assert code == 0, err
    assert out.strip().splitlines()[-1] == "outcome: answer after 4 steps: I could not delete anything."
    assert out.count("rejected by auto (--approve none)") == 2
    text = (tmp_path / "gw.jsonl").read_text()
    assert "sk-upstream-secret" not in text and "agent-key" not in text
    assert read_transcript(tmp_path / "gw.jsonl").events[-1].type == "run_ended"


def test_sigterm_while_a_run_is_open_aborts_it(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.add(call("read_file", path="notes.txt", id="c1"))
        proc, url = start_headless_gateway(fake, tmp_path, "--approve", "all")
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "read"}], tools=TOOLS)
        assert reply.choices[0].message.tool_calls[0].function.name == "read_file"
        code, out, err = stop_gateway(proc)
    assert code == 5, err
    assert out.strip().splitlines()[-1] == "outcome: aborted after 1 step: the gateway stopped (SIGTERM)"
    assert f"transcript: {tmp_path / 'gw.jsonl'}" in err


def test_a_budget_answers_the_agent_with_an_error_naming_it(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.add(call("read_file", path="notes.txt", id="c1", usage=(900, 200)), say("never sent"))
        proc, url = start_headless_gateway(fake, tmp_path, "--approve", "all", "--max-tokens", "1000")
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        messages = [{"role": "user", "content": "read"}]
        first = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
        messages += [first.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "c1", "content": "x"}]
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        code, out, err = stop_gateway(proc)
        assert len(fake.requests) == 1
    assert "tokens budget reached: 1100 of 1000" in str(caught.value)
    assert code == 3 and "outcome: stopped after 1 step: tokens budget reached: 1100 of 1000" in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "give the model endpoint"),
        (["--upstream", "localhost:8000"], "expected an http(s) URL"),
        (["--upstream", "http://127.0.0.1:9/v1", "--listen", "0.0.0.0:8765"], "needs --token"),
        (["--upstream", "http://127.0.0.1:9/v1", "--listen", "nonsense"], "expected HOST:PORT"),
        (["--upstream", "http://127.0.0.1:9/v1", "--headless"], "needs a terminal to ask on"),
        (["--upstream", "http://127.0.0.1:9/v1", "--max-tokens", "0"], "--max-tokens: must be 1 or more"),
        (["--upstream", "http://127.0.0.1:9/v1", "--price-in", "-1"], "--price-in: must be a finite number of 0 or more"),
        (["--upstream", "http://127.0.0.1:9/v1", "--price-in", "nan"], "--price-in: must be a finite number of 0 or more"),
        (["--upstream", "http://127.0.0.1:9/v1", "--price-out", "inf"], "--price-out: must be a finite number of 0 or more"),
    ],
)
def test_usage_errors(flags: list[str], message: str) -> None:
    done = subprocess.run([*AGENT_TUI, "gateway", *flags], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_sigterm_the_moment_it_says_listening_still_ends_with_the_outcome(tmp_path: Path) -> None:
    """Its signal handlers are in place before the banner: a supervisor that stops the
    gateway as soon as it is up gets the outcome line and exit 0, not a bare kill."""
    with FakeOpenAI() as fake:
        for attempt in range(3):
            (where := tmp_path / str(attempt)).mkdir()
            proc, _ = start_headless_gateway(fake, where, "--approve", "none")
            code, out, err = stop_gateway(proc)
            assert code == 0, (code, err)
            assert out.strip().splitlines()[-1] == "outcome: no request came; no run", out


def test_a_gateway_stopped_after_only_a_side_request_says_where_it_is_noted(tmp_path: Path) -> None:
    """A router's request (no tools, a JSON answer) and no run: stopping writes its note as a run
    of its own, whose transcript is named, and the outcome says no run of the agent's began."""
    with FakeOpenAI() as fake:
        fake.add(say('{"route": "fast"}'))
        proc, url = start_headless_gateway(fake, tmp_path, "--approve", "all")
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        messages = [{"role": "user", "content": "route this"}]
        client.chat.completions.create(model="m", messages=messages, response_format={"type": "json_object"})
        code, out, err = stop_gateway(proc)
    assert code == 0, err
    assert f"transcript: {tmp_path / 'gw.jsonl'}" in err
    assert out.strip().splitlines()[-1] == "outcome: no run began; the side requests that came are noted in the transcript above"
    notes = [e.text for e in read_transcript(tmp_path / "gw.jsonl").events if e.type == "observation"]
    assert len(notes) == 1 and "a side request without tools (1 message)" in notes[0]


def test_the_help_names_every_wire_an_upstream_can_speak(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.wires import WIRES
    from tui.cli import main

    with pytest.raises(SystemExit):
        main(["gateway", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    wires = said.split("(WIRE:", 1)[1].split(")", 1)[0]
    assert all(name in wires for name in WIRES), wires


def test_out_a_folder_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    done = subprocess.run([*AGENT_TUI, "gateway", "--upstream", "http://127.0.0.1:9/v1", "--model", "m", "--headless",
                           "--approve", "all", "--out", str(tmp_path)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and f"{tmp_path} is a folder; give a file name" in done.stderr
    assert "Traceback" not in done.stderr
