"""The Gemini API wire: `models/MODEL:generateContent` and `:streamGenerateContent?alt=sse`, as Gemini CLI speaks it.

Agent side (the gateway): `check_request` says why a request cannot be served,
`to_neutral` turns `systemInstruction` and `contents` (`text`, `functionCall`,
`functionResponse` parts) into chat messages, each keeping the contents it came
from, and the route's model and method into the body's `model` and `stream`;
`built_reply` writes a `GenerateContentResponse`, or for a streaming request
server-sent events each holding one, keeping the parts of the upstream's reply
it does not rebuild (thoughts, their signatures) as they came.
Calls carry no id in this API (an agent such as Gemini CLI makes up its own), so
the neutral id of a call is its place in its turn (`call_0`, `call_1`...), in
the agent's history and in the upstream's reply alike; a `functionResponse` is
matched to its call by the agent's id, else by name and order.
Upstream side: `from_neutral` gives the contents back as they came and writes
the rest (the calls the operator rejected and why: a `functionCall` and a
`functionResponse` with the reason as its `error`); `endpoint` names the model
and method, the key goes as `x-goog-api-key`. Errors are Google's error body,
`{"error": {"code", "message", "status"}}`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Unpack

from engine.wires.chat import error_detail as chat_error_detail
from engine.wires.chat import reply_object
from engine.wires.neutral import ORIGINAL, Reply, ReplyOptions, Response, StreamReading, ToolCall, WireError, first_problem, listed_problem, original_of, reply_message_of, rest_after, stream_event, stream_events, stream_json, stream_payload

NAME = "gemini"
ROUTE = re.compile(r"^/(v1beta|v1|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
"""The agent's routes: the model and the method are in the path (`countTokens` is passed through, `passed_route`)."""
ROUTES: tuple[str, ...] = ()
ITEMS = "contents"
PASSED_ROUTES: dict[str, str] = {}
ECHO_WITHIN: str | None = "candidates"
"""Where in a streamed chunk the strings an agent's client joins into text are."""
APPENDS_STREAMS = True
"""Whether text sent to the agent before the reply is decided can be followed by the rest (each event is a whole response whose parts add to the reply: text sent early is continued by appending events; `engine.gateway.early`)."""
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 405: "INVALID_ARGUMENT",
          409: "ABORTED", 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT", 421: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED",
          500: "INTERNAL", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_CONFIG = (("temperature", "temperature"), ("topP", "top_p"), ("maxOutputTokens", "max_tokens"))
"""`generationConfig` fields and their chat completions names."""


def route(path: str) -> tuple[str, str] | None:
    """The model and the method (generateContent or streamGenerateContent) of an agent's path."""
    found = ROUTE.match(path)
    return (found.group(2), found.group(3)) if found else None


def passed_route(path: str) -> str | None:
    """The upstream path an agent's `:countTokens` path is passed through to (None for the other routes)."""
    found = route(path)
    return f"models/{found[0]}:countTokens" if found is not None and found[1] == "countTokens" else None


def counted(body: bytes, estimate: Callable[[str], int]) -> Response:
    """`:countTokens` answered without a Gemini upstream: the `estimate` of the request's text
    (its contents' and system instruction's text, calls and results as JSON)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return error_response(400, "agent-tui gateway: the request body is not valid JSON")
    if not isinstance(data, dict):
        return error_response(400, "agent-tui gateway: the request body must be a JSON object")
    request = data.get("generateContentRequest") if isinstance(data.get("generateContentRequest"), dict) else data
    pieces: list[str] = []
    system = request.get("systemInstruction")
    for content in [system, *(request.get("contents") or [])] if isinstance(request.get("contents") or [], list) else [system]:
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                text = part.get("text")
                pieces.append(text if isinstance(text, str) else json.dumps({k: v for k, v in part.items() if k != "thoughtSignature"}, ensure_ascii=False))
    return Response(200, json.dumps({"totalTokens": estimate(" ".join(pieces))}).encode())


# -- the agent's request ----------------------------------------------------------


def check_request(body: Any, checked: int = 0) -> str | None:
    """Why a Gemini request cannot be served (None when it can), naming the field;
    `checked`: how many of its first contents a check passed already (`engine.wires.neutral.checked_before`)."""
    problem = listed_problem(body, "contents", _content_problem, checked)
    if problem is not None:
        return problem
    if body.get("tools") is not None and not isinstance(body["tools"], list):
        return "'tools' must be a list of tools"
    return None


def _content_problem(content: Any, where: str) -> str | None:
    if not isinstance(content, dict):
        return f"{where} must be an object"
    if content.get("role", "user") not in ("user", "model", "function"):
        return f"{where}.role must be user or model"
    parts = content.get("parts")
    if not isinstance(parts, list):
        return f"{where}.parts must be a list of parts"
    return first_problem(parts, f"{where}.parts", _part_problem)


def _part_problem(part: Any, where: str) -> str | None:
    if not isinstance(part, dict):
        return f"{where} must be an object"
    for key in ("functionCall", "functionResponse"):
        if key in part and (not isinstance(part[key], dict) or not isinstance(part[key].get("name"), str)):
            return f"{where}.{key} must be an object with a name"
    return None


def _text(parts: Any) -> str:
    """The text of parts (thoughts left out)."""
    if not isinstance(parts, list):
        return ""
    return "".join(str(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought"))


def _result_text(response: Any) -> str:
    if isinstance(response, dict):
        for key in ("output", "error", "content", "result"):
            if isinstance(response.get(key), str) and len(response) == 1:
                return response[key]
        if isinstance(response.get("output"), str):
            return response["output"]
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


def to_neutral(body: dict[str, Any], headers: dict[str, str], path: str = "") -> dict[str, Any]:
    """The request as a chat completions body, for the model its `path` names, streamed when that is
    `:streamGenerateContent`."""
    model, method = route(path) or ("", "generateContent")
    messages: list[dict[str, Any]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        messages.append({"role": "system", "content": system if isinstance(system, str) else _text(system.get("parts")), ORIGINAL: []})
    calls: list[tuple[str, str, str]] = []
    """The last model turn's calls: (the agent's id, name, neutral id)."""
    for content in body["contents"]:
        parts = content.get("parts") or []
        if content.get("role") == "model":
            calls = []
            tool_calls = []
            for part in parts:
                call = part.get("functionCall")
                if isinstance(call, dict):
                    neutral_id = f"call_{len(calls)}"
                    calls.append((str(call.get("id") or ""), str(call.get("name")), neutral_id))
                    arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
                    tool_calls.append({"id": neutral_id, "type": "function", "function": {"name": call["name"], "arguments": arguments}})
            message: dict[str, Any] = {"role": "assistant", "content": _text(parts) or None, ORIGINAL: [content]}
            if tool_calls:
                message["tool_calls"] = tool_calls
            messages.append(message)
            continue
        answers = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
        carried: list[Any] = [content]
        for answer in answers:
            neutral_id = _match(calls, answer)
            messages.append({"role": "tool", "tool_call_id": neutral_id, "content": _result_text(answer.get("response")), ORIGINAL: carried})
            carried = []
        text = _text(parts)
        if text or not answers:
            messages.append({"role": "user", "content": text, ORIGINAL: carried})
    neutral: dict[str, Any] = {"model": model, "stream": method == "streamGenerateContent", "messages": messages}
    tools = [_chat_tool(d) for t in body.get("tools") or [] if isinstance(t, dict) for d in t.get("functionDeclarations") or [] if isinstance(d, dict)]
    if tools:
        neutral["tools"] = tools
    config = body.get("generationConfig") if isinstance(body.get("generationConfig"), dict) else {}
    for theirs, ours in _CONFIG:
        if theirs in config:
            neutral[ours] = config[theirs]
    if str(config.get("responseMimeType", "")).lower() == "application/json":  # a router's, a classifier's JSON answer
        neutral["response_format"] = {"type": "json_object"}
    untranslated = sorted({f"tools of kind {k}" for t in body.get("tools") or [] if isinstance(t, dict) for k in t if k != "functionDeclarations"})
    untranslated += [f"generationConfig.{k}" for k in config if k not in dict(_CONFIG)]
    untranslated += [f"'{k}'" for k in ("safetySettings", "toolConfig", "cachedContent") if k in body]
    kept = {k: v for k, v in body.items() if k != "contents"}
    neutral[ORIGINAL] = {"wire": NAME, "body": kept, "headers": {}, "untranslated": untranslated}
    return neutral


def _match(calls: list[tuple[str, str, str]], answer: dict[str, Any]) -> str:
    """The neutral id of the call a `functionResponse` answers (taken from `calls`)."""
    given, name = str(answer.get("id") or ""), str(answer.get("name"))
    for n, (theirs, call_name, neutral_id) in enumerate(calls):
        if (given and theirs == given) or (not given and call_name == name):
            del calls[n]
            return neutral_id
    return given or f"{name}_unmatched"


def _chat_tool(declaration: dict[str, Any]) -> dict[str, Any]:
    schema = declaration.get("parametersJsonSchema")
    if schema is None:
        schema = _json_schema(declaration.get("parameters")) if declaration.get("parameters") is not None else {"type": "object", "properties": {}}
    function = {"name": declaration.get("name"), "description": declaration.get("description") or "", "parameters": schema}
    return {"type": "function", "function": function}


def _json_schema(schema: Any) -> Any:
    """A Gemini `Schema` (OpenAPI's subset: upper-case type names) as JSON schema."""
    if isinstance(schema, list):
        return [_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _json_schema(v) for k, v in schema.items()}
    if isinstance(out.get("type"), str):
        out["type"] = out["type"].lower()
    return out


# -- the request upstream ----------------------------------------------------------


def from_neutral(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The Gemini request for a neutral body: a request that came in this wire with its
    contents as they came (and its fields), the messages it never had (rejected calls and
    their reasons) written as contents. Returns what the body's own wire had that this API
    has no counterpart for."""
    kept = body.get(ORIGINAL) if isinstance(body.get(ORIGINAL), dict) else None
    mine = original_of(body, NAME)
    out: dict[str, Any] = dict(mine["body"]) if mine is not None else {}
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        for call in m.get("tool_calls") or []:
            names[str(call.get("id"))] = str((call.get("function") or {}).get("name"))
        if mine is not None and isinstance(m.get(ORIGINAL), list):
            contents.extend(m[ORIGINAL])
            continue
        if m.get("role") in ("system", "developer") and mine is None:
            text = {"text": str(m.get("content") or "")}
            out.setdefault("systemInstruction", {"parts": []})["parts"].append(text)
            continue
        content = _content_of(m, names)
        if contents and contents[-1]["role"] == content["role"] and content["role"] == "user" and any("functionResponse" in p for p in content["parts"]):
            contents[-1] = {**contents[-1], "parts": [*contents[-1]["parts"], *content["parts"]]}
        else:
            contents.append(content)
    out["contents"] = contents
    if mine is None:
        declarations = [_declaration(t["function"]) for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)]
        if declarations:
            out["tools"] = [{"functionDeclarations": declarations}]
        config = {theirs: body[ours] for theirs, ours in _CONFIG if ours in body}
        if config:
            out["generationConfig"] = config
    notes = list(kept.get("untranslated") or []) if kept is not None and mine is None else []
    return out, notes


def _content_of(m: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A chat message as a Gemini content."""
    text = m.get("content")
    text = text if isinstance(text, str) else "".join(str(p.get("text", "")) for p in text or [] if isinstance(p, dict))
    if m.get("role") == "tool":
        call_id = str(m.get("tool_call_id") or "")
        key = "error" if text.startswith(("REJECTED", "ERROR", "NOT RUN")) else "output"
        return {"role": "user", "parts": [{"functionResponse": {"name": names.get(call_id, call_id), "response": {key: text}}}]}
    if m.get("role") == "assistant":
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        for call in m.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                args = json.loads(function.get("arguments") or "{}")
            except (ValueError, RecursionError):
                args = {}
            parts.append({"functionCall": {"name": function.get("name"), "args": args if isinstance(args, dict) else {}}})
        return {"role": "model", "parts": parts or [{"text": ""}]}
    return {"role": "user", "parts": [{"text": text}]}


def _declaration(function: dict[str, Any]) -> dict[str, Any]:
    out = {"name": function.get("name"), "description": function.get("description") or ""}
    out["parametersJsonSchema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return out


def endpoint(base: str, route: str | None = None, body: dict[str, Any] | None = None) -> str:
    """The URL of the neutral request's model and method under the server's base URL (with or
    without /v1beta): `:streamGenerateContent?alt=sse` when `body` streams."""
    root = base.rstrip("/")
    if not re.search(r"/v1(beta|alpha)?$", root):
        root += "/v1beta"
    if route is not None:
        return f"{root}/{route}"
    body = body or {}
    method = "streamGenerateContent?alt=sse" if body.get("stream") else "generateContent"
    return f"{root}/models/{body.get('model') or 'gemini'}:{method}"


def headers(key: str | None, body: dict[str, Any]) -> dict[str, str]:
    """The request's headers: the key as `x-goog-api-key`."""
    out = {"Content-Type": "application/json"}
    if key:
        out["x-goog-api-key"] = key
    return out


# -- replies --------------------------------------------------------------------


def _fold(reply: Reply, data: Any, on_delta: Callable[[str], None] | None, on_thinking: Callable[[str], None] | None = None, *,
          add_text: Callable[[str], None], thoughts: dict[int, list[str]]) -> bool:
    """One `GenerateContentResponse` (whole, or a streamed chunk) into `reply`, its text to
    `add_text` (which keeps the pieces) and the pieces of a thought merged into one before it to
    `thoughts` (by the part's place, `_join_thoughts`); a streamed one's text to `on_delta`, its thoughts' text to `on_thinking`. Whether it is shaped as Google's
    servers write it: one candidate, of index 0 (`StreamReading.plain`)."""
    data = reply_object(data)
    usage = data.get("usageMetadata")
    if isinstance(usage, dict) and isinstance(usage.get("promptTokenCount"), int):
        reply.input_tokens = usage["promptTokenCount"]
        written = usage.get("candidatesTokenCount") or 0
        reply.output_tokens = written if type(written) is int else 0
    candidates = data.get("candidates") or []
    if not isinstance(candidates, list):
        raise WireError("the reply's candidates are not a list")
    if not candidates:
        return True
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise WireError("the reply's first candidate is not an object")
    plain = len(candidates) == 1 and candidate.get("index", 0) == 0 and type(candidate.get("index", 0)) is int
    content = candidate.get("content") or {}
    if not isinstance(content, dict):
        raise WireError("the reply's first candidate's content is not an object")
    parts = content.get("parts") or []
    if not isinstance(parts, list):
        raise WireError("the reply's parts are not a list")
    message = reply.message if reply.message is not None else {"role": "model", "parts": []}
    reply.message = message
    for part in parts:
        if not isinstance(part, dict):
            raise WireError("a part of the reply is not an object")
        kept = message["parts"]
        thinks = _thought_text(part)
        thought = next((n for n in range(len(kept) - 1, -1, -1) if _thought_text(kept[n])), None) if thinks else None
        if thinks and on_thinking is not None and part["text"]:
            on_thinking(part["text"])
        if thought is not None and "thoughtSignature" not in kept[thought]:
            # a thought streamed in pieces is one thought, as a client joins its pieces: kept (and masked) whole
            kept[thought] = {**kept[thought], **part, "text": kept[thought]["text"]}
            thoughts.setdefault(thought, []).append(part["text"])
            continue
        kept.append(part)
        call = part.get("functionCall")
        if isinstance(call, dict):
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            reply.tool_calls.append(ToolCall(id=f"call_{len(reply.tool_calls)}", name=str(call.get("name") or ""), arguments=arguments))
        elif isinstance(part.get("text"), str) and not part.get("thought") and part["text"]:
            add_text(part["text"])
            if on_delta is not None:
                on_delta(part["text"])
    if candidate.get("finishReason"):
        message["finishReason"] = candidate["finishReason"]
        reply.finish_reason = "tool_calls" if reply.tool_calls else ("length" if candidate["finishReason"] == "MAX_TOKENS" else "stop")
    return plain


def _join_thoughts(message: dict[str, Any] | None, thoughts: dict[int, list[str]]) -> None:
    """Each thought's pieces (`_fold`'s `thoughts`) added to its text in `message`, once: a string
    added to piece by piece is copied whole each time."""
    if message is not None:
        for index, pieces in thoughts.items():
            message["parts"][index]["text"] += "".join(pieces)
    thoughts.clear()


def _thought_text(part: Any) -> bool:
    return isinstance(part, dict) and bool(part.get("thought")) and isinstance(part.get("text"), str)


def read_whole(data: Any) -> Reply:
    """Read a whole `GenerateContentResponse`."""
    reply = Reply(wire=NAME)
    texts: list[str] = []
    thoughts: dict[int, list[str]] = {}
    _fold(reply, data, None, add_text=texts.append, thoughts=thoughts)
    reply.content = "".join(texts)
    _join_thoughts(reply.message, thoughts)
    if reply.message is None:
        raise WireError("the reply has no candidates")
    reply.finish_reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    return reply


class StreamReader(StreamReading):
    """Folds the server-sent events of `streamGenerateContent?alt=sse` (a `GenerateContentResponse`
    each) into a `Reply`, passing text (and thoughts) on as they come. The stream has no last event of its own
    (it ends when the connection does), so `done` stays False: the reader reads to the end."""

    WIRE = NAME

    def __init__(self, on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> None:
        super().__init__(on_delta, on_thinking)
        self._thoughts: dict[int, list[str]] = {}

    def _settle(self) -> None:
        """The reply's text, and each thought's pieces added to it (`_join_thoughts`)."""
        super()._settle()
        if self._thoughts:
            _join_thoughts(self._reply.message, self._thoughts)

    def feed(self, line: str) -> None:
        payload = stream_payload(line)
        if payload is not None:
            self.plain = _fold(self._reply, stream_json(payload), self._on_delta, self._on_thinking,
                                add_text=self._add_text, thoughts=self._thoughts) and self.plain

    @property
    def complete(self) -> bool:
        """The stream reached a candidate's `finishReason`, not cut."""
        return self._reply.finish_reason is not None


def stream_reader(on_delta: Callable[[str], None], on_thinking: Callable[[str], None] | None = None) -> StreamReader:
    """A reader passing the text to `on_delta` and the thoughts' text (`thought` parts) to `on_thinking`."""
    return StreamReader(on_delta, on_thinking)


def error_detail(raw: bytes) -> str:
    """The error body's message (a streamed request's error comes as a list of one body)."""
    if raw.lstrip().startswith(b"["):
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            return chat_error_detail(json.dumps(data[0]).encode())
    return chat_error_detail(raw)


# -- what goes back to the agent ----------------------------------------------------


def stream_error(body: bytes) -> bytes:
    """An error body as an event of this API's stream."""
    return stream_event(body)


def error_response(status: int, message: str, kind: str = "", code: str | None = None) -> Response:
    """Google's error body (`kind` and `code`, chat completions' words, go in its details)."""
    error: dict[str, Any] = {"code": status, "message": message, "status": STATUS.get(status, "UNKNOWN")}
    if kind or code:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": code or kind, "domain": "agent-tui"}]
    return Response(status, json.dumps({"error": error}).encode())


def _thoughts_shown(shown: bytes) -> str:
    """The thoughts of a stream's first events, `shown`, joined as the agent's client joins them."""
    text = ""
    for event in stream_events(shown):
        for candidate in (event.get("candidates") or [])[:1]:
            content = candidate.get("content") if isinstance(candidate, dict) else None
            for part in content.get("parts") or [] if isinstance(content, dict) else []:
                if isinstance(part, dict) and part.get("thought") and isinstance(part.get("text"), str):
                    text += part["text"]
    return text


def built_reply(content: str | None, calls: list[dict[str, Any]], **options: Unpack[ReplyOptions]) -> Response:
    """A reply the gateway wrote: `calls` are chat completions tool calls (id, type, function).
    The thoughts of `original` (the upstream's reply it replaces, when it came in this wire) are
    kept as they came, but for those the agent has already (`continued`: the thoughts of `shown`,
    which went early), and a call's `thoughtSignature` on the call it stays with; a reply of
    another wire is written anew."""
    usage, original = options.get("usage"), reply_message_of(options.get("original"), NAME)
    parts: list[dict[str, Any]] = []
    signatures: dict[str, Any] = {}
    if original is not None:
        n = 0
        had = _thoughts_shown(options.get("shown") or b"") if options.get("continued") else ""
        for part in original.get("parts") or []:
            if part.get("thought"):
                text = part.get("text") if isinstance(part.get("text"), str) else ""
                if had and had.startswith(text):  # the agent has this thought whole (it went early)
                    had = had[len(text) :]
                    continue
                rest = rest_after(text, had) if had else None
                if rest is not None:  # the agent has its start
                    part = {**part, "text": rest}
                had = ""  # the rest of the thoughts are new to the agent (a reply asked again: all of them)
                parts.append(part)
            elif isinstance(part.get("functionCall"), dict):
                if "thoughtSignature" in part:
                    signatures[f"call_{n}"] = part["thoughtSignature"]
                n += 1
    if content:
        parts.append({"text": content})
    for n, call in enumerate(calls):
        function = call.get("function") or {}
        try:
            args = json.loads(function.get("arguments") or "{}")
        except (ValueError, RecursionError):
            args = {}
        part: dict[str, Any] = {"functionCall": {"name": function.get("name"), "args": args}}
        signature = signatures.get(str(call.get("id")))
        if signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
    candidate = {"content": {"role": "model", "parts": parts or [{"text": ""}]}, "finishReason": "STOP", "index": 0}
    whole: dict[str, Any] = {"candidates": [candidate], "modelVersion": options["model"]}
    if usage is not None:
        whole["usageMetadata"] = {
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": usage.input_tokens + usage.output_tokens,
        }
    if not options["stream"]:
        return Response(200, json.dumps(whole).encode())
    return Response(200, f"data: {json.dumps(whole)}\r\n\r\n".encode(), "text/event-stream")
