"""A run as OpenAI chat messages: `{"messages": [...], "tools": [...]}`, usable as fine-tune data.

The system prompt and the task open the conversation; each decision is an
assistant message (its thought as content, its actions as `tool_calls`),
each observation a `tool` message answering its call by id, a user note a
user message, a system note a system message; the answer closes it (the
thought that came with it as `reasoning_content`, as DeepSeek and vLLM write it). Sub-agent
work and unmapped parts have no place in a chat and are left out (the caller
is told how many). Reading the file back with the `chat` importer gives the
same calls, results and answer.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from engine.core.events import Action, Event, Header, ToolInfo

_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def _tool_schema(tool: ToolInfo) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for param in tool.parameters:
        name = str(param.get("name", ""))
        if not name:
            continue
        kind = param.get("type")
        spec: dict[str, Any] = {"type": kind if kind in _JSON_TYPES else "string"}
        if param.get("description"):
            spec["description"] = str(param["description"])
        if param.get("enum"):
            spec["enum"] = list(param["enum"])
        props[name] = spec
        if param.get("required", True):
            required.append(name)
    function: dict[str, Any] = {"name": tool.name, "parameters": {"type": "object", "properties": props, "required": required}}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def _call(action: Action, fallback_id: str) -> dict[str, Any]:
    return {
        "id": action.call_id or fallback_id,
        "type": "function",
        "function": {"name": action.tool, "arguments": json.dumps(action.args, ensure_ascii=False, default=str)},
    }


def chat_messages(header: Header, events: Sequence[Event]) -> tuple[dict[str, Any], int]:
    """The chat document and how many notes had no place in it."""
    messages: list[dict[str, Any]] = []
    system = header.options.get("system_prompt")
    if isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": header.task_text})
    ids: dict[tuple[int, int], str] = {}
    answered = False
    left_out = 0
    for event in events:
        if event.type == "decision":
            message: dict[str, Any] = {"role": "assistant", "content": event.thought or event.raw or None}
            if event.actions:
                calls = [_call(a, f"call_{event.step}_{i}") for i, a in enumerate(event.actions)]
                for i, call in enumerate(calls):
                    ids[(event.step, i)] = call["id"]
                message["tool_calls"] = calls
            if event.answer is not None and not event.actions:
                message["content"] = event.answer
                if event.thought:
                    message["reasoning_content"] = event.thought
                answered = True
            elif event.answer is not None:
                answered = True  # a structured answer: its call is the answer
            if message["content"] is not None or event.actions:
                messages.append(message)
        elif event.type == "observation":
            call_id = ids.get((event.step, event.index), f"call_{event.step}_{event.index}")
            messages.append({"role": "tool", "tool_call_id": call_id, "content": event.text})
        elif event.type == "note":
            if event.kind in ("user", "system"):
                messages.append({"role": event.kind, "content": event.text})
            else:
                left_out += 1
        elif event.type == "run_ended" and event.outcome == "answer" and event.answer is not None and not answered:
            messages.append({"role": "assistant", "content": event.answer})
    document: dict[str, Any] = {"messages": messages}
    if header.tools:
        document["tools"] = [_tool_schema(t) for t in header.tools]
    return document, left_out
