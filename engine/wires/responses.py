"""The OpenAI Responses wire: `POST /v1/responses`, the API Codex CLI and openai-agents' default model speak.

Agent side (the gateway): `check_request` says why a request cannot be served
(the gateway keeps no responses: the whole `input` comes every turn, as Codex
CLI sends it with `store: false`; a `previous_response_id` is refused),
`to_neutral` turns `instructions` and the `input` items (`message`,
`function_call`, `function_call_output`; any other item, such as `reasoning`,
rides along on the message after it) into chat messages, each keeping the items
it came from; `built_reply` writes a `response` object or its server-sent
events (`response.created`, `response.output_item.added`,
`response.output_text.delta`, `response.function_call_arguments.delta`,
`response.output_item.done`, `response.completed`), keeping the items of the
upstream's reply it does not rebuild (reasoning) as they came.
Upstream side: `from_neutral` gives the items back as they came and writes the
rest (the calls the operator rejected and why: `function_call` and
`function_call_output` items), always with `store: false`; `read_whole` and
`StreamReader` read a reply. Errors are OpenAI's error body, as chat completions.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Unpack

from engine.core.urls import endpoint as join_endpoint
from engine.wires.chat import error_detail, error_of, error_response, headers, reply_object
from engine.wires.neutral import ORIGINAL, Reply, ReplyOptions, Response, StreamReading, ToolCall, WireError, arguments_text, first_problem, original_of, reply_message_of, stream_event, stream_events, stream_json, stream_payload

NAME = "responses"
ROUTES = ("/v1/responses", "/responses")
PASSED_ROUTES: dict[str, str] = {"/v1/responses/input_tokens": "responses/input_tokens"}
ECHO_WITHIN: str | None = None
"""A client joins the strings of any event (`delta`, an item's `arguments`, the output's text)."""
APPENDS_STREAMS = True
"""Whether text sent to the agent before the reply is decided can be followed by the rest (a stream is one numbered response: a rebuilt tail takes it up at the output item the agent's copy stops in, with the next output indices and sequence numbers, and completes it; `engine.gateway.early`)."""
ROLES = frozenset({"system", "developer", "user", "assistant"})
ITEMS = "input"
_MAPPED = ("model", "stream", "temperature", "top_p", "parallel_tool_calls")
"""Request fields with the same name and meaning in chat completions."""

__all__ = [
    "NAME", "ROUTES", "PASSED_ROUTES", "ECHO_WITHIN", "ITEMS", "StreamReader", "built_reply", "check_request", "endpoint",
    "error_detail", "error_response", "from_neutral", "headers", "read_whole", "stream_reader", "to_neutral",
]

# -- the agent's request ----------------------------------------------------------


def check_request(body: Any, checked: int = 0) -> str | None:
    """Why a Responses request cannot be served (None when it can), naming the field;
    `checked`: how many of its first input items a check passed already (`engine.wires.neutral.checked_before`)."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if body.get("previous_response_id") is not None:
        return "'previous_response_id' is not served: the gateway keeps no responses; send the whole input with 'store': false"
    if "stream" in body and not isinstance(body["stream"], bool):
        return "'stream' must be true or false"
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        return "'instructions' must be a string"
    if body.get("tools") is not None and not isinstance(body["tools"], list):
        return "'tools' must be a list of tools"
    items = body.get("input")
    if isinstance(items, str):
        return None if items else "'input' must not be empty"
    if not isinstance(items, list) or not items:
        return "'input' must be a string or a non-empty list of items"
    return first_problem(items, "input", _item_problem, checked)


def _item_problem(item: Any, where: str) -> str | None:
    if not isinstance(item, dict):
        return f"{where} must be an object"
    kind = item.get("type", "message")
    if kind == "message":
        if not isinstance(item.get("role"), str) or item["role"] not in ROLES:
            return f"{where} has no valid role (system, developer, user or assistant)"
        if not isinstance(item.get("content"), (str, list)):
            return f"{where}.content must be a string or a list of parts"
    elif kind == "function_call":
        for key in ("call_id", "name", "arguments"):
            if not isinstance(item.get(key), str):
                return f"{where} is a function_call without a string '{key}'"
    elif kind == "function_call_output":
        if not isinstance(item.get("call_id"), str):
            return f"{where} is a function_call_output without a string 'call_id'"
        if not isinstance(item.get("output"), (str, list)):
            return f"{where}.output must be a string or a list of parts"
    elif not isinstance(kind, str):
        return f"{where}.type must be a string"
    return None


def _text(content: Any) -> str:
    """The text of a message's content or a call's output (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def to_neutral(body: dict[str, Any], headers: dict[str, str], path: str = "") -> dict[str, Any]:
    """The request as a chat completions body. Each message keeps, under `ORIGINAL`, the list of
    input items it came from; the body keeps the request (without its input) and names what
    chat completions has no counterpart for."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"], ORIGINAL: []})
    items = body["input"]
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    riders: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item["role"], "content": _text(item["content"]), ORIGINAL: [*riders, item]})
        elif kind == "function_call":
            call = {"id": item["call_id"], "type": "function", "function": {"name": item["name"], "arguments": item["arguments"]}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
                last[ORIGINAL].extend([*riders, item])
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call], ORIGINAL: [*riders, item]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": _text(item["output"]), ORIGINAL: [*riders, item]})
        else:
            riders.append(item)
            continue
        riders = []
    if riders:  # items after the last message ride on it
        if not messages:
            messages.append({"role": "user", "content": "", ORIGINAL: []})
        messages[-1][ORIGINAL].extend(riders)
    neutral: dict[str, Any] = {k: body[k] for k in _MAPPED if k in body}
    neutral["messages"] = messages
    tools = [_chat_tool(t) for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    if tools:
        neutral["tools"] = tools
    if isinstance(body.get("max_output_tokens"), int):
        neutral["max_tokens"] = body["max_output_tokens"]
    choice = body.get("tool_choice")
    if choice in ("auto", "none", "required"):
        neutral["tool_choice"] = choice
    untranslated = sorted({f"tools of type {t.get('type')}" for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") != "function"})
    untranslated += [f"'{k}'" for k in ("reasoning", "include", "text", "truncation") if body.get(k) is not None]
    kept = {k: v for k, v in body.items() if k != "input"}
    neutral[ORIGINAL] = {"wire": NAME, "body": kept, "headers": {}, "untranslated": untranslated}
    return neutral


def _chat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = {"name": tool.get("name"), "description": tool.get("description") or "", "parameters": tool.get("parameters")}
    return {"type": "function", "function": function}


# -- the request upstream ----------------------------------------------------------


def from_neutral(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The Responses request for a neutral body: a request that came in this wire with its
    items as they came (and its fields), the messages it never had (the rejected calls and
    their reasons) written as items; `store` is always false. Returns what the body's own
    wire had that this API has no counterpart for."""
    kept = body.get(ORIGINAL) if isinstance(body.get(ORIGINAL), dict) else None
    mine = original_of(body, NAME)
    out: dict[str, Any] = dict(mine["body"]) if mine is not None else {}
    for key in _MAPPED:
        if key in body:
            out[key] = body[key]
    if mine is None:
        if isinstance(body.get("max_tokens"), int):
            out["max_output_tokens"] = body["max_tokens"]
        tools = [_responses_tool(t) for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)]
        if tools:
            out["tools"] = tools
    items: list[dict[str, Any]] = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if mine is not None and isinstance(m.get(ORIGINAL), list):
            items.extend(m[ORIGINAL])
        else:
            items.extend(_items_of(m))
    out["input"] = items
    out["store"] = False
    out.pop("previous_response_id", None)
    notes = list(kept.get("untranslated") or []) if kept is not None and mine is None else []
    return out, notes


def _responses_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool["function"]
    out = {"type": "function", "name": function.get("name"), "description": function.get("description") or ""}
    out["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
    return out


def _items_of(m: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat message as Responses input items."""
    role = m.get("role")
    text = _text(m.get("content"))
    if role == "tool":
        return [{"type": "function_call_output", "call_id": str(m.get("tool_call_id") or ""), "output": text}]
    if role == "assistant":
        items: list[dict[str, Any]] = []
        if text:
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]})
        for call in m.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments = function.get("arguments")
            items.append(
                {
                    "type": "function_call",
                    "call_id": str(call.get("id") or ""),
                    "name": str(function.get("name") or ""),
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
                }
            )
        return items
    return [{"type": "message", "role": role if role in ROLES else "user", "content": text}]


def endpoint(base: str, route: str | None = None, body: dict[str, Any] | None = None) -> str:
    """The URL of the API's endpoint (or of `route`) under the server's base URL (which ends in /v1)."""
    return join_endpoint(base, route or "responses")


# -- replies --------------------------------------------------------------------


def _usage(reply: Reply, usage: Any) -> None:
    if isinstance(usage, dict) and isinstance(usage.get("input_tokens"), int) and isinstance(usage.get("output_tokens"), int):
        reply.input_tokens, reply.output_tokens = usage["input_tokens"], usage["output_tokens"]


def _call_of(item: dict[str, Any]) -> ToolCall:
    return ToolCall(id=str(item.get("call_id") or ""), name=str(item.get("name") or ""), arguments=arguments_text(item.get("arguments")))


def read_whole(data: Any) -> Reply:
    """Read a whole `response` object."""
    data = reply_object(data)
    output = data.get("output")
    if not isinstance(output, list):
        raise WireError("the reply has no output")
    reply = Reply(wire=NAME, message=data)
    for item in output:
        if not isinstance(item, dict):
            raise WireError("an output item of the reply is not an object")
        if item.get("type") == "message":
            reply.content += _text(item.get("content"))
        elif item.get("type") == "function_call":
            reply.tool_calls.append(_call_of(item))
    reply.finish_reason = _finish(reply, data)
    _usage(reply, data.get("usage"))
    return reply


def _finish(reply: Reply, response: dict[str, Any]) -> str:
    if reply.tool_calls:
        return "tool_calls"
    return "length" if response.get("status") == "incomplete" else "stop"


class StreamReader(StreamReading):
    """Folds the server-sent events of a streamed response into a `Reply`, passing text deltas on."""

    WIRE = NAME

    def __init__(self, on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> None:
        super().__init__(on_delta, on_thinking)
        self._calls: dict[Any, ToolCall] = {}
        self._parts: list[dict[str, int]] = []
        """Each output item added, in order: how many content parts and summary parts it has."""

    def feed(self, line: str) -> None:
        """One line of the event stream (`event:` lines, comments and blanks are ignored)."""
        payload = stream_payload(line)
        if payload is None or payload == "[DONE]":
            return
        event = stream_json(payload)
        if not isinstance(event, dict):
            raise WireError("a stream event is not a JSON object")
        kind = event.get("type")
        if self.plain:
            self.plain = self._in_order(kind, event)
        if kind == "error" or kind == "response.failed":
            error = event.get("message") or error_of(event.get("response") or {}) or error_of(event) or "the response failed"
            raise WireError(f"the server reported an error mid-stream: {error}")
        if kind == "response.output_text.delta":
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                self._add_text(delta)
                self._on_delta(delta)
        elif kind == "response.reasoning_summary_text.delta":
            delta = event.get("delta")
            if isinstance(delta, str) and delta and self._on_thinking is not None:
                self._on_thinking(delta)
        elif kind == "response.output_item.added" and _is_call(event.get("item")):
            self._call(event, event["item"])
        elif kind == "response.function_call_arguments.delta":
            index = event.get("output_index")
            call = self._calls.get(index) if isinstance(index, (int, float, str, type(None))) else None
            if call is not None and isinstance(event.get("delta"), str):
                self._add_arguments(call, event["delta"])
        elif kind == "response.output_item.done" and _is_call(event.get("item")):
            call = self._call(event, event["item"])
            self._settle_call(call)
            final = _call_of(event["item"])
            call.id, call.name = final.id or call.id, final.name or call.name
            if final.arguments:
                call.arguments = final.arguments
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response")
            if not isinstance(response, dict):
                raise WireError(f"a {kind} event without its response")
            self.done = True
            self._reply.message = response
            self._reply.finish_reason = _finish(self._reply, response)
            _usage(self._reply, response.get("usage"))

    def _in_order(self, kind: Any, event: dict[str, Any]) -> bool:
        """Whether the event is where the API's own servers put it: an item, a content part or a
        summary part added at the next index, empty; a delta to one already added (a client adds
        what comes to the item, part or summary it names, or to the last it added: the same then)."""
        if not isinstance(kind, str) or not kind.startswith("response.") or kind in ("response.created", "response.in_progress"):
            return True
        index = event.get("output_index")
        if kind in ("response.completed", "response.incomplete"):
            response = event.get("response")
            return isinstance(response, dict) and isinstance(response.get("output"), list)  # else a client rebuilds it from the items, by index
        if type(index) is not int or index < 0:
            return False
        if kind == "response.output_item.added":
            item = event.get("item")
            empty = isinstance(item, dict) and isinstance(item.get("type"), str) and not any(item.get(f) for f in ("content", "summary", "arguments"))
            self._parts.append({"content_index": 0, "summary_index": 0})
            return empty and index == len(self._parts) - 1
        if index != len(self._parts) - 1:  # the items come one after the other: a piece of one before the last is out of order
            return False
        for field, added in (("content_index", "response.content_part.added"), ("summary_index", "response.reasoning_summary_part.added")):
            if field in event:
                at, parts = event[field], self._parts[index]
                if kind == added:
                    part = event.get("part")
                    parts[field] += 1
                    return type(at) is int and at == parts[field] - 1 and isinstance(part, dict) and not part.get("text")
                if type(at) is not int or not 0 <= at < max(parts[field], 1):
                    return False
        return True

    def _call(self, event: dict[str, Any], item: dict[str, Any]) -> ToolCall:
        index = event.get("output_index")
        if not isinstance(index, (int, float, str, type(None))) or isinstance(index, bool):
            raise WireError("an output item's index is not a number")
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = ToolCall(id=str(item.get("call_id") or ""), name=str(item.get("name") or ""))
            self._reply.tool_calls.append(call)
        return call

    @property
    def complete(self) -> bool:
        """The stream ended with its `response.completed` (or `response.incomplete`), not cut."""
        return self.done


def _is_call(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "function_call"


def stream_reader(on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> StreamReader:
    return StreamReader(on_delta, on_thinking)


# -- what goes back to the agent ----------------------------------------------------


def stream_error(body: bytes) -> bytes:
    """An error body as an event of this API's stream (named `error`, as the API names its events)."""
    return stream_event(body, "error")


def built_reply(content: str | None, calls: list[dict[str, Any]], **options: Unpack[ReplyOptions]) -> Response:
    """A reply the gateway wrote: `calls` are chat completions tool calls (id, type, function).
    The items of `original` (the upstream's reply it replaces, when it came in this wire) other
    than its text and calls (reasoning, with its encrypted content) are kept as they came, and
    its fields; a reply of another wire is written anew."""
    usage, original = options.get("usage"), reply_message_of(options.get("original"), NAME)
    ident = f"resp_agent_tui_{time.monotonic_ns()}"
    base: dict[str, Any] = {}
    kept: list[dict[str, Any]] = []
    if original is not None:
        base = {k: v for k, v in original.items() if k not in ("output", "usage", "output_text")}
        kept = [i for i in original.get("output") or [] if isinstance(i, dict) and i.get("type") not in ("message", "function_call")]
    base.setdefault("id", ident)
    base.update({"object": "response", "model": base.get("model") or options["model"], "status": "completed"})
    base.setdefault("created_at", int(time.time()))
    for key, value in (("parallel_tool_calls", True), ("tool_choice", "auto"), ("tools", [])):
        base.setdefault(key, value)
    output = list(kept)
    if content:
        text = {"type": "output_text", "text": content, "annotations": []}
        output.append({"id": f"msg_{ident}", "type": "message", "status": "completed", "role": "assistant", "content": [text]})
    for n, call in enumerate(calls):
        function = call.get("function") or {}
        output.append(
            {
                "id": f"fc_{ident}_{n}",
                "type": "function_call",
                "status": "completed",
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments") or "{}",
            }
        )
    usage_body = None
    if usage is not None:
        usage_body = {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }
    whole = {**base, "output": output, "usage": usage_body}
    if not options["stream"]:
        return Response(200, json.dumps(whole).encode())
    sent = _events(whole) if not options.get("continued") else _continued(whole, options.get("shown") or b"")
    return Response(200, "".join(_sse(e) for e in sent).encode(), "text/event-stream")


def _events(whole: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream of a whole response, in the order the API sends its events."""
    started = {**whole, "status": "in_progress", "output": [], "usage": None}
    out: list[dict[str, Any]] = [{"type": "response.created", "response": started}, {"type": "response.in_progress", "response": started}]
    for index, item in enumerate(whole["output"]):
        out += _item_events(index, item)
    out.append({"type": "response.completed", "response": whole})
    return [{**event, "sequence_number": n} for n, event in enumerate(out)]


_EMPTY_TEXT = {"type": "output_text", "text": "", "annotations": []}


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """An output item's events at `index`, from its `output_item.added` to its `output_item.done`."""
    at = {"output_index": index}
    out: list[dict[str, Any]] = []
    if item.get("type") == "message":
        text = item["content"][0]["text"]
        where = {"item_id": item["id"], **at, "content_index": 0}
        out.append({"type": "response.output_item.added", **at, "item": {**item, "status": "in_progress", "content": []}})
        out.append({"type": "response.content_part.added", **where, "part": _EMPTY_TEXT})
        out.append({"type": "response.output_text.delta", **where, "delta": text, "logprobs": []})
        return out + _text_done(where, text, item)
    if item.get("type") == "function_call":
        out.append({"type": "response.output_item.added", **at, "item": {**item, "status": "in_progress", "arguments": ""}})
        out.append({"type": "response.function_call_arguments.delta", "item_id": item["id"], **at, "delta": item["arguments"]})
        out.append({"type": "response.function_call_arguments.done", "item_id": item["id"], **at, "arguments": item["arguments"]})
    else:
        out.append({"type": "response.output_item.added", **at, "item": item})
    return out + [{"type": "response.output_item.done", **at, "item": item}]


def _text_done(where: dict[str, Any], text: str, item: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": {**_EMPTY_TEXT, "text": text}},
        {"type": "response.output_item.done", "output_index": where["output_index"], "item": item},
    ]


def _continued(whole: dict[str, Any], shown: bytes) -> list[dict[str, Any]]:
    """The events that end the stream whose first events, `shown`, the agent has, as `whole` (built
    with the text not yet sent): the output items the agent has are completed (the message it was
    reading gets that text, when `whole` is the same response; a reply asked again after a refusal
    has its own, after them), `whole`'s other items follow at the next output indices, then one
    `response.completed` with the whole output as decided; sequence numbers go on from the last sent."""
    started: dict[str, Any] | None = None
    items: dict[int, dict[str, Any]] = {}
    texts: dict[int, str] = {}
    done: set[int] = set()
    last = -1
    for event in stream_events(shown):
        last = event["sequence_number"] if isinstance(event.get("sequence_number"), int) else last
        kind, index = event.get("type"), event.get("output_index")
        if kind == "response.created" and isinstance(event.get("response"), dict):
            started = event["response"]
        elif kind == "response.output_item.added" and isinstance(index, int) and isinstance(event.get("item"), dict):
            items[index] = event["item"]
        elif kind == "response.output_text.delta" and isinstance(index, int) and isinstance(event.get("delta"), str):
            texts[index] = texts.get(index, "") + event["delta"]
        elif kind == "response.output_item.done" and isinstance(index, int) and isinstance(event.get("item"), dict):
            items[index] = event["item"]
            done.add(index)
    if started is None:
        return _events(whole)
    same = started.get("id") == whole.get("id")
    left = list(whole["output"])
    out: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []
    for index in sorted(items):
        item = items[index]
        if index in done:
            output.append(item)
            continue
        if item.get("type") == "message":
            message = next((i for i in left if i["type"] == "message"), None) if same else None
            if message is not None:
                left.remove(message)
            rest = message["content"][0]["text"] if message is not None else ""
            text = texts.get(index, "") + rest
            finished = {**item, "status": "completed", "content": [{**_EMPTY_TEXT, "text": text}]}
            where = {"item_id": item.get("id"), "output_index": index, "content_index": 0}
            if rest:
                out.append({"type": "response.output_text.delta", **where, "delta": rest, "logprobs": []})
            out += _text_done(where, text, finished)
        else:
            kept = next((i for i in left if i.get("id") == item.get("id")), None) if same else None
            if kept is not None:
                left.remove(kept)
            finished = kept or {**item, "status": "completed"}
            out.append({"type": "response.output_item.done", "output_index": index, "item": finished})
        output.append(finished)
    at = max(items, default=-1) + 1
    for n, item in enumerate(left):
        out += _item_events(at + n, item)
    output += left
    out.append({"type": "response.completed", "response": {**whole, "id": started.get("id", whole.get("id")), "output": output}})
    return [{**event, "sequence_number": last + 1 + n} for n, event in enumerate(out)]


def _sse(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
