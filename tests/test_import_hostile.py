"""Hostile foreign traces and the commands that open them: each is refused with one line naming the
file (exit 2), in bounded time and memory, and nothing the user owns is destroyed."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from engine.stored.importers import runs_from_bytes
from engine.stored.transcript import TranscriptError
from tui.cli import main

TRACES = Path(__file__).resolve().parent / "data" / "traces"


def _eval_of_many_members(members: int, size: int) -> bytes:
    """An .eval archive whose samples are each under the 32 MiB member cap but add up to far more."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
        body = b'{"messages": [' + b" " * size + b"]}"
        for n in range(1, members + 1):
            archive.writestr(f"samples/{n}_epoch_1.json", body)
    return out.getvalue()


def test_an_eval_whose_samples_add_up_to_a_zip_bomb_is_refused_before_unpacking():
    data = _eval_of_many_members(24, 16 << 20)  # 384 MiB of samples in an archive under 2 MB
    assert len(data) < 2 << 20
    with pytest.raises(TranscriptError, match=r"^bomb\.eval: the samples in the archive unpack to 384 MiB, .*zip bomb"):
        runs_from_bytes("bomb.eval", data)


def test_an_eval_of_ordinary_ratio_is_still_read():
    data = (TRACES / "inspect_ai_message_deduplication.eval").read_bytes()
    (run,) = runs_from_bytes("log.eval", data)
    assert run.events[-1].outcome == "answer"


def test_export_refuses_to_write_over_the_file_it_exports(tmp_path, capsys):
    source = tmp_path / "run.traj"
    original = (TRACES / "swe_agent_test_repo.traj").read_bytes()
    source.write_bytes(original)
    link = tmp_path / "link.traj"
    link.symlink_to(source)
    for out in (source, link):
        assert main(["export", str(source), "-o", str(out)]) == 2
        assert "is the file being exported" in capsys.readouterr().err
    assert main(["export", str(link), "--format", "chat", "-o", str(source)]) == 2
    assert source.read_bytes() == original
    assert main(["export", str(source), "-o", str(tmp_path / "report.md")]) == 0
    assert (tmp_path / "report.md").read_text().startswith("# Run report")


def test_export_chat_writes_c1_controls_as_escapes_that_read_back_the_same(tmp_path, capsys):
    hostile = "red\x1b[31m csi\x9b2J del\x7f line\u2028sep \u202eright to left\u2066"
    source = tmp_path / "chat.json"
    source.write_text(json.dumps([{"role": "user", "content": hostile}, {"role": "assistant", "content": "ok " + hostile}]))
    assert main(["export", str(source), "--format", "chat"]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x9b\x7f\u2028\u202e\u2066")
    messages = json.loads(out)["messages"]
    assert [m["content"] for m in messages] == [hostile, "ok " + hostile]


DIGITS = "9" * 5000


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("name, old, new", [
    ("chat_pydantic_ai_tool_output_exchange.json", '"created": 1746142585', f'"created": {DIGITS}'),
    ("claude_code_kvsankar_golden.jsonl", '"input_tokens":100', f'"input_tokens":{DIGITS}'),
    ("codex_kvsankar_golden.jsonl", '"input_tokens":150', f'"input_tokens":{DIGITS}'),
    ("swe_agent_test_repo.traj", '"execution_time": 0.', f'"execution_time": {DIGITS}.'),
    ("inspect_ai_browser_excerpt.json", '"epoch": 1', f'"epoch": {DIGITS}'),
    ("mini_swe_agent_local.traj.json", '"role": "system"', f'"n": -{DIGITS}, "role": "system"'),
    ("claude_code_kvsankar_golden.jsonl", '"input_tokens":100', '"input_tokens":1e400'),
    ("codex_kvsankar_golden.jsonl", '"output_tokens":75', '"output_tokens":NaN'),
], ids=["chat", "claude-code", "codex", "swe-agent", "inspect", "mini-swe-agent", "1e400", "NaN"])
def test_numbers_python_cannot_hold_are_kept_as_text_not_a_traceback(name, old, new, capsys):
    text = (TRACES / name).read_text()
    assert old in text
    for run in runs_from_bytes(name, text.replace(old, new, 1).encode()):
        assert run.events
    assert main(["export", str(TRACES / name), "--format", "chat"]) == 0  # the file itself, unchanged


def test_tool_arguments_with_huge_numbers_survive_into_a_chat_export(tmp_path, capsys):
    source = tmp_path / "chat.json"
    arguments = '{"big": ' + DIGITS + ', "inf": 1e400, "nan": NaN}'
    source.write_text(json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}]))
    assert main(["export", str(source), "--format", "chat"]) == 0
    document = _strict_json(capsys.readouterr().out)
    call = document["messages"][1]["tool_calls"][0]["function"]
    assert _strict_json(call["arguments"]) == {"big": DIGITS, "inf": "1e400", "nan": "NaN"}


def test_a_text_trace_whose_action_input_holds_a_huge_number_is_read():
    text = f'Question: q\nThought: t\nAction: calc\nAction Input: {{"x": {DIGITS}}}\nObservation: 1\nFinal Answer: 1\n'
    (run,) = runs_from_bytes("trace.txt", text.encode())
    assert run.events[-1].answer == "1"


def _chat_with_call(arguments: object, result: object = "done") -> str:
    return json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": result}])


def test_arguments_nested_too_deep_to_write_are_imported_as_text(tmp_path, capsys):
    from engine.stored.transcript import read_transcript

    nested = "[" * 300 + "]" * 300
    source = tmp_path / "deep.json"
    source.write_text(_chat_with_call(json.loads('{"x": ' + nested + "}"), json.loads(nested)))
    out = tmp_path / "deep.jsonl"
    assert main(["import", str(source), "-o", str(out)]) == 0
    (decision,) = [e for e in read_transcript(out).events if e.type == "decision"]
    assert decision.actions[0].args == {}
    assert decision.actions[0].args_error.endswith('{"x": ' + nested + "}")
    observed = next(e for e in read_transcript(out).events if e.type == "observation")
    assert observed.text.startswith("[[[[")  # a result of nested lists is shown, not dropped


def test_show_and_export_say_what_a_calls_unreadable_arguments_were(tmp_path, capsys):
    source = tmp_path / "bad_args.json"
    source.write_text(_chat_with_call('{"path": "/etc/hosts", oops'))
    assert main(["show", str(source)]) == 0
    out = capsys.readouterr().out
    assert '  unread   the arguments are not a JSON object: {"path": "/etc/hosts", oops' in out
    assert main(["export", str(source)]) == 0
    assert '{"path": "/etc/hosts", oops' in capsys.readouterr().out


def test_a_file_name_holding_escape_sequences_is_printed_without_them(tmp_path, capsys):
    source = tmp_path / "trace\x1b]0;OWNED\x07\x1b[2J.json"
    source.write_bytes((TRACES / "chat_pydantic_ai_tool_output_exchange.json").read_bytes())
    assert main(["import", str(source)]) == 0
    assert main(["export", str(source), "-o", str(tmp_path / "report\x1b[31m.md")]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out and "\x07" not in captured.out and "\x1b" not in captured.err
    assert "1 chat run:" in captured.out and "report: " in captured.err
    assert len(list(tmp_path.glob("trace*.agent-tui.jsonl"))) == 1
