"""Plain-text rendering of events, for headless runs, `show` and exports.

No Textual and no Rich here: the headless paths must start fast and run
anywhere. Untrusted text is cleaned of control characters before printing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.core.amounts import amount
from engine.core.events import Event, Header, Note, RunEnded
from engine.core.text import clean, visible
from tui.words import CHOICE_WORDS, OUTCOME_WORDS, call_text



def one_line(text: str, limit: int | None = None) -> str:
    flat = clean(text).replace("\n", " ⏎ ")
    if limit is not None and len(flat) > limit:
        return flat[: limit - 1] + "…"
    return flat


def render_args(tool: str | None, args: dict[str, Any]) -> str:
    """A call on one line, every character there: controls, line feeds and tabs as escapes
    (an argument's name cannot draw a line of its own, such as a forged approval prompt)."""
    return visible(call_text(tool, args), one_line=True)


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.:/-]+")


def approval_question(tool: str, args: dict[str, Any], reason: str, thought: str = "") -> list[str]:
    """The headless approval question: the tool's name first (quoted unless it is a plain
    name), then the reason, the thought and each argument on a line of its own, each escaped
    to one line (`visible`), so that nothing the agent wrote can look like the question."""
    name = tool if _PLAIN_NAME.fullmatch(tool) else json.dumps(tool, ensure_ascii=False)
    lines = [f"  ?        tool {visible(name, one_line=True)} needs approval ({visible(reason, one_line=True)})"]
    if thought:
        lines.append(f"{_GUTTER}thought: {visible(thought, one_line=True)}")
    for key, value in args.items():
        shown = json.dumps(value, ensure_ascii=False, default=str)
        lines.append(f"{_GUTTER}argument {visible(str(key), one_line=True)} = {visible(shown, one_line=True)}")
    if not args:
        lines.append(f"{_GUTTER}(no arguments)")
    return lines


_GUTTER = " " * 11


def _indent(label: str, text: str) -> list[str]:
    text = clean(text)
    first = f"  {label:<9}"
    if "\n" not in text:
        return [first + text]
    lines = text.split("\n")
    return [first + lines[0], *[_GUTTER + line for line in lines[1:]]]


def fork_words(header: Header) -> str:
    """`from FILE at step 2, then policy stuck (good before)`; older forks name the event."""
    if header.fork_step is None:
        return f"from {header.parent} at event {header.fork_at}"
    words = f"from {header.parent} at step {header.fork_step}"
    if header.fork_policy and header.fork_policy != header.policy:
        words += f", then policy {header.fork_policy} ({header.policy} before)"
    return words


def header_lines(header: Header) -> list[str]:
    policy = header.fork_policy or header.policy
    lines = [
        f"agent-tui · {clean(header.scenario)} · {clean(header.task)} · policy: {clean(policy)}",
        f"task: {one_line(header.task_text)}",
    ]
    if header.parent:
        lines.append(f"forked {clean(fork_words(header))}")
    title = header.options.get("title")
    if isinstance(title, str) and title.strip():
        lines.append(f"title: {one_line(title)}")
    system = header.options.get("system_prompt")
    if isinstance(system, str) and system.strip():
        lines += _indent("system", system.strip())
    lines.extend(mcp_lines(header))
    return lines


def mcp_lines(header: Header) -> list[str]:
    """One line per MCP server of the run: what it is, its tools, and the log its stderr goes to."""
    out = []
    for server in header.mcp:
        where = server.get("url") or " ".join([str(server.get("command", "")), *map(str, server.get("args", []))])
        log = f" · log: {server['log']}" if server.get("log") else ""
        trusted = " · trusted" if server.get("trusted") else ""
        out.append(f"mcp: {clean(str(server.get('name')))} ({one_line(where, 80)}) · {server.get('tools', 0)} tools{trusted}{clean(log)}")
    return out


def event_lines(event: Event) -> list[str]:
    """How one event reads in a terminal log."""
    t = event.type
    if t == "decision":
        out = [f"step {event.step}  [{clean(event.policy)}]"]
        if event.thought:
            out += _indent("thought", event.thought)
        if event.parse_error and event.raw is not None:
            out += _indent("wrote", event.raw)
        for action in event.actions:
            out += _indent("action", render_args(action.tool, action.args))
            if action.args_error is not None:
                out += _indent("unread", action.args_error)
        if event.answer is not None:
            out += _indent("answer", event.answer)
        return out
    if t == "observation":
        label = "error" if event.error else "observe"
        return _indent(label, event.text)
    if t == "approval_requested":
        return _indent("approval", f"{render_args(event.tool, event.args)} needs approval ({visible(event.reason, one_line=True)})")
    if t == "approval_decided":
        words = CHOICE_WORDS[event.choice]
        detail = f": {clean(event.reason)}" if event.reason else ""
        if event.choice == "modify" and event.args is not None:
            detail = ": " + clean(json.dumps(event.args, ensure_ascii=False))
        return _indent("operator", f"{words} by {clean(event.by)}{detail}")
    if t == "policy_swapped":
        return [f"  policy   {clean(event.old)} -> {clean(event.new)} from step {event.step}"]
    if t == "policy_error":
        return _indent("failed", f"policy {event.policy}: {event.message}")
    if t == "budget_warning":
        return [f"  budget   {event.kind} at {amount(event.kind, event.used)} of {amount(event.kind, event.limit)}"]
    if t == "budget_exhausted":
        return [f"  budget   {event.kind} limit reached: {amount(event.kind, event.used)} of {amount(event.kind, event.limit)}"]
    if t == "budget_extended":
        return [f"  budget   {event.kind} limit raised to {amount(event.kind, event.limit)}"]
    if t == "note":
        return note_lines(event)
    if t == "run_ended":
        return [outcome_line(event)]
    return [f"  {t}"]


NOTE_LABELS = {"user": "user", "system": "system", "subagent": "subagent", "unrecognised": "unmapped"}


def note_lines(note: Note) -> list[str]:
    """A user message, a system message, a sub-agent's work (nested) or a part kept raw."""
    if note.kind == "subagent":
        body = clean(note.text).split("\n")
        return [f"  {'subagent':<9}│ {body[0]}", *(f"  {'':<9}│ {line}" for line in body[1:])]
    return _indent(NOTE_LABELS.get(note.kind, note.kind), note.text)


def steps_count(n: int) -> str:
    """`1 step`, `3 steps`."""
    return f"{n} step" if n == 1 else f"{n} steps"


def outcome_line(end: RunEnded) -> str:
    word = OUTCOME_WORDS[end.outcome]
    if end.outcome == "answer":
        detail = end.answer or ""
    else:
        detail = end.reason
    detail = one_line(detail)
    return f"outcome: {word} after {steps_count(end.step)}" + (f": {detail}" if detail else "")
