"""The transcript pane on its own: what each event draws, hostile text, folding,
following the newest line, reset to a prefix, streaming."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from engine.core.events import (
    Action,
    ApprovalDecided,
    ApprovalRequested,
    BudgetExhausted,
    BudgetExtended,
    BudgetWarning,
    DecisionMade,
    Header,
    Observed,
    PolicyFailed,
    PolicySwapped,
    RunEnded,
)
from engine.core.text import clean
from tui.widgets.blocks import safe_text as _text
from tui.widgets.transcript import TranscriptPane
from tui.widgets.wrap import block_lines

pytestmark = pytest.mark.anyio

HEADER = Header(
    scenario="support",
    task="return-1187",
    task_text="The headphones from order 1187 are broken. I want to return them.",
    policy="scripted",
)
SIZE = (100, 30)


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="transcript")


def decision(step: int, thought: str = "I check the order.", tool: str = "get_order_status", **args: object) -> DecisionMade:
    return DecisionMade(
        step=step, policy="scripted", thought=thought, actions=[Action(tool=tool, args=args or {"order_id": "1187"})]
    )


def observed(step: int, text: str, error: bool = False) -> Observed:
    return Observed(step=step, index=0, tool="get_order_status", text=text, error=error, executed=not error)


def long_text(lines: int) -> str:
    return "\n".join(f"row {i}" for i in range(lines))


def all_rows(pane: TranscriptPane) -> list[str]:
    """Every content row's text, by scrolling the pane over them."""
    height = pane.size.height
    total = pane.virtual_size.height
    rows: list[str] = []
    saved = pane.scroll_offset.y
    for top in range(0, total, height):
        pane.scroll_to(y=top, animate=False)
        offset = pane.scroll_offset.y
        rows[offset:] = [pane.render_line(y).text.rstrip() for y in range(min(height, total - offset))]
    pane.scroll_to(y=saved, animate=False)
    return rows


def find(rows: list[str], needle: str) -> int:
    matches = [i for i, row in enumerate(rows) if needle in row]
    assert matches, f"{needle!r} not in {rows}"
    return matches[0]


async def test_each_kind_of_event_draws_its_words() -> None:
    events = [
        decision(1, "First I check whether the order was delivered."),
        observed(1, "1187 — delivered, delivery 26 October"),
        decision(2, "It was delivered. I open a return request.", "open_return_request"),
        ApprovalRequested(step=2, index=0, tool="open_return_request", args={"order_id": "1187"}, reason="irreversible"),
        ApprovalDecided(step=2, index=0, choice="reject", reason="wait for the photo"),
        observed(2, "rejected by the operator: wait for the photo", error=True),
        ApprovalDecided(step=3, index=0, choice="modify", args={"order_id": "1188"}),
        PolicySwapped(step=3, old="scripted", new="human"),
        PolicyFailed(step=3, policy="human", message="no backend"),
        BudgetWarning(kind="tokens", used=1600, limit=2000),
        BudgetExhausted(kind="steps", used=5, limit=5),
        BudgetExtended(kind="steps", limit=10),
        DecisionMade(step=4, policy="human", answer="I opened request R-1."),
        RunEnded(outcome="answer", reason="final answer", step=4, answer="I opened request R-1."),
    ]
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, events)
        await pilot.pause()
        rows = all_rows(pane)
        assert pane.event_count == len(events)
        assert rows[0].split() == "Task The headphones from order 1187 are broken. I want to return them.".split()
        assert rows[find(rows, "First I check")].split()[:2] == ["1", "Thought"]
        assert rows[find(rows, "get_order_status(")].split() == ["Action", 'get_order_status(order_id="1187")']
        assert rows[find(rows, "26 October")].split()[0] == "Observe"
        assert rows[find(rows, "It was delivered")].split()[:2] == ["2", "Thought"]
        assert "needs approval (irreversible)" in rows[find(rows, "Approval ")]
        assert rows[find(rows, "Rejected")].split()[1:] == "rejected by operator: wait for the photo".split()
        assert rows[find(rows, "rejected by the operator")].split()[0] == "Error"
        assert 'arguments edited and approved by operator: {"order_id": "1188"}' in rows[find(rows, "Edited")]
        assert "scripted → human from step 3" in rows[find(rows, "Policy ")]
        assert "policy human: no backend" in rows[find(rows, "Failed")]
        assert "tokens at 1600 of 2000" in rows[find(rows, "tokens at")]
        assert "steps limit reached: 5 of 5" in rows[find(rows, "limit reached")]
        assert "steps limit raised to 10" in rows[find(rows, "raised")]
        rule = find(rows, "run ended: answer after 4 steps")
        assert rows[rule].startswith("── run ended") and rows[rule].endswith("───")
        assert len(rows) == rule + 1, "the answer is shown once, in its step, not again after the rule"
        assert [row.split()[:2] for row in rows].count(["4", "Answer"]) == 1


async def test_styles_differ_by_kind() -> None:
    events = [decision(1), observed(1, "fine"), observed(1, "it failed", error=True), ApprovalDecided(step=1, index=0, choice="reject")]
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, events)
        await pilot.pause()

        def text_style(needle: str):
            y = find(all_rows(pane), needle)
            return [segment.style for segment in pane.render_line(y) if needle in segment.text][0]

        thought, action = text_style("I check the order."), text_style("get_order_status(")
        observe, error, rejected = text_style("fine"), text_style("it failed"), text_style("rejected by")
        assert thought.italic and not action.italic
        assert action.bold and not observe.bold
        assert error.color != observe.color
        assert rejected.color == error.color and rejected.bold


@pytest.mark.parametrize(
    "hostile",
    [
        "[bold]x[/]",
        "[@click=app.quit]q[/]",
        "[/",
        "[/] [bold",
        "\x1b[31mred\x1b[0m",
        "\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
        "bell\x07bell",
        "\x1b]0;title\x1b\\after",
    ],
)
async def test_hostile_text_is_data(hostile: str) -> None:
    events = [
        decision(1, f"thought {hostile}", "get_order_status", order_id=hostile),
        observed(1, f"observation {hostile}"),
        ApprovalDecided(step=1, index=0, choice="reject", reason=f"reason {hostile}"),
    ]
    messages = []
    app = PaneApp()
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, events)
        await pilot.pause()
        rows = all_rows(pane)
        shown = clean(hostile)
        assert rows[find(rows, "thought ")].endswith(f"thought {shown}".rstrip())
        assert rows[find(rows, "observation ")].endswith(f"observation {shown}".rstrip())
        assert rows[find(rows, "reason ")].endswith(f"reason {shown}".rstrip())
        text = "\n".join(rows)
        assert "\x1b" not in text and "\x07" not in text
        for y in range(pane.size.height):
            for segment in pane.render_line(y):
                assert not (segment.style and segment.style.meta), "no click actions in untrusted text"
        await pilot.click(TranscriptPane, offset=(20, 2))
        await pilot.pause()
        assert app.is_running
        assert not [m for m in messages if type(m).__name__ in ("ExitApp", "Quit")]


def test_text_cleaning_matches_engine_clean() -> None:
    samples = [chr(code) for code in range(0, 0x3100)] + ["a\tb", "x\r\ny", "ok — fine", "a\nb", "\u202eabc", ""]
    for sample in samples:
        text = f"pre {sample} post"
        assert _text(text) == clean(text).expandtabs(4), repr(sample)


def test_wrapping_keeps_every_character() -> None:
    text = "alpha beta gamma " * 20 + "x" * 250 + " 宽字符" * 30
    for width in (12, 37, 80):
        lines = block_lines(text, width)
        from rich.cells import cell_len

        assert all(cell_len(line) <= width for line in lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")


async def test_long_lines_wrap_under_the_text_column() -> None:
    words = " ".join(f"word{i}" for i in range(60))
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, [decision(1, words)])
        await pilot.pause()
        rows = all_rows(pane)
        first = find(rows, "word0 ")
        column = rows[first].index("word0")
        continuation = rows[first + 1]
        assert continuation[:column].strip() == ""
        assert continuation[column:].startswith("word")
        assert " ".join(" ".join(r.split()[2:] if i == 0 else r.split()) for i, r in enumerate(rows[first : first + 4]) if r).startswith(words[:200])


async def test_long_observation_folds_and_expands() -> None:
    events = [decision(1), observed(1, long_text(40)), decision(2), observed(2, long_text(30))]
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, events)
        await pilot.pause()
        rows = all_rows(pane)
        assert "row 4" in "\n".join(rows) and "row 5" not in "\n".join(rows)
        assert "… 35 more lines (o to expand)" in rows[find(rows, "35 more lines")]
        assert "… 25 more lines (o to expand)" in rows[find(rows, "25 more lines")]
        folded_height = pane.virtual_size.height

        pane.focus()
        await pilot.press("o")
        await pilot.pause()
        rows = all_rows(pane)
        assert "row 39" in "\n".join(rows) and "row 29" in "\n".join(rows)
        assert not [r for r in rows if "more lines" in r]
        assert pane.virtual_size.height == folded_height + (40 - 6) + (30 - 6)

        await pilot.press("o")
        await pilot.pause()
        assert pane.virtual_size.height == folded_height

        pane.scroll_to(y=0, animate=False)
        await pilot.pause()
        fold_row = find(all_rows(pane), "35 more lines")
        await pilot.click(TranscriptPane, offset=(30, fold_row - pane.scroll_offset.y))
        await pilot.pause()
        rows = all_rows(pane)
        assert "row 39" in "\n".join(rows)
        assert "25 more lines" in "\n".join(rows), "clicking expands only that observation"


async def test_huge_single_line_observation_is_folded() -> None:
    huge = "x" * 100_000
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, [decision(1), observed(1, huge)])
        await pilot.pause()
        rows = all_rows(pane)
        assert len(rows) == 1 + 2 + 6
        assert "more lines (o to expand)" in rows[-1]


async def test_follows_the_end_unless_scrolled_up() -> None:
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        events = [e for step in range(1, 31) for e in (decision(step), observed(step, f"result {step}"))]
        pane.reset(HEADER, events)
        await pilot.pause()
        assert pane.follow
        assert pane.scroll_offset.y == pane.max_scroll_y > 0

        events.append(decision(31, "the newest thought"))
        pane.reset(HEADER, events)
        await pilot.pause()
        assert pane.follow and pane.scroll_offset.y == pane.max_scroll_y
        assert "the newest thought" in "\n".join(pane.render_line(y).text for y in range(pane.size.height))

        pane.focus()
        await pilot.press("pageup")
        await pilot.pause()
        assert not pane.follow
        held = pane.scroll_offset.y
        assert held < pane.max_scroll_y
        events += [observed(31, "appended while scrolled up"), decision(32)]
        pane.reset(HEADER, events)
        await pilot.pause()
        assert pane.scroll_offset.y == held
        assert not pane.follow

        await pilot.press("end")
        await pilot.pause(0.5)
        assert pane.follow
        events.append(observed(32, "after returning to the end"))
        pane.reset(HEADER, events)
        await pilot.pause()
        assert pane.scroll_offset.y == pane.max_scroll_y
        assert "after returning to the end" in "\n".join(pane.render_line(y).text for y in range(pane.size.height))


async def test_reset_to_a_prefix_and_back() -> None:
    events = [e for step in range(1, 41) for e in (decision(step, f"thought {step}"), observed(step, long_text(step % 9)))]
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, events)
        await pilot.pause()
        full_height = pane.virtual_size.height
        full_rows = all_rows(pane)

        pane.reset(HEADER, events[:11])
        await pilot.pause()
        assert pane.event_count == 11
        rows = all_rows(pane)
        assert find(rows, "thought 6") and not [r for r in rows if "thought 7" in r]
        assert rows == full_rows[: len(rows)]

        pane.reset(HEADER, events)
        await pilot.pause()
        assert pane.virtual_size.height == full_height
        assert all_rows(pane) == full_rows

        other = events[:4] + [decision(3, "a different third step")]
        pane.reset(HEADER, other)
        await pilot.pause()
        rows = all_rows(pane)
        assert pane.event_count == 5
        assert find(rows, "a different third step") and not [r for r in rows if "thought 3" in r]

        pane.reset(HEADER, [*other, observed(3, "appended after a fork")])
        await pilot.pause()
        assert find(all_rows(pane), "appended after a fork")


async def test_stream_shows_a_partial_thought_until_a_decision() -> None:
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, [decision(1), observed(1, "done")])
        await pilot.pause()
        pane.stream("I am thinking about [bold]this")
        await pilot.pause()
        rows = all_rows(pane)
        assert rows[-1].split() == ["Thinking…", "I", "am", "thinking", "about", "[bold]this"]

        pane.stream("")
        await pilot.pause()
        assert not [r for r in all_rows(pane) if "Thinking" in r]

        pane.stream("partial")
        await pilot.pause()
        assert all_rows(pane)[-1].split() == ["Thinking…", "partial"]
        pane.reset(HEADER, [decision(1), observed(1, "done"), decision(2, "the decided thought")])
        await pilot.pause()
        rows = all_rows(pane)
        assert not [r for r in rows if "Thinking" in r]
        assert find(rows, "the decided thought")


async def test_width_change_rewraps() -> None:
    words = " ".join(f"w{i:02d}" for i in range(70))
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)
        pane.reset(HEADER, [decision(1, words)])
        await pilot.pause()
        wide = pane.virtual_size.height
        await pilot.resize_terminal(50, 30)
        await pilot.pause()
        assert pane.virtual_size.height > wide
        rows = all_rows(pane)
        assert all(len(r) <= 50 for r in rows)
        assert find(rows, "w69")
