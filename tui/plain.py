"""Plain-text rendering of a run, for headless runs and `show`: the one description of
an event (engine/core/describe.py) laid out as lines.

No Textual and no Rich here: the headless paths must start fast and run
anywhere. Untrusted text is cleaned of control characters before printing
(a call and an approval escaped to one line, every character shown: an
argument cannot draw a line of its own, such as a forged approval prompt).
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.core.describe import event_blocks, fork_words, outcome_detail, outcome_words
from engine.core.events import Event, Header, RunEnded
from engine.core.text import clean, visible


def one_line(text: str, limit: int | None = None) -> str:
    flat = clean(text).replace("\n", " ⏎ ")
    if limit is not None and len(flat) > limit:
        return flat[: limit - 1] + "…"
    return flat


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


_LEADS: dict[str, str] = {}
"""A block's label as the start of its first line (`  observe  `), by the block's label."""


def _lead(label: str) -> str:
    lead = _LEADS[label] = f"  {label.lower():<8} "
    return lead


def _indent(label: str, text: str) -> list[str]:
    text = clean(text)
    first = _LEADS.get(label) or _lead(label)
    if "\n" not in text:
        return [first + text]
    lines = text.split("\n")
    gutter = _GUTTER if len(first) == len(_GUTTER) else " " * len(first)  # a label longer than 8 (sub-agent)
    return [first + lines[0], *[gutter + line for line in lines[1:]]]


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
    """How one event reads in a terminal log: its blocks (`engine.core.describe`), each
    labelled in lower case, after a decision's `step N  [policy]`."""
    if event.type == "run_ended":
        return [outcome_line(event)]
    out = [f"step {event.step}  [{clean(event.policy)}]"] if event.type == "decision" else []
    asked = event.type == "approval_requested"
    for label, kind, text, _ in event_blocks(event):
        if kind == "action" or asked:
            out.append((_LEADS.get(label) or _lead(label)) + visible(text, one_line=True))
        else:
            out += _indent(label, text)
    return out


def outcome_line(end: RunEnded) -> str:
    """`outcome: answer after 3 steps: 2`."""
    detail = one_line(outcome_detail(end))
    return f"outcome: {outcome_words(end)}" + (f": {detail}" if detail else "")
