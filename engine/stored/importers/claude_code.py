"""Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`).

One JSON object a line; `type` says what it is:

- `user`: `message.content` is the user's text (the first is the task, later
  ones are user messages), or a list of blocks where `tool_result` blocks are
  the results of earlier calls, found by `tool_use_id`;
- `assistant`: `message.content` blocks `thinking` and `text` (the thought, or
  the answer when nothing follows), `tool_use` / `server_tool_use` (the calls,
  with their `id`) and a server tool's `*_tool_result` (its result);
  `message.usage` is the step's token count (the cached input included).
  Claude Code writes one line per block, so lines of one `message.id` are one step;
- `summary`: the session's title; `system` lines are notes, and so are
  `attachment` lines (what Claude Code 2.1 attaches to the conversation: the
  listing of its agents and skills, a file, a reminder), the
  assistant lines Claude Code writes itself (`isApiErrorMessage`, model
  `<synthetic>`: an API error is not the answer) and a compaction's summary
  (a user line with `isCompactSummary`);
- lines with `isSidechain: true` are a sub-agent's work (the `Task` tool):
  shown nested under the step that started it, unless the whole file is one
  sub-agent's session. Claude Code 1.0 writes each sub-agent inline as its own
  chain of `parentUuid` links, whose root (`parentUuid` null) is the user line
  holding the Task call's `prompt`: the chain belongs to that call. Claude Code
  2.1 writes that work into the main file as `progress` lines whose `data.type`
  is `agent_progress` (`data.message` is the sub-agent's line,
  `parentToolUseID` the Task call): nested the same way. When a step holds
  several Task calls, each nested line names its call (`Task 2 (its
  description): ...`).

Bookkeeping lines (queue operations, file snapshots, the last prompt, hook and
shell progress, `system` lines with a `subtype` but no text such as
`stop_hook_summary` and `turn_duration`) carry no message: they are skipped
and counted in the warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from engine.core.events import Note
from engine.stored.importers.build import Draft, Step, found, new_action, preview, text_of
from engine.stored.transcript import TranscriptError

MESSAGE_TYPES = frozenset({"user", "assistant", "summary", "system"})
BOOKKEEPING = frozenset({"queue-operation", "file-history-snapshot", "last-prompt", "progress", "custom-title", "tag"})


def is_claude_code(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        return False
    kind = obj["type"]
    if kind in ("user", "assistant") and isinstance(obj.get("message"), dict):
        return True
    if kind == "summary" and "leafUuid" in obj:
        return True
    return kind in BOOKKEEPING and ("sessionId" in obj or "leafUuid" in obj or "messageId" in obj)


def _result_text(block: dict[str, Any]) -> str:
    return text_of(block.get("content"))


def _usage(step: Step, usage: Any) -> None:
    """An assistant line's `usage`: the prompt is its input tokens with the cached ones; Claude Code
    repeats a message's usage on each of its lines, and the last line's is the final count."""
    if not isinstance(usage, dict):
        return
    get = usage.get
    fresh, created, read = get("input_tokens", 0), get("cache_creation_input_tokens", 0), get("cache_read_input_tokens", 0)
    if (type(fresh) is int and type(created) is int and type(read) is int) or all(  # as JSON gives them, checked inline
            isinstance(v, int) and not isinstance(v, bool) for v in (fresh, created, read)):
        step.record_usage(fresh + created + read, get("output_tokens"))


def _attachment_text(attachment: dict[str, Any]) -> str:
    """What Claude Code attached to the conversation (a listing of its agents or skills, a file, a
    reminder), as a note: its kind, then each field, a text as it is and a list of texts a line each."""
    lines = [f"attachment ({preview(attachment.get('type'), 40)})" if attachment.get("type") else "attachment"]
    for key, value in attachment.items():
        if key == "type" or value in (None, "", [], {}):
            continue
        if isinstance(value, str):
            lines.append(value)
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            lines.append(f"{key}:\n" + "\n".join(value))
        else:
            lines.append(f"{key}: {preview(value, 400)}")
    return "\n".join(lines)


def _nested(kind: str, text: str) -> str:
    return f"{kind}: {text}"


@dataclass
class _TaskCall:
    """A Task call that starts a sub-agent: its step, its number among the step's calls (from 1) and what it asked."""

    step: Step
    number: int
    prompt: str
    description: str
    started: bool = False

    def label(self, tasks_in_step: int) -> str:
        """What each nested line of its sub-agent starts with: its call, when the step holds several Task calls."""
        if tasks_in_step < 2:
            return ""
        return f"Task {self.number} ({preview(self.description, 60)}): " if self.description else f"Task {self.number}: "


class _Reader:
    def __init__(self, name: str, nest_sidechains: bool) -> None:
        self.draft = Draft(name, "claude-code")
        self.nest = nest_sidechains
        self.step: Step | None = None
        self.message_id: str | None = None
        self.tasks: list[Step] = []
        self.task_ids: dict[str, _TaskCall] = {}
        self.task_calls: list[_TaskCall] = []
        self.chains: dict[str, _TaskCall | None] = {}
        self.tasks_in_step: dict[int, int] = {}

    def line(self, number: int, obj: Any) -> None:
        source = f"line {number}"
        draft = self.draft
        if not isinstance(obj, dict):
            draft.unrecognised(f"{found(obj)} where a session line was expected", obj, source)
            return
        kind = obj.get("type") if isinstance(obj.get("type"), str) else None
        if kind == "progress" and self.agent_progress(obj, source):
            return
        if kind in BOOKKEEPING:
            draft.skipped[str(kind)] += 1
            return
        if kind == "system" and "content" not in obj and isinstance(obj.get("subtype"), str):
            draft.skipped[f"system {preview(obj['subtype'], 30)}"] += 1
            return
        if kind == "summary":
            if isinstance(obj.get("summary"), str):
                draft.options.setdefault("title", obj["summary"])
                return
        message = obj.get("message")
        if self.nest and obj.get("isSidechain") is True and kind in ("user", "assistant") and isinstance(message, dict):
            self.sidechain(kind, message, source, self.chain_owner(obj, message))
            return
        if kind == "user" and isinstance(message, dict):
            self.user(message, source, obj)
        elif kind == "assistant" and isinstance(message, dict) and (obj.get("isApiErrorMessage") or message.get("model") == "<synthetic>"):
            draft.note("system", f"Claude Code: {text_of(message.get('content'))}", source)
            self.step = None
        elif kind == "assistant" and isinstance(message, dict):
            self.assistant(message, source)
        elif kind == "system" and isinstance(obj.get("content"), str):
            draft.note("system", obj["content"], source)
        elif kind == "attachment" and isinstance(obj.get("attachment"), dict):
            draft.note("system", _attachment_text(obj["attachment"]), source)
        else:
            draft.unrecognised(f"a line with {found(obj)}", obj, source)

    def user(self, message: dict[str, Any], source: str, obj: dict[str, Any]) -> None:
        draft = self.draft
        content = message.get("content")
        self.message_id = None
        if obj.get("isCompactSummary"):
            draft.note("system", f"the conversation before this point was compacted: {text_of(content)}", source)
            return
        if isinstance(content, str):
            if obj.get("isMeta"):
                draft.note("system", content, source)
            else:
                draft.user(content, source)
            return
        if not isinstance(content, list):
            draft.unrecognised("a user message without content", message, source)
            return
        texts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                error = block.get("is_error") if isinstance(block.get("is_error"), bool) else None
                draft.result(block.get("tool_use_id"), _result_text(block), error, source)
            elif isinstance(block, dict) and block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            else:
                texts.append(text_of([block]))
        if texts:
            draft.user("\n".join(texts), source)

    def assistant(self, message: dict[str, Any], source: str) -> None:
        draft = self.draft
        mid = message.get("id") if isinstance(message.get("id"), str) else None
        step = self.step
        if step is None or mid is None or mid != self.message_id or step.observations or draft.items[-1] is not step:
            step = draft.new_step()
        self.step, self.message_id = step, mid
        _usage(step, message.get("usage"))
        content = message.get("content")
        if isinstance(content, str):
            step.add_reply(content)
            return
        if not isinstance(content, list):
            draft.unrecognised("an assistant message without content", message, source)
            return
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "thinking":
                step.add_thought(str(block.get("thinking", "")))
            elif kind == "text":
                step.add_reply(str(block.get("text", "")))
            elif kind in ("tool_use", "server_tool_use") and isinstance(block.get("name"), str):
                args = block.get("input") if isinstance(block.get("input"), dict) else {"input": block.get("input")}
                call_id = block.get("id") if isinstance(block.get("id"), str) else None
                draft.call(step, new_action(tool=block["name"], args=args, call_id=call_id))
                if block["name"] in ("Task", "Agent"):
                    self.task(step, args, call_id)
            elif kind == "redacted_thinking":
                step.add_thought("(redacted thinking)")
            elif isinstance(kind, str) and kind.endswith("_tool_result") and "tool_use_id" in block:
                error = isinstance(block.get("content"), dict) and str(block["content"].get("type", "")).endswith("error")
                draft.result(block.get("tool_use_id"), text_of(block.get("content")), error or None, source)
            else:
                draft.unrecognised(f"an assistant block with {found(block)}", block, source)

    def task(self, step: Step, args: dict[str, Any], call_id: str | None) -> None:
        prompt, description = args.get("prompt"), args.get("description")
        call = _TaskCall(step, len(step.actions), prompt if isinstance(prompt, str) else "",
                         description if isinstance(description, str) else "")
        self.tasks.append(step)
        self.task_calls.append(call)
        self.tasks_in_step[id(step)] = self.tasks_in_step.get(id(step), 0) + 1
        if call_id:
            self.task_ids[call_id] = call

    def chain_owner(self, obj: dict[str, Any], message: dict[str, Any]) -> _TaskCall | None:
        """The Task call whose sub-agent wrote this inline line: its chain's (found by `parentUuid`), or
        for a chain's root the first call not yet started that asked its prompt (else the first not yet started)."""
        parent = obj.get("parentUuid")
        if isinstance(parent, str) and parent in self.chains:
            owner = self.chains[parent]
        elif parent is None:
            prompt = text_of(message.get("content")).strip()
            waiting = [call for call in self.task_calls if not call.started]
            owner = next((call for call in waiting if call.prompt.strip() == prompt), waiting[0] if waiting else None)
            if owner is not None:
                owner.started = True
        else:
            owner = None
        if isinstance(obj.get("uuid"), str):
            self.chains[obj["uuid"]] = owner
        return owner

    def agent_progress(self, obj: dict[str, Any], source: str) -> bool:
        """A sub-agent's line carried by a `progress` line (`data.type` agent_progress); False when it is none."""
        data = obj.get("data")
        inner = data.get("message") if isinstance(data, dict) and data.get("type") == "agent_progress" else None
        if not isinstance(inner, dict) or inner.get("type") not in ("user", "assistant") or not isinstance(inner.get("message"), dict):
            return False
        parent_id = obj.get("parentToolUseID")
        self.sidechain(inner["type"], inner["message"], source, self.task_ids.get(parent_id) if isinstance(parent_id, str) else None)
        return True

    def sidechain(self, kind: str, message: dict[str, Any], source: str, owner: _TaskCall | None) -> None:
        """A sub-agent's message, nested under the step whose Task call started it (`owner`, when known; else
        the last Task step)."""
        label = ""
        if owner is not None:
            parent: Step | None = owner.step
            label = owner.label(self.tasks_in_step[id(owner.step)])
        else:
            parent = self.tasks[-1] if self.tasks else self.draft.last_step()
        content = message.get("content")
        lines: list[str] = []
        if isinstance(content, str):
            lines.append(_nested("user" if kind == "user" else "says", content))
        elif isinstance(content, list):
            for block in content:
                btype = block.get("type") if isinstance(block, dict) else None
                if btype == "tool_use":
                    lines.append(_nested("action", f"{block.get('name')}({preview(block.get('input'), 300)})"))
                elif btype == "tool_result":
                    lines.append(_nested("observe", _result_text(block)))
                elif btype == "thinking":
                    lines.append(_nested("thought", str(block.get("thinking", ""))))
                elif btype == "text":
                    lines.append(_nested("user" if kind == "user" else "says", str(block.get("text", ""))))
                else:
                    lines.append(_nested("block", preview(block, 300)))
        text = "\n".join(label + line for line in lines) or label + preview(message, 300)
        if parent is None:
            self.draft.note("subagent", text, source)
        else:
            parent.notes.append(Note(step=0, kind="subagent", text=text, source=source))


def _is_message(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("type") in ("user", "assistant")


def read_claude_code(name: str, rows: Iterable[tuple[int, Any]]) -> list[Draft]:
    """The session's lines mapped as they come (none is kept once read), once its first message
    says whose session it is: a sub-agent's own file (every message a sidechain) is read ahead
    to its end, as one with a main-session message further on nests its sidechains."""
    rows = iter(rows)
    ahead: list[tuple[int, Any]] = []
    only_sidechain = False
    for row in rows:
        ahead.append(row)
        if _is_message(row[1]):
            if row[1].get("isSidechain") is True:
                ahead.extend(rows)
                only_sidechain = all(obj.get("isSidechain") is True for _, obj in ahead if _is_message(obj))
            break
    first = ahead[0] if ahead else (1, None)
    reader = _Reader(name, nest_sidechains=not only_sidechain)
    for number, obj in ahead:
        reader.line(number, obj)
    del ahead
    for number, obj in rows:
        reader.line(number, obj)
    if not reader.draft.steps() and not reader.draft.task_text and not reader.draft.items:
        raise TranscriptError(f"{name}:{first[0]}: a Claude Code session with no message (found {found(first[1])})")
    return [reader.draft]
