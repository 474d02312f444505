"""The tools an ACP run offers, without an agent: a write's diff shown before approval, reads
kept within the session folder, each request answered once."""

from __future__ import annotations

import pytest

from engine.acp.items import Gate
from engine.acp.tools import READ, TERMINAL, WRITE, gate_tools
from engine.core.edits import edit_preview
from engine.core.tools import ToolError


def _tools(folder, gate):
    from engine.acp.served import Served

    served = Served(agent=None)
    tools = {t.name: t for t in gate_tools(folder, lambda kind: gate, lambda: False, lambda: served, {}.pop)}
    return tools, served


def test_a_write_shows_its_diff_against_the_file_before_approval(tmp_path):
    target = tmp_path / "note.txt"
    target.write_text("old line\n")
    preview = edit_preview(WRITE, {"path": str(target), "content": "new line\n"})
    assert preview is not None and preview.shows == "diff"
    assert "-old line" in preview.lines and "+new line" in preview.lines


def test_a_write_and_a_command_ask_by_default_and_a_read_does_not(tmp_path):
    tools, _ = _tools(tmp_path, Gate("read", {}))
    assert tools[WRITE].kind == "irreversible" and tools[TERMINAL].kind == "irreversible"
    assert tools[READ].kind == "ordinary"


def test_a_read_outside_the_session_folder_is_refused_and_the_agent_told(tmp_path):
    inside = tmp_path / "work"
    inside.mkdir()
    (tmp_path / "secret.txt").write_text("no")
    gate = Gate("read", {"path": str(tmp_path / "secret.txt")})
    tools, _ = _tools(inside, gate)
    with pytest.raises(ToolError, match="outside the session folder"):
        tools[READ].fn(path=str(tmp_path / "secret.txt"))
    with pytest.raises(Exception, match="outside the session folder"):
        gate.future.result(0)
    link = inside / "link.txt"
    link.symlink_to(tmp_path / "secret.txt")
    gate = Gate("read", {"path": str(link)})
    tools, _ = _tools(inside, gate)
    with pytest.raises(ToolError, match="outside"):
        tools[READ].fn(path=str(link))


def test_a_request_is_answered_once(tmp_path):
    gate = Gate("write", {"path": str(tmp_path / "a.txt"), "content": "x"})
    assert gate.answer("first") is True
    assert gate.answer("second") is False
    assert gate.future.result(0) == "first"


def test_a_command_runs_in_the_folder_and_its_terminal_answers_from_what_it_left(tmp_path):
    import asyncio

    gate = Gate("terminal", {"command": "sh", "args": ["-c", "pwd; exit 3"], "output_byte_limit": None})
    tools, served = _tools(tmp_path, gate)
    text = tools[TERMINAL].fn(command="sh", args=["-c", "pwd; exit 3"])
    assert str(tmp_path) in text and "(exit code 3)" in text
    terminal_id = gate.future.result(0).terminal_id
    out = asyncio.run(served.terminal_output("s", terminal_id))
    assert out.exit_status.exit_code == 3 and str(tmp_path) in out.output
