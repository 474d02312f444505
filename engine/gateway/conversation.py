"""One agent conversation as the gateway follows it.

An agent sends its whole history with every request. The gateway keeps the
previous request's messages (compared in a normal form, so a client that
re-serialises them differently still continues); a request that starts with
them continues the conversation and its new messages are the tool results
and user turns since. The upstream sees the agent's messages plus what the
agent never saw: calls the operator rejected and the tool message giving the
reason, spliced in where they happened.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engine.wires.neutral import message_text

def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        try:
            return json.dumps(json.loads(raw), sort_keys=True)
        except (ValueError, RecursionError):
            return raw
    return json.dumps(raw, sort_keys=True, default=str)


def normal_form(message: dict[str, Any]) -> tuple[Any, ...]:
    """What must stay the same for a message to count as the one sent before."""
    calls = tuple(
        (str(c.get("id", "")), str((c.get("function") or {}).get("name", "")), _arguments((c.get("function") or {}).get("arguments")))
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    )
    return (message.get("role"), message_text(message.get("content")), calls, message.get("tool_call_id"))


@dataclass
class NewMessages:
    """What a continuing request brings: tool results by call id and user turns."""

    results: dict[str, str] = field(default_factory=dict)
    user: list[str] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)
    """Ids of the tool calls in the agent's new assistant messages: calls it shows it received."""


@dataclass
class Conversation:
    number: int
    known: list[tuple[Any, ...]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    upstream: list[dict[str, Any]] = field(default_factory=list)
    splice: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0

    def continues(self, messages: list[dict[str, Any]], forms: dict[int, tuple[Any, ...]] | None = None) -> bool:
        """True when `messages` begins with the previous request's messages. `forms`: the normal
        forms of `messages` by place, filled as they are needed (one request is matched against
        every conversation: each of its messages is put in normal form once)."""
        if not self.known or len(messages) < len(self.known):
            return False
        forms = {} if forms is None else forms
        for n, (m, s, k) in enumerate(zip(messages, self.sent, self.known)):
            if m == s:  # the same dicts as last time (the usual case) need no normal form
                continue
            form = forms.get(n)
            if form is None:
                form = forms[n] = normal_form(m)
            if form != k:
                return False
        return True

    def take(self, messages: list[dict[str, Any]]) -> NewMessages:
        """Record a request's messages; return what is new in them."""
        new = messages[len(self.known) :]
        self.known.extend(normal_form(m) for m in new)
        self.sent = list(messages)
        found = NewMessages()
        for m in new:
            if m.get("role") == "assistant":
                found.calls.update(c["id"] for c in m.get("tool_calls") or [] if isinstance(c.get("id"), str))
        if self.splice:
            at = 0
            while at < len(new) and new[at].get("role") in ("assistant", "tool") and (at == 0 or new[at].get("role") == "tool"):
                at += 1
            new = [*new[:at], *self.splice, *new[at:]]
            self.splice = []
        self.upstream.extend(new)
        for m in new:
            if m.get("role") == "tool" and m.get("tool_call_id") is not None:
                found.results[str(m["tool_call_id"])] = message_text(m.get("content"))
            elif m.get("role") == "user":
                found.user.append(message_text(m.get("content")))
        return found

    def rejected(self, content: str, calls: list[dict[str, Any]], answers: list[tuple[str, str]], now: bool) -> None:
        """Calls the agent never saw and why: into the upstream history now (asked again) or after the next results."""
        spliced = [{"role": "assistant", "content": content or None, "tool_calls": calls}]
        spliced += [{"role": "tool", "tool_call_id": cid, "content": text} for cid, text in answers]
        if now:
            self.upstream.extend(spliced)
        else:
            self.splice.extend(spliced)
