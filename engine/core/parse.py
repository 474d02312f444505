"""Reading decisions written in the seeds' text format.

    Thought: I need the total copies.
    Action: catalog[Il Gattopardo]          (one argument, bracket form)
    Action: get_order_status(order_id=1187)  (keyword arguments)
    Action: web_search({"q": "postgres"})    (a JSON object)
    Final Answer: 2                          (or `Answer: 2`)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Sequence

from engine.core.events import Action
from engine.core.jsontext import loads
from engine.core.policy import Decision

EXPECTED_FORMAT = (
    "expected 'Thought: ...' then 'Action: tool[argument]', "
    "'Action: tool(name=value, ...)' or 'Final Answer: ...'"
)

# Every pattern runs in time linear in the text (a model's reply can be megabytes): a line's
# leading blanks are `[^\S\n]*`, never `\s*`, which would rescan every following blank line
# from each line start; an action in parentheses is found as its head, then the last ")"
# that ends a line after it, instead of one pattern that retries the whole rest of the text
# from every "Action: tool(" line.
_THOUGHT = re.compile(r"^[^\S\n]*Thought[^\S\n]*:[^\S\n]*(.*)$", re.M)
_ANSWER = re.compile(r"^[^\S\n]*(?:Final Answer|Answer)[^\S\n]*:\s*(.*)\Z", re.M | re.S)
_ACTION_BRACKET = re.compile(r"^[^\S\n]*Action[^\S\n]*:[^\S\n]*([A-Za-z_][\w.-]*)[^\S\n]*\[(.*)\][^\S\n]*$", re.M)
_ACTION_PAREN_HEAD = re.compile(r"^[^\S\n]*Action[^\S\n]*:\s*([A-Za-z_][\w.-]*)\s*\(", re.M)
_CLOSE_AT_LINE_END = re.compile(r"\)[^\S\n]*$", re.M)


@dataclass
class ParsedText(Decision):
    """A decision written as text, read into its structured form (the thought, then the actions
    or the answer); `error`, the observation the policy gets, when the text is in no format."""

    error: str | None = None


def _literal(node: ast.AST) -> Any:
    return ast.literal_eval(node)


MAX_LITERAL_PARTS = 10_000
"""The most commas, brackets and colons arguments in Python's literal syntax may hold: Python's
parser builds a tree of about 2.5 KB a part (400,000 `a=1` would take a gigabyte); past it the
text stays one string. A long string literal is one part, whatever its length."""


def _split_call_args(text: str) -> tuple[list[Any], dict[str, Any]] | None:
    """Parse `a, b, key=value` with Python literal syntax only; None if it is not that (or holds
    more than MAX_LITERAL_PARTS parts)."""
    if sum(text.count(c) for c in ",[({:") > MAX_LITERAL_PARTS:
        return None
    try:
        tree = ast.parse(f"f({text})", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call):
        return None
    try:
        positional = [_literal(a) for a in call.args]
        keywords = {}
        for kw in call.keywords:
            if kw.arg is None:
                return None
            keywords[kw.arg] = _literal(kw.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return positional, keywords


def arguments_from_text(text: str, param_names: Sequence[str]) -> dict[str, Any]:
    """Turn the text inside `tool(...)` into named arguments.

    A JSON object gives its keys; `key=value` literals give keywords; bare
    values map to the tool's parameters in order; anything else is one string
    for the first parameter.
    """
    stripped = text.strip()
    first = param_names[0] if param_names else "input"
    if not stripped:
        return {}
    if stripped.startswith("{"):
        try:
            data = loads(stripped)  # 1e400 and NaN kept as text, a lone surrogate replaced
        except (ValueError, RecursionError):  # JSONDecodeError
            data = None
        if isinstance(data, dict):
            return data
    split = _split_call_args(stripped)
    if split is not None:
        positional, keywords = split
        args: dict[str, Any] = {}
        names = list(param_names) or ["input"]
        if len(positional) > len(names):
            return {first: stripped}
        for name, value in zip(names, positional):
            args[name] = value
        args.update(keywords)
        return args
    return {first: stripped}


def _paren_action(text: str) -> tuple[int, str, str] | None:
    """`Action: tool(...)`: (where its line starts, the tool, the text up to the last ")" that
    ends a line after it, across lines), or None."""
    head = _ACTION_PAREN_HEAD.search(text)
    if head is None:
        return None
    close = None
    for close in _CLOSE_AT_LINE_END.finditer(text, head.end()):
        pass
    if close is None:
        return None
    return head.start(), head.group(1), text[head.end() : close.start()]


def parse_decision_text(text: str, params_of: dict[str, Sequence[str]]) -> ParsedText:
    """Read one policy output. `params_of` maps tool names to parameter names."""
    parsed = ParsedText()
    thought = _THOUGHT.search(text)
    if thought:
        parsed.thought = thought.group(1).strip()
    bracket = _ACTION_BRACKET.search(text)
    paren = None if bracket else _paren_action(text)
    answer = _ANSWER.search(text)
    start = bracket.start() if bracket else (paren[0] if paren else None)
    if answer and (start is None or answer.start() < start):
        parsed.answer = answer.group(1).strip()
        return parsed
    if bracket:
        name, raw = bracket.group(1), bracket.group(2)
        names = params_of.get(name, ())
        parsed.actions.append(Action(tool=name, args={(names[0] if names else "input"): raw.strip()}))
        return parsed
    if paren:
        _, name, raw = paren
        parsed.actions.append(Action(tool=name, args=arguments_from_text(raw, params_of.get(name, ()))))
        return parsed
    parsed.error = f"ERROR: invalid format, {EXPECTED_FORMAT}"
    return parsed
