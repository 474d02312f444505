"""Open runs written by other tools as agent-tui transcripts.

Three formats, detected from the content or named with `format`:

- "jsonl": agent-tui's own transcript (a header line, then one event a line).
- "trace": the seeds' text traces, one field a line::

      Question: How many copies of Il Gattopardo are available?
      Thought: I need the total copies.
      Action: catalog[Il Gattopardo]          (or tool(key=value, ...))
      Observation: 5
      Final Answer: 2                         (or Answer: ...)

  Lines that start with no keyword continue the field above them.
- "chat": an OpenAI-style chat log, a JSON list of messages or an object with
  a "messages" list (a JSONL file of messages works too). Assistant messages
  carry `tool_calls`; `tool` messages carry the results by `tool_call_id`.
  The first user message is the task; an assistant message without tool
  calls is the final answer (or, when it is written in the trace format, a
  thought and an action whose observation comes in the next user message).

An import becomes a Header with scenario "imported" (tools inferred from the
calls, no budget) and ordinary events, so replay, show and export treat it
like any run; it has no world, so it cannot be resumed, forked or verified.
Bad input raises TranscriptError naming the file, the line and what was
expected.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.events import Action, DecisionMade, Event, Header, Observed, RunEnded, ToolInfo, Usage
from engine.core.parse import arguments_from_text
from engine.core.state import RunState, decision_text, estimate_tokens
from engine.stored.transcript import Transcript, TranscriptError, parse_lines, read_bytes

Format = Literal["auto", "jsonl", "trace", "chat"]
FORMATS: tuple[str, ...] = ("auto", "jsonl", "trace", "chat")
IMPORTED = "imported"

EXPECTED = (
    "expected an agent-tui transcript (JSON lines, the first a header), an OpenAI-style chat log "
    "(a JSON list of messages, or an object with a \"messages\" list) or a text trace "
    "(Question: / Thought: / Action: / Observation: / Final Answer: lines)"
)
_KEYWORD = re.compile(r"^\s*(Question|Thought|Action|Observation|Final Answer|Answer)\s*:\s?(.*)$", re.I)
_CANON = {"question": "Question", "thought": "Thought", "action": "Action", "observation": "Observation",
          "final answer": "Answer", "answer": "Answer"}
_ACTION_BRACKET = re.compile(r"^([A-Za-z_][\w.-]*)\s*\[(.*)\]\s*$", re.S)
_ACTION_PAREN = re.compile(r"^([A-Za-z_][\w.-]*)\s*\((.*)\)\s*$", re.S)
_ACTION_BARE = re.compile(r"^([A-Za-z_][\w.-]*)\s*$")
_NO_SUCH_TOOL = re.compile(r"tool '?([\w.-]+)'? (?:does not exist|not found)|unknown tool|no such tool", re.I)


# -- building events ---------------------------------------------------------


@dataclass
class _Step:
    thought: str = ""
    actions: list[Action] = field(default_factory=list)
    observations: list[tuple[int, str]] = field(default_factory=list)
    answer: str | None = None
    raw: list[str] = field(default_factory=list)

    def open_actions(self) -> list[int]:
        done = {i for i, _ in self.observations}
        return [i for i in range(len(self.actions)) if i not in done]


class _Builder:
    """Turns steps into events, with usage estimated as the engine does for scripted policies."""

    def __init__(self, task_text: str, fmt: str, source: str) -> None:
        self.task_text = task_text
        self.fmt = fmt
        self.source = source
        self.steps: list[_Step] = []
        self.tool_names: list[str] = []
        self.executed_tools: set[str] = set()

    def header(self) -> Header:
        tools = [ToolInfo(name=n) for n in self.tool_names if n in self.executed_tools]
        return Header(
            scenario=IMPORTED,
            task=self.fmt,
            task_text=self.task_text,
            options={"format": self.fmt, "source": self.source},
            tools=tools,
            policy=IMPORTED,
            repetition_threshold=None,
        )

    def build(self) -> tuple[Header, list[Event]]:
        events: list[Event] = []
        header_stub = Header(scenario=IMPORTED, task=self.fmt, task_text=self.task_text, policy=IMPORTED)
        state = RunState.start(header_stub)
        ended: RunEnded | None = None
        for number, step in enumerate(self.steps, 1):
            actions = [
                a if a.call_id is not None else a.model_copy(update={"call_id": f"s{number}.{i}"})
                for i, a in enumerate(step.actions)
            ]
            raw = "\n".join(step.raw) if step.raw else None
            decision = DecisionMade(step=number, policy=IMPORTED, thought=step.thought, actions=actions,
                                    answer=step.answer, raw=raw)
            usage = Usage(input_tokens=state.context_tokens, output_tokens=estimate_tokens(decision_text(decision)))
            decision = decision.model_copy(update={"usage": usage})
            events.append(decision)
            state.apply(decision)
            for index, text in sorted(step.observations, key=lambda pair: pair[0]):
                action = actions[index] if index < len(actions) else None
                tool = action.tool if action is not None else None
                missing = _NO_SUCH_TOOL.search(text) is not None
                error = text.lstrip().lower().startswith("error") or missing
                executed = tool is not None and not missing
                if tool is not None:
                    if tool not in self.tool_names:
                        self.tool_names.append(tool)
                    if executed:
                        self.executed_tools.add(tool)
                obs = Observed(step=number, index=index, tool=tool, args=dict(action.args) if action else {},
                               text=text, error=error, executed=executed)
                events.append(obs)
                state.apply(obs)
            if step.answer is not None:
                ended = RunEnded(outcome="answer", reason="final answer", step=number, answer=step.answer)
                break
        for step in self.steps:
            for a in step.actions:
                if a.tool not in self.tool_names:
                    self.tool_names.append(a.tool)
                    self.executed_tools.add(a.tool)
        if ended is not None:
            events.append(ended)
        return self.header(), events


def _action_from_text(text: str) -> Action | None:
    body = text.strip()
    for pattern, kind in ((_ACTION_BRACKET, "bracket"), (_ACTION_PAREN, "paren"), (_ACTION_BARE, "bare")):
        m = pattern.match(body)
        if m is None:
            continue
        name = m.group(1)
        if kind == "bracket":
            return Action(tool=name, args={"input": m.group(2).strip()})
        if kind == "paren":
            return Action(tool=name, args=arguments_from_text(m.group(2), ()))
        return Action(tool=name)
    return None


# -- text traces ---------------------------------------------------------------


def parse_trace(name: str, text: str) -> tuple[Header, list[Event]]:
    """Read a seed-style text trace."""
    question: list[str] | None = None
    steps: list[_Step] = []
    field_lines: list[str] | None = None  # the open field, where continuation lines go
    closer = None  # called with the open field's text when the next keyword starts
    answered_at = 0

    def close() -> None:
        nonlocal field_lines, closer
        if field_lines is not None and closer is not None:
            closer("\n".join(field_lines).strip())
        field_lines, closer = None, None

    for number, line in enumerate(text.splitlines(), 1):
        m = _KEYWORD.match(line)
        if m is None:
            if field_lines is not None:
                field_lines.append(line.strip())
            elif line.strip():
                raise TranscriptError(f"{name}:{number}: {EXPECTED}; got {_preview(line)}")
            continue
        close()
        kind = _CANON[m.group(1).lower()]
        value = m.group(2).strip()
        if answered_at:
            raise TranscriptError(
                f"{name}:{number}: the trace goes on after its final answer (line {answered_at}); "
                "expected one run per file"
            )
        field_lines = [value]
        if kind == "Question":
            if steps or question is not None:
                raise TranscriptError(f"{name}:{number}: a second Question: line; expected one run per file")
            question = field_lines
        elif kind == "Thought":
            if not steps or steps[-1].actions or steps[-1].answer is not None:
                steps.append(_Step())
            step = steps[-1]

            def closer(value: str, step: _Step = step) -> None:
                step.thought = f"{step.thought}\n{value}" if step.thought else value
                step.raw.append(f"Thought: {value}")

        elif kind == "Action":
            if not steps or steps[-1].answer is not None or (steps[-1].actions and not steps[-1].open_actions()):
                steps.append(_Step())
            step = steps[-1]

            def closer(value: str, step: _Step = step, number: int = number) -> None:
                action = _action_from_text(value)
                if action is None:
                    raise TranscriptError(
                        f"{name}:{number}: expected 'Action: tool[argument]' or 'Action: tool(name=value, ...)', "
                        f"got {_preview(value)}"
                    )
                step.actions.append(action)
                step.raw.append(f"Action: {value}")

        elif kind == "Observation":
            if not steps:
                raise TranscriptError(f"{name}:{number}: an Observation: before any Thought: or Action: line")
            step = steps[-1]
            open_ = step.open_actions()
            if not open_ and step.actions:
                raise TranscriptError(
                    f"{name}:{number}: a second Observation: for one Action:; expected an Action: line before it"
                )
            index = open_[0] if open_ else len(step.observations)

            def closer(value: str, step: _Step = step, index: int = index) -> None:
                step.observations.append((index, value))

        else:  # Answer
            if not steps or steps[-1].actions or steps[-1].answer is not None:
                steps.append(_Step())
            step = steps[-1]
            step.answer = value
            answered_at = number

            def closer(value: str, step: _Step = step) -> None:
                step.answer = value
                step.raw.append(f"Final Answer: {value}")

    close()
    if not steps and question is None:
        raise TranscriptError(f"{name}: the file is empty" if not text.strip() else f"{name}:1: {EXPECTED}")
    builder = _Builder("\n".join(question).strip() if question else "", "trace", name)
    builder.steps = steps
    return builder.build()


def _preview(line: str) -> str:
    flat = line.strip()
    return repr(flat if len(flat) <= 50 else flat[:49] + "…")


# -- chat logs -----------------------------------------------------------------


def _message_lines(text: str) -> list[int]:
    """The line each top-level message object starts on (best effort; [] if unknown)."""
    decoder = json.JSONDecoder()
    start = 0
    stripped = text.lstrip()
    if stripped.startswith("{"):
        m = re.search(r'"messages"\s*:\s*\[', text)
        if m is None:
            return []
        start = m.end()
    else:
        start = text.index("[") + 1
    lines: list[int] = []
    pos, size = start, len(text)
    try:
        while pos < size:
            while pos < size and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= size or text[pos] == "]":
                break
            lines.append(text.count("\n", 0, pos) + 1)
            _, pos = decoder.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return lines
    return lines


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def parse_chat(name: str, messages: list[Any], lines: list[int] | None = None) -> tuple[Header, list[Event], list[str]]:
    """Read an OpenAI-style list of chat messages."""
    warnings: list[str] = []

    def where(i: int) -> str:
        if lines and i < len(lines):
            return f"{name}:{lines[i]}"
        return f"{name}: message {i + 1}"

    task: str | None = None
    steps: list[_Step] = []
    calls: dict[str, tuple[_Step, int]] = {}
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise TranscriptError(f"{where(i)}: expected a message object with a \"role\", got {type(message).__name__}")
        role = message.get("role")
        if not isinstance(role, str):
            raise TranscriptError(f"{where(i)}: expected a message with a \"role\" (system, user, assistant or tool)")
        content = _content_text(message.get("content"))
        if role in ("system", "developer"):
            continue
        if role == "user":
            if task is None and not steps:
                task = content
            elif content.lstrip().startswith("Observation:") and steps and steps[-1].open_actions():
                step = steps[-1]
                step.observations.append((step.open_actions()[0], content.lstrip()[len("Observation:"):].strip()))
            else:
                warnings.append(f"{where(i)}: a user message in the middle of the run is not part of it and is skipped")
            continue
        if role == "assistant":
            if steps and steps[-1].answer is not None:
                raise TranscriptError(f"{where(i)}: an assistant message after the final answer; expected one run per log")
            tool_calls = message.get("tool_calls") or []
            legacy = message.get("function_call")
            if legacy and not tool_calls:
                tool_calls = [{"id": None, "type": "function", "function": legacy}]
            if not isinstance(tool_calls, list):
                raise TranscriptError(f"{where(i)}: expected \"tool_calls\" to be a list")
            step = _Step(thought=content.strip())
            if tool_calls:
                for j, call in enumerate(tool_calls):
                    fn = call.get("function") if isinstance(call, dict) else None
                    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                        raise TranscriptError(
                            f"{where(i)}: tool call {j + 1}: expected {{\"function\": {{\"name\": ..., \"arguments\": ...}}}}"
                        )
                    action = _chat_action(fn, call.get("id"))
                    call_id = call.get("id")
                    if isinstance(call_id, str):
                        calls[call_id] = (step, len(step.actions))
                    calls.setdefault(f"name:{fn['name']}", (step, len(step.actions)))
                    step.actions.append(action)
            else:
                parsed = _trace_in_message(content)
                if parsed is not None:
                    step.thought, action, answer = parsed
                    if action is not None:
                        step.actions.append(action)
                    step.answer = answer
                    step.raw = [content]
                else:
                    step.thought = ""
                    step.answer = content.strip()
            steps.append(step)
            continue
        if role in ("tool", "function"):
            call_id = message.get("tool_call_id")
            key = call_id if isinstance(call_id, str) else f"name:{message.get('name')}"
            target = calls.pop(key, None)
            if target is None:
                raise TranscriptError(
                    f"{where(i)}: a tool result for call {call_id or message.get('name')!r} that no assistant message made; "
                    "expected the tool_call_id of an earlier tool call"
                )
            step, index = target
            step.observations.append((index, content))
            continue
        raise TranscriptError(f"{where(i)}: unknown role {role!r}; expected system, user, assistant or tool")
    if task is None and not steps:
        raise TranscriptError(f"{name}: the chat log has no user or assistant message")
    builder = _Builder(task or "", "chat", name)
    builder.steps = steps
    header, events = builder.build()
    return header, events, warnings


def _chat_action(fn: dict[str, Any], call_id: Any) -> Action:
    raw = fn.get("arguments")
    cid = call_id if isinstance(call_id, str) else None
    if isinstance(raw, dict):
        return Action(tool=fn["name"], args=raw, call_id=cid)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return Action(tool=fn["name"], call_id=cid)
    try:
        args = json.loads(raw) if isinstance(raw, str) else None
    except (json.JSONDecodeError, RecursionError):
        args = None
    if isinstance(args, dict):
        return Action(tool=fn["name"], args=args, call_id=cid)
    return Action(tool=fn["name"], call_id=cid, args_error=f"the arguments are not a JSON object: {str(raw)[:200]}")


def _trace_in_message(content: str) -> tuple[str, Action | None, str | None] | None:
    """An assistant message written in the trace format: (thought, action, answer), else None."""
    thought, action, answer = "", None, None
    found = False
    for line in content.splitlines():
        m = _KEYWORD.match(line)
        if m is None:
            continue
        kind, value = _CANON[m.group(1).lower()], m.group(2).strip()
        if kind == "Thought":
            thought, found = value, True
        elif kind == "Action" and action is None:
            action = _action_from_text(value)
            found = found or action is not None
        elif kind == "Answer":
            answer, found = content[content.index(line) + len(line) - len(m.group(2)):].strip(), True
            break
    if not found or (action is None and answer is None):
        return None
    return thought, (None if answer is not None else action), answer


# -- detection -----------------------------------------------------------------


def detect_format(name: str, text: str) -> str:
    """'jsonl', 'chat' or 'trace'; TranscriptError naming the line when it is none of them."""
    lines = text.splitlines()
    first_number, first = next(((n, l) for n, l in enumerate(lines, 1) if l.strip()), (0, ""))
    if not first:
        raise TranscriptError(f"{name}: the file is empty")
    head = first.lstrip()
    if _KEYWORD.match(first):
        return "trace"
    if head.startswith("{"):
        try:
            obj = json.loads(first)
        except (json.JSONDecodeError, RecursionError):
            obj = None
        if isinstance(obj, dict) and obj.get("type") == "header":
            return "jsonl"
        if isinstance(obj, dict) and "role" in obj:
            return "chat"
        return "chat"  # a JSON object over several lines: a {"messages": [...]} log, or an error there
    if head.startswith("["):
        return "chat"
    raise TranscriptError(f"{name}:{first_number}: {EXPECTED}; got {_preview(first)}")


def load_chat(name: str, text: str) -> tuple[Header, list[Event], list[str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = [l for l in text.splitlines() if l.strip()]
        if len(lines) > 1 and all(l.lstrip().startswith("{") for l in lines[:2]):
            return _load_chat_jsonl(name, text)
        raise TranscriptError(f"{name}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise TranscriptError(f"{name}: not JSON (too deeply nested)") from None
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return parse_chat(name, data["messages"], _message_lines(text))
    if isinstance(data, list):
        return parse_chat(name, data, _message_lines(text))
    if isinstance(data, dict) and "role" in data:
        return parse_chat(name, [data], [1])
    raise TranscriptError(f"{name}:1: expected a JSON list of chat messages or an object with a \"messages\" list")


def _load_chat_jsonl(name: str, text: str) -> tuple[Header, list[Event], list[str]]:
    messages, numbers = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            messages.append(json.loads(line))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise TranscriptError(f"{name}:{number}: not JSON ({getattr(exc, 'msg', 'too deeply nested')})") from None
        numbers.append(number)
    return parse_chat(name, messages, numbers)


def load_any(path: str | Path, format: str = "auto", *, strict: bool = True) -> Transcript:
    """Read a run in any supported format as a Transcript (header, events, warnings)."""
    p = Path(path)
    if format not in FORMATS:
        raise TranscriptError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    data = read_bytes(p)
    name = str(p)
    if format == "jsonl":
        transcript = parse_lines(name, data.splitlines(keepends=True), strict=strict)
        transcript.path = p
        return transcript
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TranscriptError(f"{name}:{line}: not UTF-8 text (byte {exc.start})") from None
    fmt = detect_format(name, text) if format == "auto" else format
    if fmt == "jsonl":
        transcript = parse_lines(name, data.splitlines(keepends=True), strict=strict)
        transcript.path = p
        return transcript
    if not text.strip():
        raise TranscriptError(f"{name}: the file is empty")
    if fmt == "trace":
        header, events = parse_trace(name, text)
        warnings: list[str] = []
    else:
        header, events, warnings = load_chat(name, text)
    return Transcript(path=p, header=header, events=events, warnings=warnings)
