"""A run as a readable Markdown report: the task, each step, approvals, the end, usage.

No Textual and no Rich. Agent text is untrusted: thoughts and answers are
escaped so they cannot become links, images or HTML, and observations and
arguments go in code blocks fenced longer than any backtick run they contain.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

from engine.core.amounts import amount, dollars, seconds
from engine.core.events import Event, Header, ToolStarted
from engine.core.state import fold
from engine.core.text import clean
from tui.plain import fork_words, steps_count
from tui.words import call_text

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")
_OUTCOME = {"answer": "answered", "stopped": "stopped", "handed_off": "handed off", "aborted": "aborted"}


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


def _call(tool: str | None, args: dict) -> str:
    return inline(call_text(tool, args))


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
        t = e.type
        if t == "decision":
            out += [f"### Step {e.step} · {escape(e.policy)}", ""]
            if e.thought:
                out += [quote(e.thought), ""]
            if e.parse_error and e.raw is not None:
                out += ["The policy wrote, in a form that could not be read:", "", code(e.raw), ""]
            for a in e.actions:
                out += [f"- **Action** {_call(a.tool, a.args)}"]
                if a.args_error is not None:
                    out += ["", "  Its arguments could not be read:", "", code(a.args_error)]
            if e.actions:
                out.append("")
            if e.answer is not None:
                out += ["**Answer:**", "", quote(e.answer), ""]
        elif t == "observation":
            label = "Error" if e.error else "Observation"
            note = "" if e.executed or e.tool is None else " (the tool did not run)"
            out += [f"**{label}**{' from ' + inline(e.tool) if e.tool else ''}{note}:", "", code(e.text), ""]
        elif t == "approval_requested":
            out += [f"> **Approval asked** for {_call(e.tool, e.args)}: {escape(e.reason)}", ""]
        elif t == "approval_decided":
            words = {"approve": "Approved", "approve_always": "Approved always for this tool", "reject": "Rejected",
                     "modify": "Edited and approved", "abort": "Aborted"}[e.choice]
            detail = f": {escape(e.reason)}" if e.reason else ""
            if e.choice == "modify" and e.args is not None:
                detail = f": {inline(json.dumps(e.args, ensure_ascii=False))}"
            out += [f"> **{words}** by {escape(e.by)}{detail}", ""]
        elif t == "policy_swapped":
            out += [f"*Policy swapped: {escape(e.old)} → {escape(e.new)} from step {e.step}.*", ""]
        elif t == "policy_error":
            out += [f"**Policy error** ({escape(e.policy)}, step {e.step}):", "", code(e.message), ""]
        elif t == "budget_warning":
            out += [f"*Budget warning: {e.kind} at {amount(e.kind, e.used)} of {amount(e.kind, e.limit)}.*", ""]
        elif t == "budget_exhausted":
            out += [f"*Budget reached: {e.kind} at {amount(e.kind, e.used)} of {amount(e.kind, e.limit)}.*", ""]
        elif t == "budget_extended":
            out += [f"*Budget extended: {e.kind} limit now {amount(e.kind, e.limit)}.*", ""]
        elif t == "note":
            label = {"user": "User", "system": "System", "subagent": "Sub-agent", "unrecognised": "Not mapped"}.get(e.kind, e.kind)
            out += [f"**{label}:**", "", code(e.text) if e.kind in ("subagent", "unrecognised") else quote(e.text or " "), ""]

    if unfinished is not None:
        from engine.core.decisions import unknown_outcome_text

        out += [f"**{escape(unknown_outcome_text(unfinished))}**", ""]
    out += ["## End", ""]
    end = state.ended
    if end is None:
        status = state.status.replace("_", " ")
        out += [f"The run did not end (status: {status} after step {state.step}).", ""]
    else:
        out += [f"**{_OUTCOME[end.outcome].capitalize()}** after {steps_count(end.step)}: {escape(end.reason)}.", ""]
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
