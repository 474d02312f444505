"""The Anthropic Messages wire (`POST /v1/messages`), to the neutral form and back.

Agent side: a Messages request becomes a neutral (chat completions shaped) body:
`system` (a string or text blocks) and `role: "system"` messages become system
messages, `tool_use` blocks tool calls, `tool_result` blocks tool messages, the
tools function definitions. The request itself is kept under `ORIGINAL` (on the
body, and each message on the first neutral message it became), so an upstream
of this wire gets it back as it came: system blocks with `cache_control`,
`thinking`, signatures and every field not understood. What another wire has no
counterpart for is listed (`untranslated`), to be said once.

Replies: a whole `message`, or its server-sent events (`message_start`,
`content_block_start` / `_delta` / `_stop`, `message_delta`, `message_stop`),
read into a `Reply` that keeps the whole message; a reply the gateway changed is
rebuilt from that message (its thinking blocks, signatures and unknown blocks
kept, the tool uses the operator released, with their edited input), whole or
as the same events. Errors have this API's shape: `{"type": "error", "error":
{"type": ..., "message": ...}}`.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any, Callable, Unpack
from urllib.parse import urlsplit

from engine.core.urls import endpoint as join_endpoint
from engine.wires.neutral import ORIGINAL, Reply, ReplyOptions, Response, StreamReading, ToolCall, WireError, message_text, messages_problem, original_of, reply_message_of, rest_after, split_lines, stream_event, stream_json, stream_payload

NAME = "anthropic"
ROUTES = ("/v1/messages", "/messages")
PASSED_ROUTES = {"/v1/messages/count_tokens": "messages/count_tokens", "/messages/count_tokens": "messages/count_tokens"}
ECHO_WITHIN: str | None = None
APPENDS_STREAMS = True
"""Whether text sent to the agent before the reply is decided can be followed by the rest (a stream is one message: a rebuilt tail takes it up at the block the agent's copy stops in, with the next indices, and ends it; `engine.gateway.early`)."""
VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""`max_tokens` for a request from another wire that sets none (this API requires one)."""
REFUSED = "REJECTED"
"""How the engine's result of a call the operator refused begins: sent as an error result."""
_PASSED_HEADERS = ("anthropic-version", "anthropic-beta")
_ROLES = frozenset({"user", "assistant", "system"})
ITEMS = "messages"
_MAPPED = frozenset({"model", "messages", "system", "tools", "tool_choice", "stream", "max_tokens", "temperature", "top_p", "stop_sequences"})
_CHAT_MAPPED = frozenset(
    {"model", "messages", "tools", "tool_choice", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "user"}
)
_STOP_REASONS = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length", "stop_sequence": "stop", "pause_turn": "stop", "refusal": "content_filter"}
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error", 503: "overloaded_error"}
_OWN_ERROR_TYPES = frozenset(_ERROR_TYPES.values()) | {"api_error"}


# -- the agent's request ----------------------------------------------------------


def check_request(body: Any, checked: int = 0) -> str | None:
    """Why a Messages request cannot be served (None when it can), naming the field;
    `checked`: how many of its first messages a check passed already (`engine.wires.neutral.checked_before`)."""
    problem = messages_problem(body, _message_problem, checked)
    if problem is not None:
        return problem
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        return "'system' must be a string or a list of text blocks"
    if isinstance(system, list) and not all(isinstance(b, dict) for b in system):
        return "'system' blocks must be objects"
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            return "'tools' must be a list of tools"
        for k, t in enumerate(tools):
            if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not t["name"]:
                return f"tools[{k}] must be an object with a name"
    return None


def _message_problem(m: Any, where: str) -> str | None:
    if not isinstance(m, dict):
        return f"{where} must be an object"
    if not isinstance(m.get("role"), str) or m["role"] not in _ROLES:
        return f"{where} has no valid role (user, assistant or system)"
    content = m.get("content")
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"{where}.content must be a string or a list of content blocks"
    for k, block in enumerate(content):
        at = f"{where}.content[{k}]"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return f"{at} must be a content block with a type"
        kind = block["type"]
        if kind == "tool_use" and (not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str) or not isinstance(block.get("input", {}), dict)):
            return f"{at} is a tool_use block without a string id and name and an object input"
        if kind == "tool_result" and not isinstance(block.get("tool_use_id"), str):
            return f"{at} is a tool_result block without a tool_use_id"
        if kind == "text" and not isinstance(block.get("text"), str):
            return f"{at} is a text block without a text"
    return None


def to_neutral(body: dict[str, Any], headers: dict[str, str], path: str = "") -> dict[str, Any]:
    """The request in neutral form, keeping the request itself (and what another wire would lose)."""
    untranslated = [f"'{k}'" for k in body if k not in _MAPPED]
    lost: set[str] = set()
    messages: list[dict[str, Any]] = []
    system = _text(body.get("system"), lost)
    if system:
        messages.append({"role": "system", "content": system})
    for m in body["messages"]:
        messages.extend(_neutral_messages(m, lost))
    neutral: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = [_neutral_tool(t, lost) for t in body.get("tools") or []]
    if any(t is not None for t in tools):
        neutral["tools"] = [t for t in tools if t is not None]
    choice = _neutral_choice(body.get("tool_choice"))
    if choice is not None:
        neutral["tool_choice"] = choice
    for ours, theirs in (("max_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "top_p"), ("stop_sequences", "stop")):
        if ours in body:
            neutral[theirs] = body[ours]
    if body.get("stream"):
        neutral["stream"] = True
        neutral["stream_options"] = {"include_usage": True}
    kept_headers = {k: headers[k] for k in _PASSED_HEADERS if k in headers}
    neutral[ORIGINAL] = {"wire": NAME, "body": body, "headers": kept_headers, "untranslated": untranslated + sorted(lost)}
    return neutral


def _text(content: Any, lost: set[str]) -> str:
    """The text of a string or of a list of blocks (their text blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if "cache_control" in block:
            lost.add("cache_control")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") not in (None, "text"):
            lost.add(f"{block['type']} blocks")
    return "\n".join(parts)


def _neutral_messages(m: dict[str, Any], lost: set[str]) -> list[dict[str, Any]]:
    """One Messages message as neutral messages: the first keeps the message, the rest mark
    themselves as part of it (`ORIGINAL: None`)."""
    role, content = m["role"], m.get("content")
    out: list[dict[str, Any]] = []
    if isinstance(content, str) or role == "system":
        out.append({"role": role, "content": _text(content, lost)})
    elif role == "assistant":
        texts, calls = [], []
        for block in content:
            if "cache_control" in block:
                lost.add("cache_control")
            kind = block.get("type")
            if kind == "text":
                texts.append(block["text"])
            elif kind == "tool_use":
                arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
                calls.append({"id": block["id"], "type": "function", "function": {"name": block["name"], "arguments": arguments}})
            else:
                lost.add(f"{kind} blocks")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
        if calls:
            message["tool_calls"] = calls
        out.append(message)
    else:
        texts = []
        for block in content:
            if "cache_control" in block:
                lost.add("cache_control")
            kind = block.get("type")
            if kind == "tool_result":
                result = _text(block.get("content"), lost)
                out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": result})
            elif kind == "text":
                texts.append(block["text"])
            else:
                lost.add(f"{kind} blocks")
        if texts or not out:
            out.append({"role": "user", "content": "\n".join(texts)})
    out[0][ORIGINAL] = m
    for rest in out[1:]:
        rest[ORIGINAL] = None
    return out


def _neutral_tool(tool: dict[str, Any], lost: set[str]) -> dict[str, Any] | None:
    if "cache_control" in tool:
        lost.add("cache_control")
    if tool.get("type") not in (None, "custom"):
        lost.add(f"the server tool {tool['name']} ({tool['type']})")
        return None
    function = {"name": tool["name"], "description": tool.get("description") or "", "parameters": tool.get("input_schema") or {"type": "object", "properties": {}}}
    return {"type": "function", "function": function}


def _neutral_choice(choice: Any) -> Any:
    if not isinstance(choice, dict):
        return None
    kind = choice.get("type")
    if kind == "tool" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    return {"auto": "auto", "any": "required", "none": "none"}.get(kind)


# -- the request upstream ----------------------------------------------------------


def from_neutral(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The Messages request for a neutral body: the agent's own request when it came in this
    wire (its latest messages, with the messages the gateway added spliced in where they
    belong), else one built from the neutral messages; and what has no counterpart here."""
    kept = original_of(body, NAME)
    if kept is not None:
        return _as_sent(body, kept["body"]), []
    notes = [f"'{k}'" for k in body if k not in _CHAT_MAPPED and k != ORIGINAL]
    other = body.get(ORIGINAL)
    if isinstance(other, dict):
        notes += list(other.get("untranslated") or [])
    system, messages = _built_messages(body.get("messages") or [])
    out: dict[str, Any] = {"model": body.get("model"), "max_tokens": body.get("max_tokens") or body.get("max_completion_tokens") or DEFAULT_MAX_TOKENS, "messages": messages}
    if system:
        out["system"] = system
    tools = [_built_tool(t) for t in body.get("tools") or [] if isinstance(t, dict)]
    if tools:
        out["tools"] = [t for t in tools if t is not None]
    choice = _built_choice(body.get("tool_choice"))
    if choice is not None:
        out["tool_choice"] = choice
    for theirs, ours in (("temperature", "temperature"), ("top_p", "top_p")):
        if theirs in body:
            out[ours] = body[theirs]
    stop = body.get("stop")
    if stop:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if body.get("stream"):
        out["stream"] = True
    return out, notes


def _as_sent(body: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The agent's request with its messages taken in the agent's latest words: each neutral message
    that kept a Messages message stands for the agent's next message; one the gateway added is built."""
    latest = list(request["messages"])
    at = 0
    messages: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []
    for m in body.get("messages") or []:
        if ORIGINAL in m:
            if added:
                messages.extend(_built_messages(added)[1])
                added = []
            if m[ORIGINAL] is not None:
                messages.append(latest[at] if at < len(latest) else m[ORIGINAL])
                at += 1
        elif m.get("role") != "system":
            added.append(m)
    if added:
        messages.extend(_built_messages(added)[1])
    messages.extend(latest[at:])
    out = {**request, "messages": messages}
    if body.get("model"):
        out["model"] = body["model"]
    return out


def _built_messages(neutral: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Neutral messages as the system text and Messages messages (tool results folded into user turns)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in neutral:
        role = m.get("role")
        text = message_text(m.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            for call in m.get("tool_calls") or []:
                function = call.get("function") or {}
                blocks.append({"type": "tool_use", "id": call.get("id") or "", "name": function.get("name") or "", "input": _input(function.get("arguments"))})
            add("assistant", blocks or [{"type": "text", "text": "(no reply)"}])
        elif role in ("tool", "function"):
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(m.get("tool_call_id") or ""), "content": text}
            if text.startswith(REFUSED):
                result["is_error"] = True
            add("user", [result])
        else:
            add("user", [{"type": "text", "text": text or "(empty)"}])
    return "\n\n".join(system), out


def _input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except (ValueError, RecursionError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _built_tool(tool: dict[str, Any]) -> dict[str, Any] | None:
    function = tool.get("function")
    if not isinstance(function, dict):
        return None
    return {"name": function.get("name"), "description": function.get("description") or "", "input_schema": function.get("parameters") or {"type": "object", "properties": {}}}


def _built_choice(choice: Any) -> dict[str, Any] | None:
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        return {"type": "tool", "name": name} if name else None
    return {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}.get(choice) if isinstance(choice, str) else None


def endpoint(base: str, route: str | None = None, body: dict[str, Any] | None = None) -> str:
    """`/v1/messages` (or a `PASSED_ROUTES` path) under the server's base URL, with or without its `/v1`."""
    path = route or "messages"
    root = urlsplit(base).path.rstrip("/")
    return join_endpoint(base, path if root.endswith("/v1") else f"v1/{path}")


def headers(key: str | None, body: dict[str, Any]) -> dict[str, str]:
    """The key as `x-api-key`, the API version (and the agent's beta list, when it sent one)."""
    out = {"Content-Type": "application/json", "anthropic-version": VERSION}
    kept = original_of(body, NAME)
    if kept is not None:
        out.update(kept.get("headers") or {})
    if key:
        out["x-api-key"] = key
    return out


# -- replies ------------------------------------------------------------------------


def read_whole(data: Any) -> Reply:
    """Read a whole `message`."""
    if not isinstance(data, dict):
        raise WireError("the reply is not a JSON object")
    if data.get("type") == "error":
        raise WireError(f"the server reported an error: {_error_message(data)}")
    if not isinstance(data.get("content"), list):
        raise WireError("the reply has no content blocks")
    return _reply(data)


def _reply(message: dict[str, Any]) -> Reply:
    reply = Reply(wire=NAME, message=message, finish_reason=_STOP_REASONS.get(message.get("stop_reason") or "", message.get("stop_reason")))
    for block in message["content"]:
        if not isinstance(block, dict):
            raise WireError("a content block of the reply is not an object")
        if block.get("type") == "text":
            reply.content += str(block.get("text") or "")
        elif block.get("type") == "tool_use":
            raw = block.get("input")
            arguments = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {})
            reply.tool_calls.append(ToolCall(id=str(block.get("id") or ""), name=str(block.get("name") or ""), arguments=arguments))
    _usage(reply, message.get("usage"))
    return reply


def _usage(reply: Reply, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    read = [usage.get(k) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
    if isinstance(read[0], int):
        reply.input_tokens = sum(n for n in read if isinstance(n, int))
    if isinstance(usage.get("output_tokens"), int):
        reply.output_tokens = usage["output_tokens"]


def _error_message(data: dict[str, Any]) -> str:
    error = data.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)
    return str(error)


class StreamReader(StreamReading):
    """Folds the Messages events into the whole message and its `Reply`, passing text deltas on."""

    WIRE = NAME

    def __init__(self, on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> None:
        super().__init__(on_delta, on_thinking)
        self._message: dict[str, Any] | None = None
        self._json: dict[int, list[str]] = {}
        self._growing: dict[tuple[int, str], list[str]] = {}
        """Pieces of a block's text, thinking or signature read and not added to it yet (`_settle`)."""
        self.stopped: set[int] = set()
        """The indices of the blocks whose `content_block_stop` came."""
        self._open: int | None = None
        """The block started and not stopped yet."""

    def feed(self, line: str) -> None:
        """One line of the event stream (`event:` lines, comments and blanks are ignored)."""
        payload = stream_payload(line)
        if payload is None:
            return
        event = stream_json(payload)
        if not isinstance(event, dict):
            raise WireError("a stream event is not a JSON object")
        kind = event.get("type")
        if kind == "error":
            raise WireError(f"the server reported an error mid-stream: {_error_message(event)}")
        if kind == "message_start":
            started = event.get("message")
            if not isinstance(started, dict):
                raise WireError("message_start carries no message")
            had = started.get("content") or []
            if not isinstance(had, list):
                raise WireError("message_start's content is not a list")
            self.plain = self.plain and not had
            self._settle()  # into the blocks of the message read so far, which this one replaces
            self._message = {**started, "content": list(had)}
            self._reply.message = self._message
            _usage(self._reply, self._message.get("usage"))
            return
        if kind in (None, "ping") or self._message is None:
            return
        content = self._message["content"]
        index = event.get("index")
        if kind == "content_block_start":
            block = event.get("content_block")
            if not isinstance(block, dict) or type(index) is not int or not 0 <= index <= len(content):
                raise WireError(f"content_block_start carries no block, or starts block {index!r} where block {len(content)} comes next")
            if index < len(content) or any(block.get(f) for f in ("text", "thinking")) or self._open is not None:
                self.plain = False  # started again, begun with text, or before the block before it stopped
            self._open = index
            if index == len(content):
                content.append({})
            self._settle_block(content, index)  # into the block this one replaces
            content[index] = copy.deepcopy(block)
            if block.get("type") == "tool_use":
                self._json[index] = []
        elif kind == "content_block_delta":
            if type(index) is not int or not 0 <= index < len(content) or not isinstance(event.get("delta"), dict):
                raise WireError("content_block_delta for a block that was not started")
            self.plain = self.plain and index == self._open  # the blocks come one after the other
            self._delta(content[index], index, event["delta"])
        elif kind == "content_block_stop":
            if type(index) is not int or not 0 <= index < len(content):
                raise WireError("content_block_stop for a block that was not started")
            self.plain = self.plain and index == self._open
            self._open = None
            self.stopped.add(index)
            self._settle_block(content, index)
            if index in self._json:
                self._tool_use_done(content[index], "".join(self._json.pop(index)))
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict):
                self._message.update(delta)
                if delta.get("stop_reason"):
                    self._reply.finish_reason = _STOP_REASONS.get(delta["stop_reason"], delta["stop_reason"])
            usage = event.get("usage")
            if isinstance(usage, dict):
                self._message["usage"] = {**(self._message.get("usage") or {}), **usage}
                _usage(self._reply, self._message["usage"])
        elif kind == "message_stop":
            self.done = True

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            text = str(delta.get("text") or "")
            self._grow(block, index, "text", text)
            self._add_text(text)
            if text:
                self._on_delta(text)
        elif kind == "input_json_delta":
            self._json.setdefault(index, []).append(str(delta.get("partial_json") or ""))
        elif kind == "thinking_delta":
            thought = str(delta.get("thinking") or "")
            self._grow(block, index, "thinking", thought)
            if thought and self._on_thinking is not None:
                self._on_thinking(thought)
        elif kind == "signature_delta":
            self._grow(block, index, "signature", str(delta.get("signature") or ""))
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))
        else:  # a delta this module does not know: kept on the block as it came
            block.setdefault(ORIGINAL, []).append(delta)

    def _grow(self, block: dict[str, Any], index: int, field: str, piece: str) -> None:
        """`piece` of block `index`'s `field`, kept until the block is settled (the field in its
        place among the block's keys from the first piece, as a string added to would be)."""
        pieces = self._growing.get((index, field))
        if pieces is None:
            block.setdefault(field, "")
            pieces = self._growing[(index, field)] = []
        pieces.append(piece)

    def _settle(self) -> None:
        """The reply's text, and each block's pieces added to it (`_settle_block`)."""
        super()._settle()
        if self._growing and self._message is not None:
            for index in sorted({index for index, _ in self._growing}):
                self._settle_block(self._message["content"], index)

    def _settle_block(self, content: list[dict[str, Any]], index: int) -> None:
        """The text, thinking and signature pieces read for block `index` added to it."""
        for field in ("text", "thinking", "signature"):
            pieces = self._growing.pop((index, field), None)
            if pieces is not None:
                block = content[index]
                block[field] = str(block.get(field) or "") + "".join(pieces)

    def _tool_use_done(self, block: dict[str, Any], raw: str) -> None:
        arguments = raw if raw.strip() else json.dumps(block.get("input") or {})
        try:
            block["input"] = json.loads(arguments)
        except (ValueError, RecursionError):
            block["input"] = arguments  # unreadable: the engine reports it as the call's args_error
        self._reply.tool_calls.append(ToolCall(id=str(block.get("id") or ""), name=str(block.get("name") or ""), arguments=arguments))

    @property
    def complete(self) -> bool:
        """The stream ended with `message_stop`, not cut."""
        return self.done


def stream_reader(on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> StreamReader:
    return StreamReader(on_delta, on_thinking)


# -- what goes back to the agent ----------------------------------------------------


def stream_error(body: bytes) -> bytes:
    """An error body as an event of this API's stream (named `error`, as the API names its events)."""
    return stream_event(body, "error")


def error_response(status: int, message: str, kind: str | None = None, code: str | None = None) -> Response:
    """This API's error body; no kind, or one it does not have, becomes the one for the status."""
    if kind not in _OWN_ERROR_TYPES:
        kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return Response(status, json.dumps(body).encode())


def error_detail(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        if isinstance(data, dict) and isinstance(data.get("error"), dict) and data["error"].get("message"):
            return str(data["error"]["message"])[:300]
    except (ValueError, RecursionError):
        pass
    return raw[:300].decode("utf-8", "replace") or "no detail"


def built_reply(content: str | None, calls: list[dict[str, Any]], **options: Unpack[ReplyOptions]) -> Response:
    """A reply the gateway wrote (`calls`: neutral tool calls). Rebuilt from `original`, the
    upstream's Messages reply, when there is one: its blocks as they came but for the tool
    uses, which are the released calls with their (edited) input; else written anew."""
    usage, original = options.get("usage"), reply_message_of(options.get("original"), NAME)
    if original is not None:
        message = _rebuilt(original, calls)
    else:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
        blocks += [_tool_use(call) for call in calls]
        message = {
            "id": f"msg_agent_tui_{time.monotonic_ns()}", "type": "message", "role": "assistant", "model": options["model"],
            "content": blocks, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": usage.input_tokens if usage else 0, "output_tokens": usage.output_tokens if usage else 0},
        }
    if not options["stream"]:
        return Response(200, json.dumps(message).encode())
    sent = events(message) if not options.get("continued") else _continued(message, options.get("shown") or b"")
    text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in sent)
    return Response(200, text.encode(), "text/event-stream")


def _tool_use(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {"type": "tool_use", "id": call.get("id") or "", "name": function.get("name") or "", "input": _input(function.get("arguments"))}


def _rebuilt(message: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """`message` with its tool uses replaced by `calls`, in order: each block takes the first call
    left with its id, else (a call given an id of its own: the upstream repeated one) the first call
    left of its name whose id no block has; a block no call takes is dropped. The rest as it came."""
    left = [_tool_use(c) for c in calls]
    ids = {b.get("id") for b in message["content"] if b.get("type") == "tool_use"}
    blocks: list[dict[str, Any]] = []
    for block in message["content"]:
        if block.get("type") != "tool_use":
            blocks.append({k: v for k, v in block.items() if k != ORIGINAL})
            continue
        use = next((u for u in left if u["id"] == block.get("id")), None)
        if use is None:
            use = next((u for u in left if u["id"] not in ids and u["name"] == block.get("name")), None)
        if use is not None:
            left.remove(use)
            blocks.append({**block, "id": use["id"], "input": use["input"]})
    blocks.extend(left)
    uses = any(b.get("type") == "tool_use" for b in blocks)
    return {**message, "content": blocks, "stop_reason": "tool_use" if uses else ("end_turn" if message.get("stop_reason") == "tool_use" else message.get("stop_reason"))}


def events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A whole message as the stream events this API sends for it."""
    usage = message.get("usage") or {}
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 0}}
    out: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        out += _block_events(index, block)
    return out + _message_end(message)


def _block_events(index: int, block: dict[str, Any], after: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """A block's start, deltas and stop at `index`; `after`: the same block as the agent has it
    already (started, cut short): only what follows that, and the stop."""
    kind = block.get("type")
    if kind == "text":
        opened: dict[str, Any] = {k: v for k, v in block.items() if k != "citations"}
        opened["text"] = ""
        deltas = [{"type": "text_delta", "text": str(block.get("text") or "")}]
        deltas += [{"type": "citations_delta", "citation": c} for c in block.get("citations") or []]
    elif kind == "tool_use":
        opened = {**block, "input": {}}
        raw = block.get("input")
        deltas = [{"type": "input_json_delta", "partial_json": raw if isinstance(raw, str) else json.dumps(raw or {})}]
    elif kind == "thinking":
        opened = {**block, "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": str(block.get("thinking") or "")}]
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": str(block["signature"])})
    else:  # redacted thinking and blocks this module does not know: whole in their start
        opened, deltas = block, []
    if after is not None:
        deltas = [d for d in (_rest_of(d, after) for d in deltas) if d is not None]
    out = [] if after is not None else [("content_block_start", {"type": "content_block_start", "index": index, "content_block": opened})]
    out.extend(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas)
    out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


_DELTA_FIELDS = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}


def _rest_of(delta: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """What of a whole block's `delta` the agent does not have, given its copy `after` (None:
    nothing), as `rest_after` reads it (`_begins` made sure it goes on from the agent's copy)."""
    if delta["type"] == "citations_delta":
        return None if delta["citation"] in (after.get("citations") or []) else delta
    field = _DELTA_FIELDS.get(delta["type"])
    if field is None:
        return delta
    rest = rest_after(delta[field], str(after.get(field) or ""))
    return {**delta, field: rest} if rest else None


def _message_end(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    delta = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    return [("message_delta", {"type": "message_delta", "delta": delta, "usage": message.get("usage") or {}}), ("message_stop", {"type": "message_stop"})]


def _continued(message: dict[str, Any], shown: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The events that end the stream whose first events, `shown`, the agent has, as `message`:
    when those are its start (the same message, each block the agent has the beginning of one of
    its blocks), the rest of the block they stop in and the blocks after it; else (a reply asked
    again after a refusal) the blocks the agent has are closed and `message`'s follow them, with
    the next indices. Then the message's end: one message, one `message_start`, indices in order."""
    reader = StreamReader(lambda _: None)
    try:
        for line in split_lines(shown, final=True)[0]:
            reader.feed(line.decode("utf-8", "replace").rstrip("\r\n"))
    except WireError:
        pass
    started = reader.reply.message
    if started is None:
        return events(message)
    had = started["content"]
    blocks = message["content"]
    same = started.get("id") == message.get("id") and len(had) <= len(blocks) and all(_begins(a, b) for a, b in zip(had, blocks))
    out: list[tuple[str, dict[str, Any]]] = []
    if same:
        for index, block in enumerate(blocks):
            if index < len(had):
                if index not in reader.stopped:
                    out += _block_events(index, block, after=had[index])
            else:
                out += _block_events(index, block)
    else:
        out += [("content_block_stop", {"type": "content_block_stop", "index": i}) for i in range(len(had)) if i not in reader.stopped]
        for index, block in enumerate(blocks):
            out += _block_events(len(had) + index, block)
    return out + _message_end(message)


def _begins(had: dict[str, Any], block: dict[str, Any]) -> bool:
    """Whether the agent's copy `had` of a block is the start of `block`: of its type, each of its
    texts going on in the block's (`rest_after`: also where a key's first characters went early
    and the block, masked, has the mask after the start they share)."""
    if had.get("type") != block.get("type"):
        return False
    return all(rest_after(str(block.get(f) or ""), str(had.get(f) or "")) is not None for f in ("text", "thinking", "signature"))
