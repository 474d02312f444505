"""One typed answer to an approval, applied by one function whoever answers: the cockpit's
dialogs, the headless prompt, the gateway and the `--approve all|none` answerers."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
from textual.app import App

from engine import Answer, Decision, Engine, EngineError
from engine.core.answers import auto_answer
from engine.core.operator import Operator, StaleApproval
from engine.core.state import PendingApproval
from tests.support.helpers import counting_run, types
from tui.screens.approval import ApprovalForm, ApprovalScreen
from tui.screens.forms import EditArgsScreen, ReasonScreen

pytestmark = pytest.mark.anyio


def decided(run) -> list[Any]:
    return [e for e in run.engine.events if e.type == "approval_decided"]


def test_each_answer_is_recorded_as_its_choice() -> None:
    cases = [
        (Answer.approve(), "approve"),
        (Answer.approve_always(), "approve_always"),
        (Answer.reject("too much"), "reject"),
        (Answer.edit({"amount": "3"}), "modify"),
        (Answer.abort(), "abort"),
    ]
    for answer, choice in cases:
        run = counting_run(Decision.act("t", "pay", amount=5))
        assert run.engine.step() == "awaiting_approval"
        run.engine.answer(answer)
        (event,) = decided(run)
        assert event.choice == choice and event.by == "operator"
    assert Answer.edit({"amount": 3}).args == {"amount": 3}
    assert Answer.reject("  ").reason == "no reason given"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Answer.approve().choice = "reject"  # type: ignore[misc]


def test_an_answer_says_what_it_does_in_the_operators_words() -> None:
    words = [a.what for a in (Answer.approve(), Answer.approve_always(), Answer.reject("r"), Answer.edit({}), Answer.abort())]
    assert words == ["approve", "approve always", "reject", "edit", "abort"]


def test_an_answer_to_another_approval_is_refused_and_nothing_runs() -> None:
    run = counting_run(Decision.act("t", "pay", amount=5))
    run.engine.step()
    seen = run.engine.state.pending
    other = PendingApproval(seen.step, seen.index, seen.tool, {"amount": 50}, seen.reason, seen.thought)
    with pytest.raises(StaleApproval, match=r"the call you answered \(pay, step 1\) is no longer waiting"):
        run.engine.answer(Answer.approve(), expected=other)
    assert run.world.calls == [] and decided(run) == []
    run.engine.answer(Answer.approve(), expected=seen)
    assert run.world.calls == [("pay", {"amount": 5})]


def test_an_answer_naming_the_operators_own_copy_of_the_pending_approval_applies() -> None:
    """The cockpit folds the events into a state of its own: the approval it shows is equal to
    the engine's pending one, never the same object, and answering it runs the call."""
    run = counting_run(Decision.act("t", "pay", amount=5))
    run.engine.step()
    copy = run.engine.state.copy().pending
    assert copy is not run.engine.state.pending
    run.engine.answer(Answer.approve(), expected=copy)
    assert run.world.calls == [("pay", {"amount": 5})]


def test_an_edit_is_validated_before_anything_is_recorded() -> None:
    run = counting_run(Decision.act("t", "pay", amount=5))
    run.engine.step()
    with pytest.raises(ValueError, match="amount"):
        run.engine.answer(Answer.edit({"amount": "lots"}))
    assert decided(run) == [] and run.engine.status == "awaiting_approval"
    run.engine.answer(Answer.edit({"amount": "3"}))
    assert run.world.calls == [("pay", {"amount": 3})] and decided(run)[0].args == {"amount": 3}


def test_an_answer_with_nothing_pending_is_an_engine_error() -> None:
    run = counting_run()
    with pytest.raises(EngineError):
        run.engine.answer(Answer.approve())


def test_approve_all_and_none_are_answerers_of_the_same_type() -> None:
    assert auto_answer("ask") is None
    everything, nothing = auto_answer("all"), auto_answer("none")
    assert isinstance(everything, Answer) and everything.choice == "approve" and everything.by == "auto (--approve all)"
    assert isinstance(nothing, Answer) and nothing.choice == "reject" and nothing.by == "auto (--approve none)"
    assert nothing.reason == "approvals are switched off for this run (--approve none)"
    run = counting_run(Decision.act("t", "pay", amount=5), approve="none")
    run.engine.step()
    assert types(run.engine.events) == ["decision", "approval_requested", "approval_decided", "observation"]
    assert run.engine.events[-1].text == "REJECTED: approvals are switched off for this run (--approve none)"


def test_the_operator_is_an_object_the_engine_holds_not_a_base_class() -> None:
    run = counting_run(Decision.act("t", "pay", amount=5))
    assert Engine.__mro__ == (Engine, object)
    assert isinstance(run.engine.operator, Operator) and run.engine.operator.run is run.engine
    source = inspect.getsource(inspect.getmodule(Operator))
    assert "self: Any" not in source


def test_the_old_operator_calls_still_answer() -> None:
    run = counting_run(Decision.act("t", "pay", amount=5), Decision.act("t", "pay", amount=6))
    run.engine.step()
    run.engine.approve(always=True)
    assert decided(run)[0].choice == "approve_always" and decided(run)[0].rule is not None


class Host(App[None]):
    """An app that shows one screen and keeps what it was dismissed with."""

    def __init__(self, screen: Any) -> None:
        super().__init__()
        self.shown = screen
        self.results: list[Any] = []

    def on_mount(self) -> None:
        self.push_screen(self.shown, self.results.append)


def pending_pay() -> PendingApproval:
    return PendingApproval(1, 0, "pay", {"amount": 5}, "irreversible tool", "pay it")


@pytest.mark.parametrize(
    ("key", "result"),
    [("a", Answer.approve()), ("A", Answer.approve_always()), ("r", ApprovalForm.REJECT), ("e", ApprovalForm.EDIT)],
)
async def test_the_approval_dialog_is_dismissed_with_a_typed_result(key: str, result: Any) -> None:
    app = Host(ApprovalScreen(pending_pay(), "Pay.", "irreversible"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
    assert app.results == [result]


async def test_the_reason_form_is_dismissed_with_a_rejection() -> None:
    app = Host(ReasonScreen("pay"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*"too much", "enter")
        await pilot.pause()
    assert app.results == [Answer.reject("too much")]


async def test_the_edit_form_is_dismissed_with_an_edit(tmp_path: Path) -> None:
    run = counting_run(Decision.act("t", "pay", amount=5))
    run.engine.step()
    tool = run.engine.tools["pay"]
    app = Host(EditArgsScreen(tool, {"amount": 5}, run.engine.check_edit))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("backspace", "3", "ctrl+r")
        await pilot.pause()
    assert app.results == [Answer.edit({"amount": 3})]


class Answerer:
    """Whatever the headless prompt answers (an engine, the gateway's runs): keeps the answers."""

    ask_again: frozenset[tuple[int, int]] = frozenset()

    def __init__(self) -> None:
        self.state = type("State", (), {"pending": pending_pay()})()
        self.answers: list[Answer] = []

    def answer(self, answer: Answer) -> None:
        self.answers.append(answer)


@pytest.mark.parametrize(
    ("typed", "answer"),
    [
        (["a"], Answer.approve()),
        (["A"], Answer.approve_always()),
        (["r", "too much"], Answer.reject("too much")),
        (["e", '{"amount": 3}'], Answer.edit({"amount": 3})),
        (["x"], Answer.abort()),
    ],
)
def test_the_headless_prompt_answers_with_a_typed_answer(monkeypatch, capsys, typed: list[str], answer: Answer) -> None:
    import builtins
    import io

    from tui.cli.run import _ask_on_terminal

    lines = iter(typed)
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(lines))
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr("sys.stdin", tty)
    answerer = Answerer()
    assert _ask_on_terminal(answerer)
    assert answerer.answers == [answer]
