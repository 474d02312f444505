"""What a model or a trace writes in the text format, read with nothing lost and within bounds:
an action's JSON object through the same reader as imported JSON (1e400 and NaN kept as text,
a lone surrogate replaced), a lone surrogate never reaching the terminal, and arguments in
Python's literal syntax parsed only while their tree stays small."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core import parse
from engine.core.parse import MAX_LITERAL_PARTS, arguments_from_text, parse_decision_text
from engine.core.text import clean, visible

ROOT = Path(__file__).resolve().parent.parent
HOSTILE_JSON = '{"x": 1e400, "s": "\\ud800", "n": NaN, "big": 1' + "0" * 5000 + "}"


def test_an_actions_json_object_keeps_what_python_json_would_lose_or_break_on() -> None:
    args = arguments_from_text(HOSTILE_JSON, ["x"])
    assert args == {"x": "1e400", "s": "\ufffd", "n": "NaN", "big": "1" + "0" * 5000}
    parsed = parse_decision_text(f"Thought: t\nAction: calc({HOSTILE_JSON})", {})
    assert parsed.actions[0].args["s"] == "\ufffd" and parsed.actions[0].args["x"] == "1e400"


@pytest.mark.parametrize("form", ["Action: calc({json})", "Action: calc\nAction Input: {json}"], ids=["react", "langchain"])
def test_show_export_and_import_of_a_text_trace_with_a_lone_surrogate(tmp_path: Path, form: str) -> None:
    """Before, `show` and `export` ended in a UnicodeEncodeError traceback, and `import` wrote
    1e400 and NaN as null."""
    trace = tmp_path / "trace.txt"
    trace.write_text(f"Question: q\nThought: t\n{form.format(json=HOSTILE_JSON)}\nObservation: o\nFinal Answer: a\n")
    agent_tui = [sys.executable, "-m", "tui.cli"]
    shown = subprocess.run([*agent_tui, "show", str(trace)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert 'calc(x="1e400", s="\ufffd", n="NaN"' in shown.stdout, shown.stdout
    exported = subprocess.run([*agent_tui, "export", str(trace)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert exported.returncode == 0 and "Traceback" not in exported.stderr, exported.stderr
    out = tmp_path / "run.jsonl"
    done = subprocess.run([*agent_tui, "import", str(trace), "-o", str(out)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert '"x":"1e400"' in out.read_text() and '"n":"NaN"' in out.read_text()


def test_a_lone_surrogate_is_replaced_where_text_is_shown() -> None:
    """No terminal and no UTF-8 output can take one: `clean` replaces it, `visible` names it."""
    assert clean("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert visible("a\udc00b") == "a<U+DC00>b"
    assert visible("a\udc00b", one_line=True) == "a<U+DC00>b"
    assert clean("plain text") == "plain text"


def test_arguments_of_too_many_parts_stay_one_string_and_are_never_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """400,000 `a=1` made Python's parser build a tree of a gigabyte; past MAX_LITERAL_PARTS
    the text is kept as the first parameter's string without parsing it."""
    parsed_sizes: list[int] = []
    real_parse = ast.parse

    def counted(source: str, *args: object, **kwargs: object) -> ast.AST:
        parsed_sizes.append(len(source))
        return real_parse(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parse.ast, "parse", counted)
    many = ", ".join(f"a{i}=1" for i in range(MAX_LITERAL_PARTS + 2))  # one comma more than the bound
    assert arguments_from_text(many, ["first"]) == {"first": many}
    assert parsed_sizes == []
    within = ", ".join(f"a{i}=1" for i in range(MAX_LITERAL_PARTS + 1))  # as many commas as the bound
    assert arguments_from_text(within, ["first"]) == {f"a{i}": 1 for i in range(MAX_LITERAL_PARTS + 1)}
    assert len(parsed_sizes) == 1
    text = "path='notes.txt', body='" + "x, " * 50_000 + "'"  # commas inside a string count too: kept whole
    assert arguments_from_text(text, ["path"]) == {"path": text}
