"""Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, or `.json`).

Gemini CLI 0.61 writes a chat as JSON lines: the first holds the session
(`sessionId`, `projectHash`, `startTime`, `kind`); each later line is a
message record, or `{"$set": {...}}` that updates the chat (its `messages`, the
first one the CLI's `<session_context>`; `lastUpdated`). A record is written
again when it changes, under the same `id`, so the last version of an id is
the one kept, at the place of its first. Older versions write one JSON
document with the same records under `messages`.

A record's `type`:

- `user`: `content` (parts, or a string) of `text` (the first is the task,
  later ones user messages; the CLI's own `<session_context>` is the system
  prompt) or of `functionResponse` (results the record of the call already
  holds: kept only when the last call of that id has none; a text beside
  them is a user message);
- `gemini`: the model's turn: `content` its text (and `functionCall` parts:
  calls of the step, unless `toolCalls` lists the same id), `thoughts`
  (`subject`, `description`) the thought, `tokens` the step's usage,
  `toolCalls` the calls (`id`, `name`, `args`) with their `result`
  (`functionResponse` parts), that call's whatever other call shares its id,
  and `status` (`error` makes the result an error);
- `info`, `warning`, `error`: what the CLI told the user, as system notes.

Media parts (`inlineData`, `fileData`) are named where they stand, as
`(image, image/png)`; a part of any other kind is kept as an unrecognised note.
"""

from __future__ import annotations

from collections import Counter, deque
from itertools import chain
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from engine.stored.importers.build import Draft, Step, arguments, found, new_action, preview, text_of
from engine.stored.transcript import TranscriptError

CONTEXT_PREFIX = "<session_context>"
NOTICES = frozenset({"info", "warning", "error"})


def is_gemini_session(obj: Any) -> bool:
    """A chat's first line, or the whole chat of older versions."""
    return isinstance(obj, dict) and isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str)


MEDIA_KINDS = frozenset({"image", "audio", "video"})


def _media(part: dict[str, Any]) -> str | None:
    """A media part (`inlineData`, `fileData`) named as `text_of` names a media block, e.g.
    `(image, image/png)`; None for a part of another kind."""
    data = part.get("inlineData")
    if not isinstance(data, dict):
        data = part.get("fileData")
        if not isinstance(data, dict):
            return None
    mime = data.get("mimeType")
    kind = mime.partition("/")[0] if isinstance(mime, str) else ""
    return text_of({"type": kind if kind in MEDIA_KINDS else "file", "mime_type": mime})


_Parts = tuple[str, Sequence[dict[str, Any]], Sequence[dict[str, Any]], Sequence[Any]]
"""A record's `content` (or a call's `result`) sorted by kind: the text parts and the media named,
in order, one a line; the `functionResponse` parts; the `functionCall` parts; the parts of no kind
read here (kept as unrecognised notes)."""
_NO_PARTS: _Parts = ("", (), (), ())


def _parts(content: Any) -> _Parts:
    if type(content) is str:
        return content, (), (), ()
    if type(content) is list and len(content) == 1 and type(part := content[0]) is dict:  # the usual: one part
        if type(text := part.get("text")) is str:
            return text, (), (), ()
        if type(response := part.get("functionResponse")) is dict:
            return "", (response,), (), ()
    if content is None:
        return _NO_PARTS
    if isinstance(content, dict):
        content = [content]
    elif not isinstance(content, list):
        return text_of(content), (), (), ()
    said: list[str] = []
    responses: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    other: list[Any] = []
    for part in content:
        if type(part) is not dict:
            (said if isinstance(part, str) else other).append(part)
        elif isinstance(text := part.get("text"), str):
            said.append(text)
        elif isinstance(response := part.get("functionResponse"), dict):
            responses.append(response)
        elif isinstance(call := part.get("functionCall"), dict):
            calls.append(call)
        elif (named := _media(part)) is not None:
            said.append(named)
        else:
            other.append(part)
    return "\n".join(said), responses, calls, other


def _unmapped(draft: Draft, source: str, *groups: Sequence[Any]) -> None:
    for parts in groups:
        for part in parts:
            draft.unrecognised(f"a content part with {found(part)}", part, source)


def _response_text(response: dict[str, Any]) -> tuple[str, bool]:
    body = response.get("response")
    if type(body) is dict:
        if len(body) == 1 and type(output := body.get("output")) is str:  # the usual: {"output": text}
            return output, False
        if isinstance(body.get("error"), str):
            return body["error"], True
        return preview(body, 4000) if not isinstance(body.get("output"), str) else body["output"], False
    return text_of(body), False


WINDOW = 256
"""How many later records a record waits for a newer version of itself before it is mapped (Gemini
CLI writes a record again as its turn goes on, a few lines later). A version that comes later
still makes the chat read again, every record held to the end; either way the last version of an
id is the one mapped, at the place of its first."""


class _Again(Exception):
    """A record came again after it was mapped."""


def _records(rows: Iterable[tuple[int, Any]], skipped: Counter[str], window: int | None,
             latest: dict[str | int, Any]) -> Iterator[tuple[str, Any]]:
    """(where, record) in order, the last version of each id at the place of its first, each given
    out once `window` records followed it (None: at the end), so that the records read are not all
    held at once; `_Again` when a record comes again after it was given. The chat's updates of more
    than its messages counted in `skipped`. `latest` (empty): each id met, with its last version
    while it waits, None once given (a record without an id is numbered)."""
    order: deque[str | int] = deque()  # the ids waiting, oldest first
    anonymous = 0
    for number, obj in rows:
        items: Iterable[Any]
        if type(obj) is dict and "$set" not in obj and "sessionId" not in obj:  # a record (the usual line)
            items = (obj,)
        elif isinstance(update := obj.get("$set") if isinstance(obj, dict) else None, dict):
            items = update.get("messages") if isinstance(update.get("messages"), list) else []
            if set(update) - {"messages"}:
                skipped["chat update ($set)"] += 1
        elif isinstance(obj, dict) and "sessionId" in obj and is_gemini_session(obj):
            items = obj.get("messages") if isinstance(obj.get("messages"), list) else []
        else:
            items = (obj,)
        for item in items:
            key: str | int | None = item.get("id") if isinstance(item, dict) else None
            if not isinstance(key, str):
                anonymous += 1
                key = anonymous
            if key not in latest:
                order.append(key)
            elif latest[key] is None:
                raise _Again
            latest[key] = (f"line {number}", item)
        if window is None:
            continue
        while len(order) > window:
            key = order.popleft()
            yield latest[key]  # type: ignore[misc]
            latest[key] = None
    while order:
        key = order.popleft()
        yield latest[key]  # type: ignore[misc]
        latest[key] = None


def read_gemini_cli(name: str, rows: Callable[[], Iterable[tuple[int, Any]]]) -> list[Draft]:
    """The chat of `rows()` (each line's number and JSON, read as they come; the first the
    session's), read again if a record comes again long after its first version (see `WINDOW`)."""
    return [_again(name, rows, False)[0]]


class Edge(NamedTuple):
    """What a part of a chat cut in two (`read_part`) shares with the other part, for `joins` to
    tell whether the two read as the whole would: the ids of its records, those of its calls
    (`last_calls`), those of its calls still open (`open_calls`), and the call ids its results
    looked for (`reached`, a later part's, where a call of the part before may answer; None: a
    result naming no call)."""

    ids: set[str]
    last_calls: set[str]
    open_calls: set[str]
    reached: set[str | None]


def read_part(name: str, rows: Callable[[], Iterable[tuple[int, Any]]], *, later: bool = False) -> tuple[Draft, Edge]:
    """The chat of `rows()`, or (`later`) the lines of its second part, read as if a first part
    came before them that said the task and held the session's line; with what the part shares
    with the other (`Edge`). Read again if a record comes again long after its first version."""
    draft, latest, last_call = _again(name, rows, later)
    open_calls = {call_id for call_id, waiting in draft.calls.items() if waiting}
    return draft, Edge({key for key in latest if type(key) is str}, set(last_call), open_calls, draft.reached or set())


_Read = tuple[Draft, dict[str | int, Any], dict[str, tuple[Step, int]]]
"""A chat read: its draft, each id met (`_records`), the last call made under each call id."""


def _again(name: str, rows: Callable[[], Iterable[tuple[int, Any]]], later: bool) -> _Read:
    """`_read` of `rows()`, read again with every record held if one comes again after it was mapped."""
    try:
        return _read(name, rows(), WINDOW, later)
    except _Again:
        return _read(name, rows(), None, later)


def joins(first: Draft, edge: Edge, then: Edge) -> bool:
    """Whether the later part of a chat (`then`, read by `read_part(later=True)`) reads as it would
    after the first one (`first`, `edge`): the first part said the task or took a step, no record
    stands in both, and no result of the later part looked for a call the first part made."""
    if first.task_text is None and not first.made_steps:
        return False
    if not edge.ids.isdisjoint(then.ids):
        return False
    return not any(call_id is None or call_id in edge.last_calls or call_id in edge.open_calls for call_id in then.reached)


def _read(name: str, rows: Iterable[tuple[int, Any]], window: int | None, later: bool) -> _Read:
    draft = Draft(name, "gemini-cli")
    last_call: dict[str, tuple[Step, int]] = {}  # the last call made under each id
    latest: dict[str | int, Any] = {}
    if later:
        draft.task_text = ""  # (said in the first part: each text here is a user message, as there)
        draft.reached = set()
    rows = iter(rows)
    first = next(rows, None)
    if first is not None:
        if not later and is_gemini_session(first[1]):
            draft.options["session_id"] = first[1]["sessionId"]
        rows = chain((first,), rows)
    for source, record in _records(rows, draft.skipped, window, latest):
        if not isinstance(record, dict):
            draft.unrecognised(f"{found(record)} where a chat record was expected", record, source)
            continue
        kind = record.get("type")
        if not isinstance(kind, str):
            kind = None
        if kind == "user":
            text, responses, called, other = _parts(record.get("content"))
            for response in responses:
                _user_result(draft, response, last_call, source)
            if text or not (responses or called or other):  # (an empty record: an empty turn)
                if text.lstrip().startswith(CONTEXT_PREFIX):
                    if not draft.made_steps and draft.task_text is None:
                        draft.system.append(text)
                    else:
                        draft.note("system", text, source)
                else:
                    draft.user(text, source)
            if called or other:
                _unmapped(draft, source, called, other)
        elif kind == "gemini":
            _turn(draft, record, last_call, source)
        elif kind in NOTICES:
            text, responses, called, other = _parts(record.get("content"))
            draft.note("system", f"Gemini CLI {kind}: {text}", source)
            _unmapped(draft, source, responses, called, other)
        else:
            draft.unrecognised(f"a record with {found(record)}", record, source)
    if draft.task_text is None and not draft.items:
        raise TranscriptError(f"{name}:1: a Gemini CLI chat with no message")
    return draft, latest, last_call


def _user_result(draft: Draft, response: dict[str, Any], last_call: dict[str, tuple[Step, int]], source: str) -> None:
    """A result in a user record: skipped when the last call of its id already holds one (the CLI
    writes a call's result again there), else the result of the oldest open call of its id."""
    call_id = response.get("id") if isinstance(response.get("id"), str) else None
    made = last_call.get(call_id) if call_id else None
    if made is None and draft.reached is not None:
        draft.reached.add(call_id)  # maybe a call of the part before
    if made is not None and made[0].answered(made[1]):
        draft.skipped["result repeated from its call"] += 1
        return
    text, error = _response_text(response)
    draft.result(call_id, text, error, source, response.get("name") if isinstance(response.get("name"), str) else None)


def _turn(draft: Draft, record: dict[str, Any], last_call: dict[str, tuple[Step, int]], source: str) -> None:
    get = record.get
    thoughts = get("thoughts")
    thought = "\n".join(
        ": ".join(str(t[k]) for k in ("subject", "description") if isinstance(t.get(k), str) and t[k])
        for t in thoughts
        if isinstance(t, dict)
    ) if isinstance(thoughts, list) and thoughts else ""
    step = draft.new_step(thought)
    content = get("content")
    said, responses, called, other = (content, (), (), ()) if type(content) is str else _parts(content)
    calls = get("toolCalls")
    if type(calls) is not list:
        calls = []
    if said:
        (step.add_thought if calls or called else step.add_reply)(said)
    tokens = get("tokens")
    if type(tokens) is dict:
        step.record_usage(tokens.get("input"), tokens.get("output"))
    model = get("model")
    if isinstance(model, str):
        draft.options.setdefault("model", model)
    if called:
        listed = {call.get("id") for call in calls if type(call) is dict}
        for call in called:
            if isinstance(call.get("id"), str) and call["id"] in listed:
                draft.skipped["call repeated from toolCalls"] += 1
            else:
                _call(draft, step, call, last_call, {"functionCall": call}, source)
    for call in calls:
        if type(call) is not dict:
            draft.unrecognised("a tool call without a name", call, source)
            continue
        if (made := _call(draft, step, call, last_call, call, source)) is None:
            continue
        index, call_id = made
        result_said, results, result_calls, result_other = _parts(call.get("result"))
        status = call.get("status")
        if len(results) == 1 and not result_said:  # the usual
            text, failed = _response_text(results[0])
            draft.answer(step, index, text, failed or status == "error")
        elif results or result_said:
            texts = [_response_text(response) for response in results]
            draft.answer(step, index, "\n".join([text for text, _ in texts] + ([result_said] if result_said else [])),
                         status == "error" or any(failed for _, failed in texts))
        elif status in ("error", "cancelled") and call_id is not None:
            shown = call.get("resultDisplay")
            draft.answer(step, index, (shown if isinstance(shown, str) else "") or f"the call ended {status}", True)
        if result_calls or result_other:
            _unmapped(draft, source, result_calls, result_other)
    if responses or other:
        _unmapped(draft, source, responses, other)


def _call(draft: Draft, step: Step, call: dict[str, Any], last_call: dict[str, tuple[Step, int]], raw: Any, source: str) -> tuple[int, str | None] | None:
    """A call (`id`, `name`, `args`) added to `step`: its index and id; None, and `raw` kept as an
    unrecognised note, when it has no name."""
    name = call.get("name")
    if not isinstance(name, str):
        draft.unrecognised("a tool call without a name", raw, source)
        return None
    args = call.get("args")
    args, error = (args, None) if type(args) is dict else arguments(args)
    call_id = call.get("id")
    if type(call_id) is not str:
        call_id = None
    index = draft.call(step, new_action(tool=name, args=args, call_id=call_id, args_error=error))
    if call_id:
        last_call[call_id] = (step, index)
    return index, call_id
