"""The words a decision adds to the context, counted without writing its calls out, are the words
of its written text (`decision_text`), whatever its names, keys and values hold."""

from __future__ import annotations

import pytest

from engine.core.events import Action, DecisionMade
from engine.core.state import decision_text, decision_words

ODD = ["", "plain", "two words", "tab\there", "new\nline", "nbsp\u00a0in", "next\x85line", "ideo\u3000space",
       "line\u2028sep", "unit\x1fsep", "quote\"s", "back\\slash", "lone\ud800", "émoji🙂", " lead", "trail "]
VALUES = [*ODD, 0, -1.5, 1e300, float("nan"), True, None, [1, "a b"], {"k": "v w"}, [], ["wc", "-w", "f.txt"], [1, -2.5, None, True],
          [[1]], [{"k": 1}], *([text] for text in ODD), *(["a", text, 3] for text in ODD)]


@pytest.mark.parametrize("text", ODD)
def test_a_call_counts_the_words_it_is_written_with(text: str) -> None:
    calls = [
        Action(tool=text or "t", args={}),
        Action(tool="t", args={text or "k": text}),
        Action(tool="t", args={"a": 1, "b": text, "c": None}),
        Action(tool=f"t{text}", args={"k": "v"}),
        *(Action(tool="t", args={"k": value, "j": "x"}) for value in VALUES),
        Action(tool="t", args={"k": "v"}, args_error="not an object"),
    ]
    for action in calls:
        for thought, answer in [("", None), (f"I {text} think", None), (text, f"it is {text}")]:
            decision = DecisionMade(step=1, policy="p", thought=thought, actions=[action, action], answer=answer)
            assert decision_words(decision) == len(decision_text(decision).split()), (action, thought, answer)


def test_a_decision_written_raw_counts_its_raw_text() -> None:
    decision = DecisionMade(step=1, policy="p", thought="a", actions=[Action(tool="t", args={"k": "v"})], raw="Thought: a b\nAction: t")
    assert decision_words(decision) == 5 == len(decision_text(decision).split())


@pytest.mark.parametrize("text", ODD)
def test_the_words_of_a_decision_not_yet_made_are_those_of_its_written_text(text: str) -> None:
    """`written_words` counts the parts a decision is made of (what an import estimates its usage
    from) as `written_text` writes them."""
    from engine.core.state import written_text, written_words

    actions = [Action(tool="t", args={"k": text}), Action(tool=text or "t", args={"a": [text]}), Action(tool="t", args={}, args_error="x")]
    for raw, thought, answer in [(None, "", None), (None, f"I {text}", f"so {text}"), (f"raw {text}", "t", None)]:
        assert written_words(raw, thought, actions, answer) == len(written_text(raw, thought, actions, answer).split())
