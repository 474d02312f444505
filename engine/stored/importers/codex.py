"""OpenAI Codex CLI rollouts (`~/.codex/sessions/.../rollout-*.jsonl`).

One `{"timestamp", "type", "payload"}` object a line:

- `session_meta`: the session; its `instructions` (or `base_instructions`)
  are the system prompt;
- `response_item`: what the model saw and said. `payload.type` is `message`
  (role user, developer or assistant), `reasoning` (its summary is the
  thought), `function_call` / `custom_tool_call` / `local_shell_call` (calls,
  with a `call_id`; calls with no message between them are one step, run in
  parallel) and `function_call_output` / `custom_tool_call_output` (results,
  found by `call_id`);
- `event_msg`: a `token_count`'s `last_token_usage` is the last step's usage,
  a `turn_aborted` a system note; the rest repeat the response items for the
  terminal and, with `turn_context`, `world_state` (the environment Codex
  0.171 tells the model of), `token_usage_record` (the token counts again)
  and the `ghost_snapshot` items (the undo feature's git snapshots), are
  bookkeeping, skipped and counted;
- `compacted` (the summary of the conversation before it) and `compaction`
  items (the same, encrypted): system notes.

User messages that Codex writes itself (`<environment_context>`, the
AGENTS.md instructions) are system notes; the first other user message is
the task.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from engine.stored.importers.build import Draft, Step, arguments, found, new_action, preview, text_of
from engine.core.jsontext import loads
from engine.stored.transcript import TranscriptError

LINE_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted", "world_state", "token_usage_record"})
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
                     "<permissions instructions>", "<user_shell_command>")
CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"}
OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output"}


def is_codex(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("type"), str) and obj["type"] in LINE_TYPES and isinstance(obj.get("payload"), dict)


_EXIT_CODE = re.compile(r"(?:Exit code:|Process exited with code) (-?\d+)\b")


def _output_text(payload: dict[str, Any]) -> tuple[str, bool | None]:
    """A call's output and whether it failed: `success`, or the exit code of a shell command,
    which Codex writes as `{"output", "metadata": {"exit_code"}}` JSON text or as an
    `Exit code: N` / `Process exited with code N` line."""
    output = payload.get("output")
    if isinstance(output, dict):  # {"content": ..., "success": bool}
        success = output.get("success")
        return text_of(output.get("content")), (not success) if isinstance(success, bool) else None
    text = text_of(output)
    if text.startswith("{") and '"metadata"' in text:
        try:
            shell = loads(text)
        except (ValueError, RecursionError):
            shell = None
        metadata = shell.get("metadata") if isinstance(shell, dict) else None
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        if isinstance(shell.get("output") if isinstance(shell, dict) else None, str) and isinstance(code, int):
            return shell["output"], code != 0
    m = _EXIT_CODE.search(text[:300])
    return text, (m.group(1) != "0") if m else None


class _Reader:
    def __init__(self, name: str) -> None:
        self.draft = Draft(name, "codex")
        self.step: Step | None = None

    def current(self, for_call: bool) -> Step:
        """The step a call or a thought goes into: a new one once results came back."""
        step = self.step
        if step is None or step.observations or self.draft.items[-1] is not step or (not for_call and step.actions):
            step = self.draft.new_step()
            self.step = step
        return step

    def line(self, number: int, obj: Any) -> None:
        draft, source = self.draft, f"line {number}"
        if not is_codex(obj):
            draft.unrecognised(f"a line with {found(obj)}", obj, source)
            return
        kind, payload = obj["type"], obj["payload"]
        if kind == "session_meta":
            instructions = payload.get("instructions")
            base = payload.get("base_instructions")
            text = instructions if isinstance(instructions, str) else text_of(base) if base else ""
            if text:
                draft.system.append(text)
            for key in ("id", "cwd", "cli_version"):
                if isinstance(payload.get(key), str):
                    draft.options.setdefault(f"session_{key}", payload[key])
            return
        if kind == "turn_context":
            if isinstance(payload.get("model"), str):
                draft.options.setdefault("model", payload["model"])
            draft.skipped[kind] += 1
            return
        if kind == "compacted":
            message = payload.get("message")
            if isinstance(message, str) and message.strip():
                draft.note("system", f"the conversation before this point was compacted: {message}", source)
            else:
                draft.skipped[kind] += 1
            return
        if kind == "event_msg" and self.event(payload, source):
            return
        if kind != "response_item":
            draft.skipped[kind if kind != "event_msg" else f"event_msg {preview(payload.get('type', '?'), 30)}"] += 1
            return
        self.item(payload, source)

    def event(self, payload: dict[str, Any], source: str) -> bool:
        """An `event_msg` that says what the response items do not: a turn's token count (the
        step's usage) or an aborted turn (a system note); False for the rest (they repeat items)."""
        etype = payload.get("type")
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        step = self.draft.last_step()
        if etype == "token_count" and isinstance(last, dict) and step is not None:
            step.record_usage(last.get("input_tokens"), last.get("output_tokens"))
            return True
        if etype == "turn_aborted":
            reason = payload.get("reason")
            self.draft.note("system", f"the turn was aborted ({reason})" if isinstance(reason, str) else "the turn was aborted", source)
            self.step = None
            return True
        return False

    def item(self, payload: dict[str, Any], source: str) -> None:
        draft = self.draft
        ptype = payload.get("type") if isinstance(payload.get("type"), str) else None
        if ptype == "message":
            role = payload.get("role")
            text = text_of(payload.get("content"))
            if role in ("developer", "system"):
                if not draft.made_steps and draft.task_text is None:
                    draft.system.append(text)
                else:
                    draft.note("system", text, source)
            elif role == "user":
                self.step = None
                if text.lstrip().startswith(_CONTEXT_PREFIXES):
                    draft.note("system", text, source)
                else:
                    draft.user(text, source)
            elif role == "assistant":
                self.current(for_call=False).add_reply(text)
            else:
                draft.unrecognised(f"a message with role {role!r}", text, source)
        elif ptype == "reasoning":
            summary = text_of(payload.get("summary"))
            content = text_of(payload.get("content")) if payload.get("content") else ""
            text = "\n".join(t for t in (summary, content) if t)
            step = self.current(for_call=False)
            step.add_thought(text or ("(encrypted reasoning)" if payload.get("encrypted_content") else ""))
        elif ptype in CALLS:
            self.call(payload, source)
        elif ptype in ("compaction", "compaction_summary"):
            draft.note("system", "the conversation before this point was compacted (its summary is encrypted)", source)
        elif ptype == "ghost_snapshot":
            draft.skipped[f"response_item {ptype}"] += 1
        elif ptype in OUTPUTS:
            text, error = _output_text(payload)
            draft.result(payload.get("call_id"), text, error, source)
        else:
            draft.unrecognised(f"a response item with {found(payload)}", payload, source)

    def call(self, payload: dict[str, Any], source: str) -> None:
        ptype = payload["type"]
        name = payload.get("name")
        if ptype == "local_shell_call":
            name, args, error = "shell", payload.get("action") if isinstance(payload.get("action"), dict) else {}, None
        elif ptype == "web_search_call":
            name, args, error = "web_search", payload.get("action") if isinstance(payload.get("action"), dict) else {}, None
        elif ptype == "custom_tool_call":
            args, error = {"input": payload.get("input")}, None
        else:
            args, error = arguments(payload.get("arguments"))
        if not isinstance(name, str):
            self.draft.unrecognised("a tool call without a name", payload, source)
            return
        call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else None
        self.draft.call(self.current(for_call=True), new_action(tool=name, args=args, call_id=call_id, args_error=error))


def read_codex(name: str, rows: Iterable[tuple[int, Any]]) -> list[Draft]:
    """The rollout's lines mapped as they come (none is kept once read)."""
    reader = _Reader(name)
    first: tuple[int, Any] | None = None
    for number, obj in rows:
        if first is None:
            first = (number, obj)
        reader.line(number, obj)
    first = first or (1, None)
    if not reader.draft.items and reader.draft.task_text is None:
        raise TranscriptError(f"{name}:{first[0]}: a Codex rollout with no message (found {found(first[1])})")
    return [reader.draft]
