"""Ctrl+D (end of input) at the headless approval's reason or arguments prompt goes back
to the question instead of ending agent-tui with an EOFError traceback."""

from __future__ import annotations

import builtins
import io
from pathlib import Path

import pytest

from tui.cli import main


def typed(monkeypatch, *lines: str | None) -> list[str]:
    """The operator's lines, None for Ctrl+D; stdin is a terminal. Returns the prompts shown."""
    answers = iter(lines)
    prompts: list[str] = []

    def fake_input(prompt: str = "") -> str:
        prompts.append(prompt.split(">")[0].strip())
        line = next(answers)
        if line is None:
            raise EOFError
        return line

    monkeypatch.setattr(builtins, "input", fake_input)
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr("sys.stdin", tty)
    return prompts


@pytest.mark.parametrize(("first", "then", "code"), [("r", "a", 0), ("e", "x", 5)])
def test_end_of_input_at_a_second_prompt_asks_again(capsys, monkeypatch, tmp_path: Path, first, then, code):
    prompts = typed(monkeypatch, first, None, then)
    assert main(["run", "support", "--headless", "--out", str(tmp_path / "s.jsonl")]) == code
    assert "nothing decided (end of input)" in capsys.readouterr().out
    question = "[a]pprove, [A]pprove always, [r]eject, [e]dit, [x] abort"
    assert prompts[0] == question and prompts[2] == question and len(prompts) == 3


def test_ctrl_d_or_ctrl_c_at_a_prompt_says_the_end_on_a_line_of_its_own(capsys, monkeypatch, tmp_path: Path):
    """The prompt leaves the cursor after it: the end of the run is said on the next line, not
    after the prompt ("abort >   aborted ..." was one line)."""
    typed(monkeypatch)  # stdin a terminal
    for key, error in (("d", EOFError), ("c", KeyboardInterrupt)):
        def pressed(prompt: str = "", error: type[BaseException] = error) -> str:
            print(prompt, end="")  # as input() leaves the line: the prompt, no newline
            raise error

        monkeypatch.setattr(builtins, "input", pressed)
        assert main(["run", "support", "--headless", "--out", str(tmp_path / f"{key}.jsonl")]) == 5
        out = capsys.readouterr().out
        prompt_line = next(line for line in out.splitlines() if line.rstrip().endswith(">"))
        assert "aborted" not in prompt_line, (key, out)
        assert any(line.lstrip().startswith("aborted") for line in out.splitlines()), (key, out)
