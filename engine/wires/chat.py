"""The chat completions wire: the engine's neutral form is this API's own shape.

Agent side (the gateway): `check_request` says why a request cannot be served,
`to_neutral` is the request itself, `reply` builds a `chat.completion` (or, for
a streaming request, server-sent `chat.completion.chunk`s ending in `[DONE]`,
the shapes the openai client parses) and `error` this API's error body.
Upstream side (the gateway and the model policy): `from_neutral` is the body
without what other wires kept on it, `endpoint` and `headers` address the
server, `read_whole` reads a whole `chat.completion` and `StreamReader` folds
its server-sent events into a `Reply`.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Unpack

from engine.core.urls import endpoint as join_endpoint
from engine.core.content import content_text
from engine.wires.neutral import ORIGINAL, Reply, ReplyOptions, Response, StreamReading, ToolCall, WireError, arguments_text, messages_problem, stream_event, stream_json, stream_payload, without_original

NAME = "chat"
ROUTES = ("/v1/chat/completions", "/chat/completions")
PASSED_ROUTES: dict[str, str] = {}
"""Agent routes passed through to the same path upstream (none for this wire)."""
ECHO_WITHIN: str | None = "choices"
"""Where in a stream chunk the strings an agent's client joins into text are (see `engine.gateway.echo`)."""
APPENDS_STREAMS = True
"""Whether text sent to the agent before the reply is decided can be followed by the rest (a stream's chunks add to the reply: text sent early is continued by appending chunks; `engine.gateway.early`)."""
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
ITEMS = "messages"

# -- the agent's request ----------------------------------------------------------


def check_request(body: Any, checked: int = 0) -> str | None:
    """Why a chat completions request cannot be served (None when it can), naming the field;
    `checked`: how many of its first messages a check passed already (`engine.wires.neutral.checked_before`)."""
    problem = messages_problem(body, _message_problem, checked)
    if problem is not None:
        return problem
    if body.get("stream_options") is not None and not isinstance(body["stream_options"], dict):
        return "'stream_options' must be an object"
    if body.get("n") not in (None, 1) or isinstance(body.get("n"), bool):
        return "the gateway serves one choice per request ('n' must be 1)"
    return None


def _message_problem(m: Any, where: str) -> str | None:
    if not isinstance(m, dict):
        return f"{where} must be an object"
    role = m.get("role")
    if not isinstance(role, str) or role not in ROLES:
        return f"{where} has no valid role (system, developer, user, assistant or tool)"
    if role == "tool" and not isinstance(m.get("tool_call_id"), str):
        return f"{where} is a tool message without a tool_call_id"
    content = m.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return f"{where}.content must be a string, a list of parts or null"
    calls = m.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"{where}.tool_calls must be a list of tool calls"
    for k, c in enumerate(calls):
        at = f"{where}.tool_calls[{k}]"
        if not isinstance(c, dict):
            return f"{at} must be an object"
        if not isinstance(c.get("id", ""), str):
            return f"{at}.id must be a string"
        function = c.get("function")
        if not isinstance(function, dict):
            return f"{at}.function must be an object with a name and arguments"
        if not isinstance(function.get("name", ""), str):
            return f"{at}.function.name must be a string"
    return None


def to_neutral(body: dict[str, Any], headers: dict[str, str], path: str = "") -> dict[str, Any]:
    """The request in neutral form: the body itself."""
    return body


# -- the request upstream ----------------------------------------------------------

def from_neutral(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The chat completions request for a neutral body: the body itself, without what another
    wire kept on it, and what that wire's request had that this API has no counterpart for."""
    kept = body.get(ORIGINAL)
    if kept is None:
        return body, []
    out = without_original(body)
    out["messages"] = [without_original(m) if isinstance(m, dict) else m for m in out.get("messages") or []]
    return out, list(kept.get("untranslated") or [])


def endpoint(base: str, route: str | None = None, body: dict[str, Any] | None = None) -> str:
    """The URL of the API's endpoint (or of a `PASSED_ROUTES` path) under the server's base URL (which ends in /v1)."""
    return join_endpoint(base, route or "chat/completions")


def headers(key: str | None, body: dict[str, Any]) -> dict[str, str]:
    """The request's headers: the key as the bearer token."""
    out = {"Content-Type": "application/json"}
    if key:
        out["Authorization"] = f"Bearer {key}"
    return out


def read_whole(data: Any) -> Reply:
    """Read a whole reply (a parsed JSON body)."""
    return reply_from_json(data)


def stream_reader(on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> StreamReader:
    """A reader passing the content to `on_delta` and the reasoning (`reasoning_content`, `reasoning`) to `on_thinking`."""
    return StreamReader(on_delta, on_thinking)


# -- replies --------------------------------------------------------------------


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


def error_of(data: dict[str, Any]) -> str | None:
    """The message of an `{"error": ...}` body (OpenAI's, and Google's shape alike), None when there is no error."""
    error = data.get("error")
    if error is None:
        return None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)
    return str(error)


def reply_object(data: Any) -> dict[str, Any]:
    """A reply's body (or a streamed chunk of it) as the object it must be; a WireError when it
    is not one or reports an error (`error_of`)."""
    if not isinstance(data, dict):
        raise WireError("the reply is not a JSON object")
    error = error_of(data)
    if error is not None:
        raise WireError(f"the server reported an error: {error}")
    return data


def reply_from_json(data: Any) -> Reply:
    """Read a whole chat completions response."""
    data = reply_object(data)
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
        arguments = arguments_text(function.get("arguments"))  # some servers send an object instead of a JSON string
        reply.tool_calls.append(
            ToolCall(id=str(call.get("id") or ""), name=str(function.get("name") or ""), arguments=arguments)
        )
    _read_usage(reply, data.get("usage"))
    return reply


class StreamReader(StreamReading):
    """Folds server-sent-event lines into a `Reply`, passing content deltas on (and reasoning
    deltas, `reasoning_content` or `reasoning` as servers name them, to `on_thinking`)."""

    def __init__(self, on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> None:
        super().__init__(on_delta, on_thinking)
        self._calls: dict[int, ToolCall] = {}

    def feed(self, line: str) -> None:
        """One line of the event stream (comments, `event:` lines and blanks are ignored)."""
        payload = stream_payload(line)
        if payload is None:
            return
        if payload == "[DONE]":
            self.done = True
            return
        chunk = stream_json(payload)
        if not isinstance(chunk, dict):
            raise WireError("a stream chunk is not a JSON object")
        error = error_of(chunk)
        if error is not None:
            raise WireError(f"the server reported an error mid-stream: {error}")
        _read_usage(self._reply, chunk.get("usage"))
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise WireError("a stream chunk's choices are not a list")
        self.plain = self.plain and len(choices) <= 1
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                self.plain = False  # another choice: a client reading `choices[0]` may join it with the first
                continue
            self.plain = self.plain and type(choice.get("index", 0)) is int
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise WireError("a choice's delta is not a JSON object")
            text = _text_of(delta.get("content"))
            if text:
                self._add_text(text)
                self._on_delta(text)
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thought, str) and thought and self._on_thinking is not None:
                self._on_thinking(thought)
            for n, call in enumerate(delta.get("tool_calls") or []):
                self._tool_call_delta(n, call)
            if choice.get("finish_reason"):
                self._reply.finish_reason = choice["finish_reason"]

    def _tool_call_delta(self, position: int, call: Any) -> None:
        if not isinstance(call, dict):
            raise WireError("a tool call delta is not a JSON object")
        index = call.get("index", position)
        if type(index) is not int:
            if not isinstance(index, (int, float, str)) or isinstance(index, bool):
                raise WireError("a tool call delta's index is not a number")
            self.plain = False
        elif not 0 <= index <= len(self._calls):  # a client adds a call at its index as a place in a list (-1: the last)
            self.plain = False
        current = self._calls.get(index)
        if current is None:
            current = self._calls[index] = ToolCall()
            self._reply.tool_calls.append(current)
        if call.get("id") and not current.id:
            current.id = str(call["id"])
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise WireError("a tool call delta's function is not a JSON object")
        name = function.get("name")
        if name and name != current.name:
            current.name += str(name)
        self._add_arguments(current, arguments_text(function.get("arguments")))

    @property
    def complete(self) -> bool:
        """The stream ended properly (a `[DONE]` line or a finish reason), not cut."""
        return self.done or self._reply.finish_reason is not None


# -- what goes back to the agent ----------------------------------------------------


def stream_error(body: bytes) -> bytes:
    """An error body as an event of this API's stream."""
    return stream_event(body)


def error_response(status: int, message: str, kind: str | None = None, code: str | None = None) -> Response:
    kind = kind or "invalid_request_error"
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return Response(status, json.dumps(body).encode())


def built_reply(content: str | None, calls: list[dict[str, Any]], **options: Unpack[ReplyOptions]) -> Response:
    """A reply the gateway wrote: `calls` are chat completions tool calls (id, type, function).
    (`original`, the upstream's reply it replaces, adds nothing here: this API's replies hold
    no field the neutral form does not.)"""
    model, usage = options["model"], options.get("usage")
    created = int(time.time())
    ident = f"chatcmpl-agent-tui-{time.monotonic_ns()}"
    finish = "tool_calls" if calls else "stop"
    usage_body = (
        {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens, "total_tokens": usage.input_tokens + usage.output_tokens}
        if usage is not None
        else None
    )
    if not options["stream"]:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        data: dict[str, Any] = {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        }
        if usage_body is not None:
            data["usage"] = usage_body
        return Response(200, json.dumps(data).encode())
    base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model}
    if options.get("continued"):  # the agent has the stream's role already: a client joins it again
        deltas: list[dict[str, Any]] = [{"content": content}] if content else []
    else:
        deltas = [{"role": "assistant", "content": content or ""}]
    for n, call in enumerate(calls):
        deltas.append({"tool_calls": [{"index": n, **call}]})
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if options.get("include_usage") and usage_body is not None:
        chunks.append({**base, "choices": [], "usage": usage_body})
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Response(200, text.encode(), "text/event-stream")


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def models_list(names: list[str]) -> Response:
    data = [{"id": n, "object": "model", "created": 0, "owned_by": "agent-tui"} for n in names]
    return Response(200, json.dumps({"object": "list", "data": data}).encode())


def error_detail(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
    except (ValueError, RecursionError):
        pass
    return raw[:300].decode("utf-8", "replace") or "no detail"
