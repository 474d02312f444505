"""OpenAI chat messages, in the shapes they are kept in.

- a JSON list of messages, or a JSONL file of them;
- an object with a "messages" list, which covers a request body (`model`,
  `messages`, `tools`: the tools are declared in the header);
- a request with its response (`{"request": {...}, "response": {...}}`): the
  response's message ends the log;
- fine-tune JSONL: one `{"messages": [...]}` conversation a line, one run each.

Assistant messages carry `tool_calls` (or the legacy `function_call`); `tool`
and `function` messages carry the results by `tool_call_id`. The first user
message is the task and later ones are shown as user messages; system and
developer messages are the system prompt. A final call of a structured-answer
tool (`final_result`) is the answer, as is a last assistant message without
calls; a `refusal` is what the assistant said, and a response's `usage` is
its step's token count. An assistant message written in the seeds' text format is one step: its
thoughts, each `Action:` a call (and an `Observation:` after it, in the message or in a user
message after it, that call's result) and its final answer; a field that maps to none of these
is kept as an unrecognised note.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from engine.stored.importers.build import Draft, Step, arguments, found, new_action, text_of, tool_calls
from engine.stored.importers.react import KEYWORD, action_from_text
from engine.core.events import Action
from engine.core.parse import arguments_from_text
from engine.stored.transcript import TranscriptError


def message_lines(text: str) -> list[int]:
    """The line each top-level message object starts on (best effort; [] if unknown). The newlines
    are counted on from the message before, so the text is read once, not once a message."""
    decoder = json.JSONDecoder()
    stripped = text.lstrip()
    if stripped.startswith("{"):
        m = re.search(r'"messages"\s*:\s*\[', text)
        if m is None:
            return []
        start = m.end()
    elif "[" in text:
        start = text.index("[") + 1
    else:
        return []
    lines: list[int] = []
    pos, size = start, len(text)
    line, counted = 1, 0  # the line that offset `counted` stands on
    try:
        while pos < size:
            while pos < size and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= size or text[pos] == "]":
                break
            line += text.count("\n", counted, pos)
            counted = pos
            lines.append(line)
            _, pos = decoder.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return lines
    return lines


@dataclass(slots=True)
class _TextTurn:
    """An assistant message written in the trace format, read field by field."""

    thoughts: list[str] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    observations: list[tuple[int, str]] = field(default_factory=list)
    """(call, text): each result is its message's oldest call's without one, so call i has the i-th."""
    answer: str | None = None
    unread: list[tuple[str, str]] = field(default_factory=list)
    """(what, text) of each part that is no thought, call, result or answer, for unrecognised notes."""


def _fields(content: str) -> Iterator[tuple[str, list[str]]]:
    """(keyword, lines) of each field of `content`: a keyword's line, then the lines without one
    that continue it (those before the first keyword under ""); a final answer runs to the end."""
    kind = ""
    lines: list[str] = []
    rows = content.splitlines()
    for i, row in enumerate(rows):
        m = KEYWORD.match(row)
        if m is None:
            lines.append(row)
            continue
        yield kind, lines
        kind, lines = m.group(1).lower(), [m.group(3).strip()]
        if kind in ("final answer", "answer"):
            lines.extend(rows[i + 1:])
            break
    yield kind, lines


def _text_turn(content: str) -> _TextTurn | None:
    """An assistant message written in the trace format (a call or an answer in it), else None.
    Every `Action:` is a call and an `Observation:` after it its result; a field that maps to
    neither (a `Question:`, an action that names no tool, text after a one-line action) is kept
    in `unread`."""
    turn = _TextTurn()
    open_call = False  # the field before is a call without arguments, which an `Action Input:` gives
    for kind, lines in _fields(content):
        takes_input, open_call = open_call, False
        text = "\n".join(lines).strip()
        if kind in ("", "thought"):
            if text:
                turn.thoughts.append(text)
        elif kind == "action":
            action, rest = action_from_text(lines[0]), "\n".join(lines[1:]).strip()
            if action is None and rest:
                action, rest = action_from_text(text), ""
            if action is None:
                turn.unread.append(("an Action: that names no tool call", text))
            else:
                turn.actions.append(action)
                open_call = not action.args and not rest
            if rest:
                turn.unread.append(("text after an Action: line", rest))
        elif kind == "action input" and takes_input:
            turn.actions[-1] = new_action(tool=turn.actions[-1].tool, args=arguments_from_text(text, ()))
        elif kind == "action input":
            turn.unread.append(("an Action Input: that follows no call without arguments", text))
        elif kind == "observation" and len(turn.observations) < len(turn.actions):
            turn.observations.append((len(turn.observations), text))
        elif kind == "observation":
            turn.unread.append(("an Observation: with no call waiting for it", text))
        elif kind in ("final answer", "answer"):
            turn.answer = text
        else:
            turn.unread.append((f"a '{kind.title()}:' line in an assistant message", text))
    if not turn.actions and turn.answer is None:
        return None
    return turn


def read_messages(draft: Draft, messages: list[Any], where: Any) -> Draft:
    """Fill `draft` from a list of chat messages; `where(i)` names message i in the file. The last
    step is kept at hand, not looked for among the notes after it at each message."""
    last = draft.last_step()
    for i, message in enumerate(messages):
        source = where(i)
        if not isinstance(message, dict):
            draft.unrecognised(f"a {type(message).__name__} where a message was expected", message, source)
            continue
        role = message.get("role")
        content = text_of(message.get("content"))
        if role in ("system", "developer"):
            if last is not None or draft.task_text is not None:
                draft.note("system", content, source)
            else:
                draft.system.append(content)
        elif role == "user":
            index = last.first_open() if last is not None and content.lstrip().startswith("Observation:") else None
            if last is not None and index is not None:
                last.observe(index, content.lstrip()[len("Observation:"):].strip())
            else:
                draft.user(content, source)
        elif role == "assistant":
            last = _assistant(draft, message, content, source)
        elif role in ("tool", "function"):
            draft.result(message.get("tool_call_id"), content, None, source, name=message.get("name"))
        else:
            draft.unrecognised(f"a message with {found(message)}", content or message, source)
    return draft


def _assistant(draft: Draft, message: dict[str, Any], content: str, source: str) -> Step:
    """The step an assistant message makes (with its calls, or its text read as the trace format)."""
    calls = tool_calls(message)
    legacy = message.get("function_call")
    if legacy and not calls:
        calls = [{"id": None, "function": legacy}]
    step = draft.new_step()
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str):
        step.add_thought(reasoning)
    if calls:
        step.add_thought(content)
        for j, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                draft.unrecognised(f"tool call {j + 1} without a function name", call, source)
                continue
            args, error = arguments(fn.get("arguments"))
            call_id = call.get("id") if isinstance(call.get("id"), str) else None
            draft.call(step, new_action(tool=fn["name"], args=args, call_id=call_id, args_error=error))
        return step
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip() and not content.strip():
        content = f"(refused) {refusal}"
    turn = _text_turn(content)
    if turn is None:
        step.add_reply(content)
        return step
    for thought in turn.thoughts:
        step.add_thought(thought)
    step.actions.extend(turn.actions)
    for index, text in turn.observations:
        step.observe(index, text)
    step.answer = turn.answer
    step.raw = content
    for what, text in turn.unread:
        draft.unrecognised(what, text, source)
    return step


def _response_message(response: Any) -> dict[str, Any] | None:
    if not isinstance(response, dict):
        return None
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        return message if isinstance(message, dict) else None
    if isinstance(response.get("message"), dict):
        return response["message"]
    return response if response.get("role") == "assistant" else None


def read_chat(name: str, data: Any, text: str) -> list[Draft]:
    """A chat log already parsed from JSON (a list, or an object)."""
    draft = Draft(name, "chat")
    lines = message_lines(text)

    def where(i: int) -> str:
        return f"line {lines[i]}" if i < len(lines) else f"message {i + 1}"

    if isinstance(data, list):
        return [read_messages(draft, data, where)]
    if not isinstance(data, dict):
        raise TranscriptError(f"{name}:1: expected a JSON list of chat messages or an object with a \"messages\" list; got {found(data)}")
    if isinstance(data.get("request"), dict) and isinstance(data["request"].get("messages"), list):
        body = data["request"]
        messages = list(body["messages"])
        reply = _response_message(data.get("response"))
        if reply is not None:
            messages.append(reply)
        elif "response" in data:
            draft.unrecognised("a response without a message", data.get("response"), "response")
        _body_options(draft, body)
        read_messages(draft, messages, lambda i: f"message {i + 1}")
        usage = data["response"].get("usage") if reply is not None and isinstance(data.get("response"), dict) else None
        if isinstance(usage, dict) and draft.last_step() is not None:
            draft.last_step().record_usage(usage.get("prompt_tokens"), usage.get("completion_tokens"))
        return [draft]
    if isinstance(data.get("messages"), list):
        _body_options(draft, data)
        return [read_messages(draft, data["messages"], where)]
    if "role" in data:
        return [read_messages(draft, [data], lambda i: "line 1")]
    raise TranscriptError(
        f"{name}:1: expected a JSON list of chat messages or an object with a \"messages\" list; got {found(data)}"
    )


def _body_options(draft: Draft, body: dict[str, Any]) -> None:
    draft.declare(body.get("tools"))
    draft.declare(body.get("functions"))
    if isinstance(body.get("model"), str):
        draft.options["model"] = body["model"]


def read_chat_lines(name: str, rows: list[tuple[int, Any]]) -> list[Draft]:
    """JSONL: one message a line, or fine-tune data (one conversation a line, one run each)."""
    if rows and all(isinstance(obj, dict) and isinstance(obj.get("messages"), list) for _, obj in rows):
        runs = []
        for number, obj in rows:
            draft = Draft(name, "chat")
            draft.options["line"] = number
            _body_options(draft, obj)
            runs.append(read_messages(draft, obj["messages"], lambda i, n=number: f"line {n}, message {i + 1}"))
        return runs
    numbers = [n for n, _ in rows]
    return [read_messages(Draft(name, "chat"), [obj for _, obj in rows], lambda i: f"line {numbers[i]}")]
