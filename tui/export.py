"""A run as a readable Markdown report: the task, each step, approvals, the end, usage.

Each event is the one description of it (engine/core/describe.py) in Markdown.

No Textual and no Rich. Agent text is untrusted: thoughts and answers are
escaped so they cannot become links, images or HTML, and observations and
arguments go in code blocks fenced longer than any backtick run they contain.
"""

from __future__ import annotations

import re
from typing import Sequence

from engine.core.amounts import amount, dollars, seconds
from engine.core.events import Event, Header, ToolStarted
from engine.core.state import fold
from engine.core.describe import event_blocks, fork_words, outcome_words
from engine.core.text import clean

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def escape(text: str) -> str:
    """Markdown-inert text on one or more lines (control characters removed)."""
    return _SPECIAL.sub(r"\\\1", clean(text))


def quote(text: str) -> str:
    return "\n".join(f"> {escape(line)}" if line.strip() else ">" for line in text.strip().split("\n"))


def code(text: str, info: str = "text") -> str:
    body = clean(text)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def inline(text: str) -> str:
    body = clean(text).replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{ticks}{pad}{body}{pad}{ticks}"


def _event_markdown(event: Event) -> list[str]:
    """An event's blocks (`engine.core.describe`) in Markdown: a thought quoted, a call and
    an approval asked in a code span, a long or foldable text (an observation, say) in a code block, the rest a
    paragraph; an observation also names its tool and whether it ran."""
    out: list[str] = []
    for block in event_blocks(event):
        label, text = block.label, block.text
        if block.kind == "thought":
            out += [quote(text), ""]
        elif block.kind == "action":
            out += [f"- **{label}** {inline(text)}", ""]
        elif event.type == "approval_requested":
            out += [f"> **{label}** {inline(text)}", ""]
        elif block.kind == "answer" or (block.kind == "header" and not block.foldable):
            out += [f"**{label}:**", "", quote(text or " "), ""]
        elif block.foldable or "\n" in text:
            where = ""
            if event.type == "observation":
                where = (f" from {inline(event.tool)}" if event.tool else "") + ("" if event.executed or event.tool is None else " (the tool did not run)")
            out += [f"**{label}**{where}:", "", code(text), ""]
        else:
            out += [f"**{label}** {escape(text)}", ""]
    return out


def markdown_report(
    header: Header, events: Sequence[Event], source: str | None = None, unfinished: ToolStarted | None = None
) -> str:
    """The whole report as one string; `unfinished` is a call the run stopped in (its outcome is unknown)."""
    state = fold(header, events)
    out: list[str] = [f"# Run report: {escape(header.scenario)} · {escape(header.task)}", ""]
    rows = [
        ("Task", escape(header.task_text).replace("\n", " ") or "(none)"),
        ("Scenario", escape(header.scenario)),
        ("Policy", escape(header.policy) + (f" (ended with {escape(state.policy)})" if state.policy != header.policy else "")),
        ("Tools", ", ".join(f"{inline(t.name)}{' (' + t.kind + ')' if t.kind != 'ordinary' else ''}" for t in header.tools) or "(none recorded)"),
    ]
    limits = [f"{k} {amount(k, v)}" for k in ("steps", "tokens", "cost", "seconds") if (v := header.budget.limit(k)) is not None]
    rows.append(("Budget", ", ".join(limits) or "no limits"))
    system = header.options.get("system_prompt")
    if isinstance(system, str) and system.strip():
        rows.append(("System prompt", escape(system).replace("\n", " ")))
    if source:
        rows.append(("Transcript", inline(source)))
    if header.parent:
        rows.append(("Forked", inline(fork_words(header))))
    out += ["| | |", "|---|---|", *(f"| {k} | {v.replace('|', chr(92) + '|')} |" for k, v in rows), ""]

    out += ["## Steps", ""]
    if not any(e.type == "decision" for e in events):
        out += ["No step was taken.", ""]
    for e in events:
        if e.type == "decision":
            out += [f"### Step {e.step} · {escape(e.policy)}", ""]
        if e.type != "run_ended":
            out += _event_markdown(e)

    if unfinished is not None:
        from engine.core.decisions import unknown_outcome_text

        out += [f"**{escape(unknown_outcome_text(unfinished))}**", ""]
    out += ["## End", ""]
    end = state.ended
    if end is None:
        status = state.status.replace("_", " ")
        out += [f"The run did not end (status: {status} after step {state.step}).", ""]
    else:
        out += [f"**Run ended: {outcome_words(end)}**: {escape(end.reason)}.", ""]
        if end.answer is not None:
            out += ["Answer:", "", quote(end.answer) if end.answer.strip() else "> (empty)", ""]

    out += ["## Usage", "", "| | |", "|---|---|"]
    estimated = " (estimated)" if state.estimated_usage else ""
    out += [
        f"| Steps | {state.step} |",
        f"| Tokens in | {state.input_tokens}{estimated} |",
        f"| Tokens out | {state.output_tokens}{estimated} |",
        f"| Cost | {dollars(state.cost)} |",
        f"| Policy and tool time | {seconds(state.seconds)} |",
        f"| Events | {len(events)} |",
    ]
    approvals = sum(1 for e in events if e.type == "approval_requested")
    rejections = sum(1 for e in events if e.type == "approval_decided" and e.choice == "reject")
    out += [f"| Approvals asked | {approvals} |", f"| Rejections | {rejections} |", ""]
    if state.tool_calls:
        out += ["| Tool | Calls |", "|---|---|"]
        out += [f"| {inline(name)} | {count} |" for name, count in sorted(state.tool_calls.items())]
        out.append("")
    return "\n".join(out)
