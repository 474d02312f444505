"""The chat completions wire format: requests built from a run, replies read back.

Pure functions, no network: `build_messages` turns a `RunView` into the
messages a model sees (whoever made the earlier steps: a scripted policy, the
operator or the model itself), `tool_schemas` offers the scenario's tools as
functions, `StreamReader` folds server-sent-event chunks into a `Reply`, and
`reply_from_json` reads a whole (non-streamed) response.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Sequence

from engine.core.content import content_text
from engine.core.events import Action
from engine.core.policy import ObservationView, RunView, StepView
from engine.core.tools import Tool, validate_args

Mode = Literal["tools", "text"]

TOOLS_SYSTEM = (
    "You are an agent working on the user's task with the tools you are given. "
    "Before each tool call, say in one or two sentences what you will do and why. "
    "Call tools one at a time unless the calls are independent. "
    "A tool result starting with REJECTED means the operator refused that action: "
    "read the reason and do not repeat the action unchanged. "
    "When you know the final answer, reply with it in plain text and call no tool."
)

TEXT_SYSTEM = """You are an agent working on the user's task step by step. Answer in exactly this format:
Thought: <your reasoning>
Action: <tool>(<name>="<value>", ...)
or, when you are finished:
Thought: <your reasoning>
Final Answer: <the answer>
Write one Action per reply and stop after it: the Observation is written for you.
An Observation starting with REJECTED means the operator refused that action: read the reason and do not repeat it unchanged.
The tools:
{tools}"""

STOP_TEXT = "\nObservation:"
_CALL_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_NO_RESULT = "(no result: the run moved on before this action ran)"


class WireError(Exception):
    """The server's reply could not be read (malformed JSON, a wrong shape, an error chunk)."""


# -- requests -------------------------------------------------------------------


def tool_schemas(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The tools as chat completions function definitions."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.json_schema()},
        }
        for t in tools
    ]


def tool_lines(tools: Sequence[Tool]) -> str:
    """One line per tool for the text-mode system prompt."""
    lines = []
    for t in tools:
        params = ", ".join(f"{p.name}: {p.type}" + ("" if p.required else "?") for p in t.params)
        lines.append(f"- {t.name}({params}): {t.description}")
    return "\n".join(lines)


def _call_ids(history: Sequence[StepView]) -> dict[tuple[int, int], str]:
    """A tool_call id per (step, action index): the recorded one when a server would
    accept it, otherwise a synthesized one, and never the same id twice."""
    ids: dict[tuple[int, int], str] = {}
    used: set[str] = set()
    for s in history:
        assign_call_ids(s, ids, used)
    return ids


def assign_call_ids(s: StepView, ids: dict[tuple[int, int], str], used: set[str]) -> None:
    """`_call_ids` for one more step, given the ids of the steps before it."""
    for i, a in enumerate(s.actions):
        cid = a.call_id if a.call_id and _CALL_ID.match(a.call_id) else f"call_{s.step}_{i}"
        if cid in used:
            cid = f"call_{s.step}_{i}"
            n = 1
            while cid in used:
                cid = f"call_{s.step}_{i}_{n}"
                n += 1
        used.add(cid)
        ids[(s.step, i)] = cid


def _edit_note(tool: Tool | None, action: Action, obs: ObservationView) -> str:
    """A note when the operator changed the arguments before the tool ran."""
    if tool is None or action.args_error is not None or not obs.executed:
        return ""
    try:
        proposed = validate_args(tool, action.args)
    except ValueError:
        proposed = None
    if proposed == obs.args:
        return ""
    return f"[The operator edited the arguments before it ran: {json.dumps(obs.args, ensure_ascii=False)}]\n"


def _result_text(tools: dict[str, Tool], action: Action, obs: ObservationView | None) -> str:
    if obs is None:
        return _NO_RESULT
    return _edit_note(tools.get(action.tool), action, obs) + obs.text


def _step_text(s: StepView) -> str:
    """A step in the seeds' text format, as a text-mode model would have written it."""
    if s.raw is not None:
        return s.raw.strip()
    lines = [f"Thought: {s.thought}"] if s.thought else []
    lines.extend(f"Action: {a.render()}" for a in s.actions)
    if s.answer is not None:
        lines.append(f"Final Answer: {s.answer}")
    return "\n".join(lines) or "Thought: (nothing)"


def head_messages(view: RunView, mode: Mode, system: str | None = None) -> list[dict[str, Any]]:
    """The system prompt and the task: what every request starts with."""
    if system is None:
        system = TOOLS_SYSTEM if mode == "tools" else TEXT_SYSTEM.format(tools=tool_lines(view.tools))
    return [{"role": "system", "content": system}, {"role": "user", "content": view.task}]


def build_messages(view: RunView, mode: Mode, system: str | None = None) -> list[dict[str, Any]]:
    """The run so far as chat messages: system, the task, then every step.

    Operator rejections reach the model as the tool results they are; edited
    arguments are noted on the result; a step that could not be read is
    followed by the error the engine recorded.
    """
    tools = {t.name: t for t in view.tools}
    messages = head_messages(view, mode, system)
    ids = _call_ids(view.history) if mode == "tools" else {}
    for s in view.history:
        messages.extend(step_messages(s, mode, tools, ids))
    return messages


def step_messages(
    s: StepView, mode: Mode, tools: dict[str, Tool], ids: dict[tuple[int, int], str]
) -> list[dict[str, Any]]:
    """One step's messages (`ids`: the call ids of this step and the ones before it)."""
    messages: list[dict[str, Any]] = []
    extra = s.observations[len(s.actions) :]
    if mode == "text":
        messages.append({"role": "assistant", "content": _step_text(s)})
        results = [
            _result_text(tools, a, s.observations[i] if i < len(s.observations) else None)
            for i, a in enumerate(s.actions)
        ]
        results.extend(o.text for o in extra)
        if results:
            messages.append({"role": "user", "content": "\n".join(f"Observation: {r}" for r in results)})
        messages.extend({"role": "user", "content": text} for text in s.said)
        return messages
    if s.actions:
        calls = [
            {
                "id": ids[(s.step, i)],
                "type": "function",
                "function": {
                    "name": a.tool,
                    "arguments": "{}" if a.args_error is not None else json.dumps(a.args, ensure_ascii=False),
                },
            }
            for i, a in enumerate(s.actions)
        ]
        messages.append({"role": "assistant", "content": s.thought or None, "tool_calls": calls})
        for i, a in enumerate(s.actions):
            obs = s.observations[i] if i < len(s.observations) else None
            messages.append({"role": "tool", "tool_call_id": ids[(s.step, i)], "content": _result_text(tools, a, obs)})
    else:
        content = s.answer if s.answer is not None else (s.raw or s.thought or "(no decision)")
        messages.append({"role": "assistant", "content": content})
    if extra:
        messages.append({"role": "user", "content": "\n".join(o.text for o in extra)})
    messages.extend({"role": "user", "content": text} for text in s.said)
    return messages


# -- replies --------------------------------------------------------------------


@dataclass
class ToolCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class Reply:
    """One assistant reply, streamed or whole."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


def _text_of(content: Any) -> str:
    text = content_text(content)
    if text is not None:
        return text
    raise WireError(f"the reply's content is a {type(content).__name__}, not text")


def _read_usage(reply: Reply, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        reply.input_tokens, reply.output_tokens = prompt, completion


def _error_of(data: dict[str, Any]) -> str | None:
    error = data.get("error")
    if error is None:
        return None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)
    return str(error)


def reply_from_json(data: Any) -> Reply:
    """Read a whole chat completions response."""
    if not isinstance(data, dict):
        raise WireError("the reply is not a JSON object")
    error = _error_of(data)
    if error is not None:
        raise WireError(f"the server reported an error: {error}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise WireError("the reply has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise WireError("the reply's first choice has no message")
    reply = Reply(content=_text_of(message.get("content")), finish_reason=choices[0].get("finish_reason"))
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise WireError("a tool call in the reply has no function")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send an object instead of a JSON string
            arguments = json.dumps(arguments)
        reply.tool_calls.append(
            ToolCall(id=str(call.get("id") or ""), name=str(function.get("name") or ""), arguments=arguments or "")
        )
    _read_usage(reply, data.get("usage"))
    return reply


class StreamReader:
    """Folds server-sent-event lines into a `Reply`, passing content deltas on."""

    def __init__(self, on_delta: Callable[[str], None]) -> None:
        self.reply = Reply()
        self.done = False
        self._on_delta = on_delta
        self._calls: dict[int, ToolCall] = {}

    def feed(self, line: str) -> None:
        """One line of the event stream (comments, `event:` lines and blanks are ignored)."""
        if not line.startswith("data:"):
            return
        payload = line[5:].strip()
        if not payload:
            return
        if payload == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(payload)
        except (json.JSONDecodeError, RecursionError):
            raise WireError(f"malformed JSON in the stream: {payload[:120]!r}") from None
        if not isinstance(chunk, dict):
            raise WireError("a stream chunk is not a JSON object")
        error = _error_of(chunk)
        if error is not None:
            raise WireError(f"the server reported an error mid-stream: {error}")
        _read_usage(self.reply, chunk.get("usage"))
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = _text_of(delta.get("content"))
            if text:
                self.reply.content += text
                self._on_delta(text)
            for n, call in enumerate(delta.get("tool_calls") or []):
                self._tool_call_delta(n, call)
            if choice.get("finish_reason"):
                self.reply.finish_reason = choice["finish_reason"]

    def _tool_call_delta(self, position: int, call: Any) -> None:
        if not isinstance(call, dict):
            raise WireError("a tool call delta is not a JSON object")
        index = call.get("index", position)
        current = self._calls.get(index)
        if current is None:
            current = self._calls[index] = ToolCall()
            self.reply.tool_calls.append(current)
        if call.get("id") and not current.id:
            current.id = str(call["id"])
        function = call.get("function") or {}
        name = function.get("name")
        if name and name != current.name:
            current.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            current.arguments += json.dumps(arguments)
        elif arguments:
            current.arguments += arguments

    @property
    def complete(self) -> bool:
        """The stream ended properly (a `[DONE]` line or a finish reason), not cut."""
        return self.done or self.reply.finish_reason is not None


def action_from_call(call: ToolCall, step: int, index: int) -> Action:
    """A tool call as an action; unreadable arguments become an `args_error` the engine reports."""
    call_id = call.id or f"call_{step}_{index}"
    raw = call.arguments.strip()
    if not raw:
        return Action(tool=call.name, args={}, call_id=call_id)
    try:
        args = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        shown = raw if len(raw) <= 200 else raw[:200] + "..."
        return Action(
            tool=call.name,
            call_id=call_id,
            args_error=f"the arguments for {call.name} were not valid JSON: {shown}",
        )
    if not isinstance(args, dict):
        return Action(
            tool=call.name,
            call_id=call_id,
            args_error=f"the arguments for {call.name} must be a JSON object, got {type(args).__name__}",
        )
    return Action(tool=call.name, args=args, call_id=call_id)


def cut_at_observation(text: str) -> str:
    """Drop an observation a text-mode model wrote itself (a server that ignored the stop)."""
    at = text.find(STOP_TEXT)
    return text if at < 0 else text[:at]
