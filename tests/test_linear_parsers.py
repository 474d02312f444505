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


def test_a_step_that_grows_a_line_at_a_time_is_built_in_linear_time() -> None:
    """A text trace of 300,000 `Thought:` lines took 56 s: each line copied the step's whole
    thought (and raw text) to add itself. Half a million parts now join once, when read."""
    out = finishes(
        """
        from engine.stored.importers.build import Step
        step = Step()
        for _ in range(500_000):
            step.add_thought("a")
            step.add_reply("b")
            step.add_raw("c")
        print(len(step.thought), len(step.reply), len(step.raw))
        """
    )
    assert out == "999999 999999 999999"


def test_a_trace_of_many_actions_then_their_observations_is_read_in_linear_time() -> None:
    """Each `Action:` asked whether the step's calls all had results, and each `Observation:`
    which call was the first without one, by going over every call of the step."""
    out = finishes(
        """
        from engine.stored.importers import runs_from_bytes
        n = 100_000
        text = "Question: q\\n" + "Thought: t\\n" + "Action: look[x]\\n" * n + "Observation: o\\n" * n + "Final Answer: a\\n"
        (run,) = runs_from_bytes("trace.txt", text.encode(), "react")
        print(sum(len(e.actions) for e in run.events if e.type == "decision"), sum(e.type == "observation" for e in run.events))
        """
    )
    assert out == "100000 100000"


def test_results_that_name_no_call_find_theirs_without_going_over_every_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result without a call id goes to the oldest call not yet answered (of its tool, when it
    names one). Each such result went over every step before (10,000 took 47 s); now the calls
    are kept in order and each answered one is passed over once."""
    from engine.core.events import Action
    from engine.stored.importers.build import Draft

    asked: list[int] = []
    listed = Draft.steps
    draft = Draft("log.json", "chat")
    draft.user("q")
    n = 3000
    for i in range(n):
        step = draft.new_step()
        step.actions.append(Action(tool="read" if i % 2 else "write", args={"i": i}))
        if i % 3 == 0:
            draft.note("system", "between")
    monkeypatch.setattr(Draft, "steps", lambda self: asked.append(1) or listed(self))  # what each result did before
    for i in range(1, n, 2):  # every read, by name, while the writes wait
        draft.result(None, f"read {i}", name="read")
    for i in range(0, n, 2):  # then the writes, naming no tool
        draft.result(None, f"wrote {i}")
    monkeypatch.undo()
    steps = draft.steps()
    assert [s.observations[0][1] for s in steps] == [f"{'read' if i % 2 else 'wrote'} {i}" for i in range(n)]
    assert asked == []
    draft.result(None, "one more")  # nothing open: kept as a note, as before
    assert draft.items[-1].kind == "unrecognised"
