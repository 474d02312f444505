"""Inputs that are not plain files, and what chat logs and mini-swe-agent 2 record beyond the text:
a device is refused at once and a pipe is read only so far; a chat refusal and a response's usage,
mini-swe-agent's recorded commands, return codes and timeouts are kept."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

import engine.stored.reader as reader
from engine.stored.importers import runs_from_bytes
from engine.stored.transcript import TranscriptError
from tui.cli import main

TRACES = Path(__file__).resolve().parent / "data" / "traces"


def test_a_device_is_refused_before_anything_is_read(capsys):
    assert main(["show", "/dev/zero"]) == 2
    assert capsys.readouterr().err.strip() == "agent-tui: /dev/zero: is a device, not a file"


def _pipe_of(data: bytes) -> str:
    """A path to the read end of a pipe a thread fills with `data` (as `<(zcat ...)` gives one)."""
    read_end, write_end = os.pipe()

    def fill() -> None:
        with os.fdopen(write_end, "wb") as f:
            try:
                f.write(data)
            except BrokenPipeError:
                pass

    threading.Thread(target=fill, daemon=True).start()
    return f"/dev/fd/{read_end}"


def test_a_pipe_is_read_and_an_endless_one_is_cut_off(monkeypatch, capsys):
    session = (TRACES / "claude_code_kvsankar_golden.jsonl").read_bytes()
    assert main(["show", _pipe_of(session)]) == 0
    assert "step 1" in capsys.readouterr().out
    monkeypatch.setattr(reader, "MAX_STREAM_BYTES", 1 << 20)
    path = _pipe_of(b"Thought: more\n" * 200_000)  # 2.8 MB of lines, none over the line cap
    with pytest.raises(TranscriptError, match=r"a stream longer than .* not read further"):
        reader.read_bytes(Path(path))


def test_a_chat_refusal_is_what_the_assistant_said_and_a_responses_usage_is_kept():
    data = json.loads((TRACES / "chat_pydantic_ai_tool_output_exchange.json").read_text())
    usage = data["response"]["usage"]
    (run,) = runs_from_bytes("exchange.json", json.dumps(data).encode())
    last = [e for e in run.events if e.type == "decision"][-1]
    assert (last.usage.input_tokens, last.usage.output_tokens, last.usage.estimated) == (
        usage["prompt_tokens"], usage["completion_tokens"], False)
    message = data["response"]["choices"][0]["message"]
    message["tool_calls"], message["refusal"] = None, "I can't help with that."
    (run,) = runs_from_bytes("exchange.json", json.dumps(data).encode())
    assert run.events[-1].answer == "(refused) I can't help with that."


def test_mini_swe_agent_2s_recorded_commands_and_return_codes_are_used():
    data = json.loads((TRACES / "mini_swe_agent_recorded_v2.traj.json").read_text())
    assistant = next(m for m in data["messages"] if m["role"] == "assistant")
    assistant["content"] = assistant["content"].replace("```mswea_bash_command", "```custom_format")
    output = data["messages"][data["messages"].index(assistant) + 1]
    output["extra"]["returncode"] = 2
    (run,) = runs_from_bytes("run.traj.json", json.dumps(data).encode())
    first = next(e for e in run.events if e.type == "decision")
    assert [a.args for a in first.actions] == [{"command": "ls"}]
    assert next(e for e in run.events if e.type == "observation").error is True


def test_a_mini_swe_agent_timeout_is_an_error():
    data = json.loads((TRACES / "mini_swe_agent_github_issue.traj.json").read_text())
    messages = data["messages"] if isinstance(data, dict) else data
    index = next(i for i, m in enumerate(messages) if m["role"] == "user" and m["content"].lstrip().startswith("<returncode>"))
    messages[index]["content"] = ("The last command <command>sleep 999</command> timed out and has been killed.\n"
                                  "The output of the command was:\n <output>\n\n</output>\n")
    (run,) = runs_from_bytes("run.traj.json", json.dumps(data).encode())
    observed = [e for e in run.events if e.type == "observation"]
    assert any(e.error and "timed out" in e.text for e in observed)


def test_importing_an_agent_tui_transcript_says_it_already_is_one(tmp_path, capsys):
    source = tmp_path / "session.jsonl"
    source.write_bytes((TRACES / "codex_kvsankar_golden.jsonl").read_bytes())
    assert main(["import", str(source)]) == 0
    imported = tmp_path / "session.agent-tui.jsonl"
    capsys.readouterr()
    for argv in (["import", str(imported)], ["import", str(imported), "-o", str(tmp_path / "copy.jsonl")],
                 ["import", str(imported), "--format", "jsonl", "-o", str(tmp_path / "copy.jsonl")]):
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == (
            f"agent-tui: {imported} is already an agent-tui transcript: show, replay, export and run --fork "
            "open it as it is (nothing was written)")
    assert not (tmp_path / "copy.jsonl").exists()


def test_utf16_with_a_byte_order_mark_is_read_as_windows_writes_it(capsys):
    text = (TRACES / "chat_pydantic_ai_tool_output_exchange.json").read_text()
    for encoding in ("utf-16", "utf-16-be"):
        data = text.encode(encoding) if encoding == "utf-16" else b"\xfe\xff" + text.encode(encoding)
        (run,) = runs_from_bytes("windows.json", data)
        assert run.events[-1].answer
    with pytest.raises(TranscriptError, match=r"^odd\.json: UTF-16 text that cannot be decoded"):
        runs_from_bytes("odd.json", b"\xff\xfe" + text.encode("utf-16-le")[:-1])


def test_claude_codes_own_api_error_is_not_the_answer_and_a_compaction_summary_is_not_the_user():
    lines = [json.loads(line) for line in (TRACES / "claude_code_kvsankar_golden.jsonl").read_text().splitlines()]
    session = lines[0]["sessionId"]
    lines.insert(1, {"type": "user", "isCompactSummary": True, "sessionId": session, "message": {
        "role": "user", "content": "This session is being continued from a previous conversation. Summary: ..."}})
    lines.append({"type": "assistant", "isApiErrorMessage": True, "sessionId": session, "message": {
        "id": "err1", "model": "<synthetic>", "role": "assistant",
        "content": [{"type": "text", "text": "API Error: 529 {\"type\":\"overloaded_error\"}"}]}})
    (run,) = runs_from_bytes("session.jsonl", "".join(json.dumps(line) + "\n" for line in lines).encode())
    notes = [(e.kind, e.text) for e in run.events if e.type == "note"]
    assert ("system", "the conversation before this point was compacted: This session is being continued from a "
                      "previous conversation. Summary: ...") in notes
    assert ("system", 'Claude Code: API Error: 529 {"type":"overloaded_error"}') in notes
    assert not any(kind == "user" for kind, _ in notes)
    assert run.header.task_text == lines[0]["message"]["content"]
    answered = [e for e in run.events if e.type == "run_ended"]
    assert not answered or "API Error" not in (answered[0].answer or "")


def test_export_format_given_an_input_format_points_to_from(capsys):
    source = str(TRACES / "codex_kvsankar_golden.jsonl")
    with pytest.raises(SystemExit) as exit_:
        main(["export", source, "--format", "codex"])
    assert exit_.value.code == 2
    assert "'codex' is an input format: give it as --from codex" in capsys.readouterr().err
    assert main(["export", source, "--from", "codex", "--format", "chat"]) == 0


@pytest.mark.parametrize("output, text, error", [
    (json.dumps({"output": "ls: cannot access 'x': No such file", "metadata": {"exit_code": 2, "duration_seconds": 0.1}}),
     "ls: cannot access 'x': No such file", True),
    (json.dumps({"output": "a.txt\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}), "a.txt\n", False),
    ("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nboom", "Exit code: 1\nWall time: 0.2 seconds\nOutput:\nboom", True),
    ("Chunk ID: 7\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nok", None, False),
], ids=["json-failed", "json-ok", "exit-code-line", "process-exited"])
def test_codex_shell_exit_codes_say_whether_a_call_failed(output, text, error):
    lines = [json.loads(line) for line in (TRACES / "codex_kvsankar_golden.jsonl").read_text().splitlines()]
    result = next(line for line in lines if line["payload"].get("type") == "function_call_output")
    result["payload"]["output"] = output
    (run,) = runs_from_bytes("rollout.jsonl", "".join(json.dumps(line) + "\n" for line in lines).encode())
    observed = next(e for e in run.events if e.type == "observation")
    assert observed.error is error and observed.text == (output if text is None else text)


@pytest.mark.parametrize("name", ["claude_code_kvsankar_golden.jsonl", "chat_pydantic_ai_tool_output_exchange.json",
                                  "swe_agent_test_repo.traj", "inspect_ai_message_deduplication.eval"])
def test_a_lone_surrogate_becomes_a_replacement_character_in_every_command(name, tmp_path, capsys):
    """Half an emoji (a JavaScript tool cut a string) is a `\\ud83d` escape with no pair: UTF-8 cannot hold it."""
    import io
    import zipfile

    data = (TRACES / name).read_bytes()
    if name.endswith(".eval"):
        source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for member in source.namelist():
                body = source.read(member)
                if member.startswith("samples/"):
                    body = body.replace(b'"Guess the number"', b'"Guess the \\ud83d number \\udc00"')
                archive.writestr(member, body)
        data = out.getvalue()
    else:
        text = data.decode()
        first = next(m for m in ('"content":"', '"content": "') if m in text)
        data = text.replace(first, first + "half \\ud83d emoji \\udc00 ", 1).encode()
    path = tmp_path / name
    path.write_bytes(data)
    assert main(["show", str(path)]) == 0
    assert "\ufffd" in capsys.readouterr().out
    for argv in (["export", str(path)], ["export", str(path), "--format", "chat"],
                 ["import", str(path), "-o", str(tmp_path / "out.jsonl")]):
        assert main(argv) == 0, argv
    assert main(["show", str(tmp_path / "out.jsonl")]) == 0
    assert "\ufffd" in capsys.readouterr().out
