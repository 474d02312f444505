"""opencode sessions, as `opencode export SESSION_ID` writes them.

opencode keeps its sessions in a SQLite database in its data folder; `opencode
export` writes one session as a JSON document: `info` (the session: `id`,
`title`, `directory`, `version`, `model`) and `messages`, each `{"info",
"parts"}`. A message's `info.role` is `user` or `assistant`; its parts are:

- `text`: what was said (a user's first text is the task; an assistant's is the
  thought when a tool call follows in the same step, else what it answered);
- `reasoning`: the thought;
- `tool`: a call (`tool`, `callID`, `state.input`) and, once `state.status` is
  `completed` or `error`, its result (`state.output` or `state.error`);
- `step-start` / `step-finish`: a model turn's bounds, the finish holding its
  `tokens`; an assistant message may hold several turns;
- `file`, `agent`, `subtask`, `compaction`, `retry`: notes; `patch` and
  `snapshot` (opencode's own undo bookkeeping) are skipped and counted.
"""

from __future__ import annotations

from typing import Any

from engine.stored.importers.build import Draft, Step, arguments, found, new_action, preview, text_of
from engine.stored.transcript import TranscriptError

BOOKKEEPING = frozenset({"patch", "snapshot"})
NOTES = {"file": "a file attached", "agent": "an agent named", "subtask": "a subtask", "compaction": "the conversation was compacted", "retry": "the model call was retried"}


def is_opencode_export(data: Any) -> bool:
    info = data.get("info") if isinstance(data, dict) else None
    return (
        isinstance(info, dict)
        and isinstance(info.get("id"), str)
        and info["id"].startswith("ses_")
        and isinstance(data.get("messages"), list)
    )


def read_opencode(name: str, data: Any) -> list[Draft]:
    if not is_opencode_export(data):
        raise TranscriptError(f"{name}:1: not an opencode session ({{\"info\": {{\"id\": \"ses_...\"}}, \"messages\": [...]}}, as opencode export writes it); found {found(data)}")
    draft = Draft(name, "opencode", final_text_is_answer=True)
    info = data["info"]
    for key in ("title", "directory", "version"):
        if isinstance(info.get(key), str) and info[key]:
            draft.options[key] = info[key]
    model = info.get("model")
    if isinstance(model, dict) and isinstance(model.get("id"), str):
        draft.options["model"] = f"{model['providerID']}/{model['id']}" if isinstance(model.get("providerID"), str) else model["id"]
    for source, message in draft.objects(data["messages"], "message"):
        meta = message.get("info") if isinstance(message.get("info"), dict) else {}
        parts = message.get("parts") if isinstance(message.get("parts"), list) else None
        if parts is None:
            draft.unrecognised("a message without parts", message, source)
            continue
        role = meta.get("role")
        if role == "user":
            _user(draft, parts, source)
        elif role == "assistant":
            _assistant(draft, parts, source)
        else:
            draft.unrecognised(f"a message with role {preview(role, 30)!r}", message, source)
    if not draft.items and draft.task_text is None:
        raise TranscriptError(f"{name}:1: an opencode session with no message")
    return [draft]


def _user(draft: Draft, parts: list[Any], source: str) -> None:
    for where, part in draft.objects(parts, f"{source}, part"):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            if part.get("synthetic"):
                draft.note("system", part["text"], where)
            else:
                draft.user(part["text"], where)
        else:
            _other(draft, part, where)


def _assistant(draft: Draft, parts: list[Any], source: str) -> None:
    step: Step | None = None
    said: list[str] = []

    def settle() -> None:
        """The turn's text: its thought when it called a tool, else what it answered."""
        if step is not None:
            for text in said:
                (step.add_thought if step.actions else step.add_reply)(text)
        said.clear()

    for where, part in draft.objects(parts, f"{source}, part"):
        kind = part.get("type") if isinstance(part.get("type"), str) else None
        if kind == "step-start":
            settle()
            step = draft.new_step()
        elif kind == "step-finish":
            tokens = part.get("tokens")
            if step is not None and isinstance(tokens, dict):
                step.record_usage(tokens.get("input"), tokens.get("output"))
        elif kind in ("text", "reasoning", "tool"):
            if step is None:
                step = draft.new_step()
            if kind == "text":
                said.append(text_of(part.get("text")))
            elif kind == "reasoning":
                step.add_thought(text_of(part.get("text")))
            else:
                _tool(draft, step, part, where)
        else:
            _other(draft, part, where)
    settle()


def _tool(draft: Draft, step: Step, part: dict[str, Any], where: str) -> None:
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    if not isinstance(part.get("tool"), str):
        draft.unrecognised("a tool part without a tool name", part, where)
        return
    args, error = arguments(state.get("input"))
    call_id = part.get("callID") if isinstance(part.get("callID"), str) else None
    index = draft.call(step, new_action(tool=part["tool"], args=args, call_id=call_id, args_error=error))
    status = state.get("status")
    if status not in ("completed", "error"):
        return
    # the result is this part's own (opencode numbers each turn's calls from `call_0`)
    if status == "completed":
        draft.answer(step, index, text_of(state.get("output")), False)
    else:
        draft.answer(step, index, text_of(state.get("error")) or "the call failed", True)


def _other(draft: Draft, part: dict[str, Any], where: str) -> None:
    kind = part.get("type") if isinstance(part.get("type"), str) else None
    if kind in BOOKKEEPING:
        draft.skipped[f"{kind} part"] += 1
    elif kind in NOTES:
        detail = next((part[k] for k in ("filename", "name", "description", "prompt", "url") if isinstance(part.get(k), str)), "")
        draft.note("system", f"{NOTES[kind]}: {detail}" if detail else NOTES[kind], where)
    else:
        draft.unrecognised(f"a part with {found(part)}", part, where)
