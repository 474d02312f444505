"""Text parsers take time linear in their input: a model's reply in the text format (up to the
16 MB a reply may be) and an imported text trace (LangChain's coloured console log) that an
adversary shapes to make a pattern rescan the rest of the text from every line. Each input here
took minutes to hours before (the time grew with the square of its size); a hang guard, not a
timing threshold, catches that: the work runs in a child process that must finish at all."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUARD_SECONDS = 120  # the fixed parsers need about a second; the old ones needed hours


def finishes(code: str) -> str:
    """Run `code` in a child interpreter; its stdout, or a failure if it does not finish."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=GUARD_SECONDS, cwd=ROOT
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish within {GUARD_SECONDS} s: the parser is not linear in its input")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    "text",
    [
        '"Action: lookup(\\n" * 200_000',  # many heads, no closing parenthesis
        '"\\n" * 2_000_000 + "Action: lookup("',  # blank lines before a line that is not an action
        '" \\n" * 1_000_000 + "Thought x"',
        '"Final Answer\\n" * 200_000',
    ],
    ids=["unclosed-calls", "blank-lines", "blank-space-lines", "answers-without-colon"],
)
def test_a_hostile_text_decision_is_read_in_linear_time(text: str) -> None:
    out = finishes(
        f"""
        from engine.core.parse import parse_decision_text
        parsed = parse_decision_text({text}, {{"lookup": ["key"]}})
        print(parsed.error is not None, len(parsed.actions))
        """
    )
    assert out == "True 0"


def test_the_text_format_still_reads_calls_over_several_lines() -> None:
    from engine.core.parse import parse_decision_text

    parsed = parse_decision_text('Thought: go\nAction: lookup(key="a",\n  n=2)  \nmore text', {"lookup": ["key", "n"]})
    assert [(a.tool, a.args) for a in parsed.actions] == [("lookup", {"key": "a", "n": 2})]
    parsed = parse_decision_text("Thought: go\nAction: lookup(1)\nthen (x)\n", {"lookup": ["key"]})
    assert parsed.actions[0].args == {"key": "1)\nthen (x"}, "to the last ')' that ends a line, as before"
    assert parse_decision_text("  Thought: t\n\n  Final Answer: 42\n", {}).answer == "42"


@pytest.mark.parametrize(
    "body",
    ['"\\x1b[32;1m\\x1b[1;3m" * 80_000', '"\\x1b[36;1m\\x1b[1;3mx\\n" * 80_000'],
    ids=["heads-without-reset", "lines-without-reset"],
)
def test_a_coloured_console_log_without_resets_is_read_in_linear_time(body: str) -> None:
    out = finishes(
        f"""
        from engine.stored.importers import runs_from_bytes
        from engine.stored.transcript import TranscriptError
        text = "Question: q\\nThought: t\\nAction: lookup[x]\\n" + {body}
        try:
            runs = runs_from_bytes("log.txt", text.encode(), "langchain")
            print("read", len(runs))
        except TranscriptError as exc:
            print("refused")
        """
    )
    assert out in ("read 1", "refused")
