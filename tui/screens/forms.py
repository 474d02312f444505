"""Forms the operator types into: a rejection reason, edited arguments, a take-over step.

Inputs are focused only inside these screens (a focused Input swallows the
cockpit's single-letter keys). Validation errors are shown in the form, which
stays open until the input is accepted or the operator cancels with escape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Select, Static

from engine.core.answers import Answer
from engine.core.events import Action
from engine.core.policy import Decision
from engine.core.text import clean
from engine.core.tools import Tool, schema_params, validate_args
from tui.screens.approval import KeyButton


ResultType = TypeVar("ResultType")


class FieldBox(VerticalScroll, can_focus=False):
    """A scrolling box of form fields; Tab goes to its fields, never to the (invisible) box."""


def value_text(value: Any) -> str:
    """An argument value as the operator edits it."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def form_fields(tool: Tool) -> list[dict[str, Any]]:
    """The fields of `tool`'s form (name, type, required, description): the top-level
    properties of its input schema when it has one (MCP tools), else its `params`."""
    if tool.input_schema is not None:
        return schema_params(tool.input_schema)
    return [p.info() for p in tool.params]


FOCUS_MARK = "> "
"""Before the label of the field that has focus: focus told in the terminal's text, not only by colour."""


class FieldLabel(Label):
    """A field's label, with `> ` before it while its field has focus (`mark_focus`);
    the other labels start at the margin, their text as given."""

    def __init__(self, text: str | Text, *, field_id: str, classes: str = "") -> None:
        self.text = Text(text) if isinstance(text, str) else text
        self.field_id = field_id
        self.marked = False
        super().__init__(self._shown(), markup=False, classes=classes)

    def _shown(self) -> Text:
        return Text(FOCUS_MARK, style="bold") + self.text if self.marked else self.text

    def mark(self, marked: bool) -> None:
        if marked != self.marked:
            self.marked = marked
            self.update(self._shown())  # a long label may wrap to one more line


class MarkedButton(Button):
    """A button whose label starts with `> ` while it has focus (room kept for it, so
    focus moving never changes the button's width)."""

    def __init__(self, label: str, **kwargs: Any) -> None:
        super().__init__(" " * len(FOCUS_MARK) + label, **kwargs)
        self.plain_label = label

    def on_focus(self) -> None:
        self.label = FOCUS_MARK + self.plain_label

    def on_blur(self) -> None:
        self.label = " " * len(FOCUS_MARK) + self.plain_label


class MarkedRadio(RadioButton):
    """`[x]` when chosen, `[ ]` when not, and `>` before the one the arrow keys are on
    while the set has focus: the choice readable in the terminal's text, not only by colour."""

    def render(self) -> Content:
        parent = self.parent
        cursor = ">" if self.has_class("-selected") and parent is not None and parent.has_focus else " "
        return Content.assemble((f"{cursor}[{'x' if self.value else ' '}] ", "bold"), self.label)


def mark_focus(screen: Screen[Any]) -> None:
    """Put `> ` before the label of the field that has focus (and its radio buttons' cursor)."""
    focused = screen.focused
    chain = {node.id for node in focused.ancestors_with_self} if focused is not None else set()
    for label in screen.query(FieldLabel):
        label.mark(label.field_id in chain)
    for radio in screen.query(MarkedRadio):
        radio.refresh()


def param_widgets(tool: Tool, args: dict[str, Any], *, compact: bool = False) -> list[Label | Input]:
    """One labelled Input per field of `tool`, filled from `args` (`compact`: one line each)."""
    widgets: list[Label | Input] = []
    for n, field in enumerate(form_fields(tool)):
        label = Text()
        label.append(clean(field["name"]), style="bold")
        label.append(f" ({clean(str(field['type']))}{'' if field['required'] else ', optional'})", style="dim")
        if field.get("description"):
            label.append(f"  {clean(field['description'])}", style="italic")
        widgets.append(FieldLabel(label, field_id=f"arg-{n}", classes="param-label"))
        value = clean(value_text(args.get(field["name"])))
        widgets.append(Input(value=value, id=f"arg-{n}", classes="param-input", compact=compact))
    return widgets


def read_params(tool: Tool, screen: ModalScreen) -> dict[str, Any]:
    """The form's values by field name; an empty field counts as not given.

    A scenario tool reads its text itself; for a tool checked against an input
    schema, a field whose type is not "string" is read as JSON (`3`, `true`,
    `["a", "b"]`) when it parses, and kept as text otherwise (the schema check
    then says what is wrong).
    """
    values: dict[str, Any] = {}
    for n, field in enumerate(form_fields(tool)):
        raw = screen.query_one(f"#arg-{n}", Input).value
        if raw.strip() == "":
            continue
        values[field["name"]] = _from_text(raw) if tool.input_schema is not None and field["type"] != "string" else raw
    return values


def _from_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class ErrorLine(Static):
    """Where a form or a dialog says what is wrong; hidden until it does."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, classes="form-error", markup=False)
        self.display = False

    def say(self, message: str) -> None:
        self.update(Text(clean(message)))
        self.display = bool(message)
        if message:
            self.call_after_refresh(self.scroll_visible)


class CancelScreen(ModalScreen[ResultType]):
    """A dialog that escape, or its Back button (`#cancel`), closes with None: nothing chosen."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class OneFieldScreen(CancelScreen[ResultType]):
    """A dialog of a heading, a line saying what to type, one field (focused) and two buttons:
    `submit_button`, which (as enter in the field does) hands the field's text to `submit`, and
    Back. With `error_id` an `ErrorLine` under the field says what `submit` refuses."""

    def __init__(
        self, dialog_id: str, heading: Text, prompt: str, entry: Input, submit_button: Button, error_id: str | None = None
    ) -> None:
        super().__init__()
        self.dialog_id = dialog_id
        self.heading = heading
        self.prompt = prompt
        self.entry = entry
        self.submit_button = submit_button
        self.error_id = error_id

    def compose(self) -> ComposeResult:
        with Vertical(id=self.dialog_id, classes="dialog"):
            yield Static(self.heading, markup=False)
            yield Label(self.prompt, markup=False)
            yield self.entry
            if self.error_id is not None:
                yield ErrorLine(id=self.error_id)
            with Horizontal(classes="buttons"):
                yield self.submit_button
                yield Button("Back", id="cancel")

    def on_mount(self) -> None:
        self.entry.focus()

    @on(Input.Submitted)
    @on(Button.Pressed)
    def _submitted(self, event: Input.Submitted | Button.Pressed) -> None:
        if isinstance(event, Button.Pressed) and event.button is not self.submit_button:
            return  # Back: CancelScreen's
        event.stop()
        self.submit(self.entry.value)

    def submit(self, text: str) -> None:
        """What the dialog does with the field's text (dismiss with a result, or say what is wrong)."""
        raise NotImplementedError


class ReasonScreen(OneFieldScreen[Answer | None]):
    """Ask why the action is rejected; the policy reads the reason as an observation.
    Dismissed with the rejection, or None when the operator goes back."""

    def __init__(self, tool: str) -> None:
        heading = Text("Reject ", style="bold")
        heading.append(clean(tool), style="bold reverse")
        super().__init__(
            "reason-dialog", heading, "Why? The policy reads this as the action's observation.",
            Input(placeholder="reason (enter to reject, escape to go back)", id="reason"),
            Button("Reject", variant="error", id="do-reject"),
        )

    def submit(self, text: str) -> None:
        self.dismiss(Answer.reject(text))


class EditArgsScreen(CancelScreen[Answer | None]):
    """Edit the pending action's arguments, validated against the tool's parameters;
    dismissed with the edit (its arguments cleaned), or None when the operator goes back.

    Enter never runs the action (it moves to the next field): only ctrl+r or
    a click on the button does, and only once an argument differs from what
    the policy proposed (to run it unchanged, approve it with `a`). `check`
    is the engine's `check_edit`: it returns the cleaned arguments or raises
    ValueError with a message, which is shown while the form stays open.
    """

    BINDINGS = [Binding("ctrl+r", "run_edited", "run with these", priority=True)]

    def __init__(self, tool: Tool, args: dict[str, Any], check: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        super().__init__()
        self.tool = tool
        self.args = args
        self.check = check
        self.proposed: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="edit-dialog", classes="dialog"):
            title = Text("Edit the arguments of ", style="bold")
            title.append(clean(self.tool.name), style="bold reverse")
            yield Static(title, markup=False)
            with FieldBox(id="edit-fields"):
                yield from param_widgets(self.tool, self.args)
            yield ErrorLine(id="edit-error")
            with Horizontal(classes="buttons"):
                yield KeyButton("ctrl+r Run with these", variant="warning", id="do-edit")
                yield KeyButton("esc Back", id="cancel")
            yield Label("enter: next field · ctrl+r: run with these arguments · escape: back", markup=False, classes="hint")

    def on_mount(self) -> None:
        self.proposed = read_params(self.tool, self)
        inputs = self.query(Input)
        if inputs:
            inputs.first().focus()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        mark_focus(self)

    @on(Input.Submitted)
    def _next_field(self, event: Input.Submitted) -> None:
        """Enter checks the form and moves on; it never runs the action."""
        event.stop()
        if self._checked() is not None:
            self.query_one("#edit-error", ErrorLine).say("Enter does not run it: ctrl+r runs with these arguments.")
        self.focus_next(Input)

    def _checked(self) -> dict[str, Any] | None:
        """The validated arguments, or None after saying what is wrong."""
        try:
            return self.check(read_params(self.tool, self))
        except ValueError as exc:
            self.query_one("#edit-error", ErrorLine).say(str(exc))
            return None

    @on(Button.Pressed, "#do-edit")
    def action_run_edited(self) -> None:
        if read_params(self.tool, self) == self.proposed:
            self.query_one("#edit-error", ErrorLine).say(
                "Nothing is changed: change an argument, or go back (escape) and approve with a."
            )
            return
        clean_args = self._checked()
        if clean_args is not None:
            self.dismiss(Answer.edit(clean_args))


@dataclass
class TakeOver:
    """The operator's step: the decision to supply, and whether to keep control after it."""

    decision: Decision
    stay: bool


class TakeOverScreen(CancelScreen[TakeOver | None]):
    """Type the next thought and action (or a final answer) as the human policy."""

    def __init__(self, tools: list[Tool], *, stay: bool = False) -> None:
        super().__init__()
        self.tools = {t.name: t for t in tools}
        self.stay = stay

    def compose(self) -> ComposeResult:
        with Vertical(id="takeover-dialog", classes="dialog"):
            yield Static(Text("Take over: you decide the next step", style="bold"), classes="dialog-title", markup=False)
            yield FieldLabel("Thought", field_id="thought")
            yield Input(placeholder="what you are about to do and why", id="thought", compact=True)
            yield FieldLabel("Tool (or none, and write a final answer below)", field_id="tool")
            yield Select(
                [(Text(clean(name)), name) for name in self.tools],
                prompt="no tool: final answer",
                allow_blank=True,
                id="tool",
                compact=True,
            )
            yield FieldBox(id="takeover-args")
            yield FieldLabel("Final answer (when no tool is chosen)", field_id="answer")
            yield Input(placeholder="the answer that ends the run", id="answer", compact=True)
            with RadioSet(id="mode", compact=True):
                yield MarkedRadio("one step, then hand back", value=not self.stay, id="one-step")
                yield MarkedRadio("stay in control until I hand back (h or p)", value=self.stay, id="stay")
            yield ErrorLine(id="takeover-error")
            with Horizontal(classes="buttons"):
                yield MarkedButton("Run this step", variant="primary", id="do-step")
                yield MarkedButton("Back", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#thought", Input).focus()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        mark_focus(self)

    def selected_tool(self) -> Tool | None:
        value = self.query_one("#tool", Select).value
        return self.tools.get(value) if isinstance(value, str) else None

    @on(Select.Changed, "#tool")
    async def _tool_changed(self, event: Select.Changed) -> None:
        box = self.query_one("#takeover-args", FieldBox)
        await box.remove_children()
        tool = self.selected_tool()
        self.query_one("#answer", Input).disabled = tool is not None
        if tool is not None:
            await box.mount_all(param_widgets(tool, {}, compact=True))

    @on(Input.Submitted)
    @on(Button.Pressed, "#do-step")
    def _submit(self, event: Input.Submitted | Button.Pressed) -> None:
        event.stop()
        error = self.query_one("#takeover-error", ErrorLine)
        thought = self.query_one("#thought", Input).value.strip()
        stay = self.query_one("#stay", RadioButton).value
        tool = self.selected_tool()
        if tool is not None:
            try:
                args = validate_args(tool, read_params(tool, self))
            except ValueError as exc:
                error.say(str(exc))
                return
            decision = Decision(thought=thought, actions=[Action(tool=tool.name, args=args)])
        else:
            answer = self.query_one("#answer", Input).value.strip()
            if not answer:
                error.say("Choose a tool, or write a final answer.")
                return
            decision = Decision.final(thought, answer)
        self.dismiss(TakeOver(decision, stay))
