"""One description of an event: the transcript pane, the plain log, the Markdown report
and the replay markers say the same words, and a tool call is written one way."""

from __future__ import annotations

import pytest

from engine.core.events import Action, ApprovalRequested, DecisionMade, Header, Note, PolicySwapped, RunEnded
from engine.stored.markers import marker_for
from tui.export import markdown_report
from tui.plain import event_lines
from tui.widgets.blocks import event_blocks

HEADER = Header(scenario="s", task="t", task_text="do it", policy="good")


def _views(event) -> tuple[str, str, str, str]:  # type: ignore[no-untyped-def]
    """(pane, plain, Markdown, marker) words of `event`, each as one text."""
    pane = "\n".join(f"{b.label} {b.text}" for b in event_blocks(event))
    plain = "\n".join(event_lines(event))
    report = markdown_report(HEADER, [event])
    marker = marker_for(0, event)
    return pane, plain, report, marker.label if marker else ""


@pytest.mark.parametrize(
    ("outcome", "words"),
    [("answer", "answer after 3 steps"), ("stopped", "stopped after 3 steps"), ("handed_off", "handed-off after 3 steps")],
)
def test_every_view_words_an_outcome_the_same(outcome: str, words: str) -> None:
    end = RunEnded(outcome=outcome, reason="final answer" if outcome == "answer" else "repetition", step=3, answer="42")  # type: ignore[arg-type]
    for view in _views(end):
        assert words in view, view


@pytest.mark.parametrize(("kind", "label"), [("user", "user"), ("system", "system"), ("subagent", "sub-agent"), ("unrecognised", "unmapped")])
def test_every_view_labels_a_note_the_same(kind: str, label: str) -> None:
    pane, plain, report, _ = _views(Note(step=1, kind=kind, text="the note"))  # type: ignore[arg-type]
    assert pane.lower().startswith(label) and plain.strip().startswith(label), (pane, plain)
    assert f"**{label.capitalize()}" in report, report


def test_a_tool_call_is_written_one_way() -> None:
    args = {"path": "café/notes.txt", "depth": 2, "filter": {"kind": ["a", "b"]}}
    call = 'read_file(path="café/notes.txt", depth=2, filter={"kind": ["a", "b"]})'
    assert Action(tool="read_file", args=args).render() == call
    decision = DecisionMade(step=1, policy="good", actions=[Action(tool="read_file", args=args)])
    pane, plain, report, _ = _views(decision)
    assert call in pane and call in plain and f"`{call}`" in report
    asked = ApprovalRequested(step=1, index=0, tool="read_file", args={"path": "café"}, reason="reads")
    for view in _views(asked):
        assert 'read_file(path="café") needs approval (reads)' in view, view


def test_every_view_words_a_policy_swap_the_same() -> None:
    for view in _views(PolicySwapped(step=2, old="stuck", new="good")):
        assert "stuck → good from step 2" in view.replace("\\", ""), view
