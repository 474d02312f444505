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

from engine.core.content import content_text

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def message_text(content: Any) -> str:
    """The text of a message's content (`engine.core.content.content_text`); any other
    value kept whole, as JSON."""
    text = content_text(content)
    return json.dumps(content, sort_keys=True) if text is None else text


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

    def continues(self, messages: list[dict[str, Any]]) -> bool:
        """True when `messages` begins with the previous request's messages."""
        if not self.known or len(messages) < len(self.known):
            return False
        # The same dicts as last time (the usual case) need no normal form.
        return all(m == s or normal_form(m) == k for m, s, k in zip(messages, self.sent, self.known))

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


def check_request(body: Any) -> str | None:
    """Why a chat completions request cannot be served (None when it can), naming the field."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list of messages"
    for n, m in enumerate(messages):
        problem = _message_problem(m, f"messages[{n}]")
        if problem is not None:
            return problem
    if "stream" in body and not isinstance(body["stream"], bool):
        return "'stream' must be true or false"
    if body.get("stream_options") is not None and not isinstance(body["stream_options"], dict):
        return "'stream_options' must be an object"
    if body.get("n") not in (None, 1) or isinstance(body.get("n"), bool):
        return "the gateway serves one choice per request ('n' must be 1)"
    return None


def _message_problem(m: Any, where: str) -> str | None:
    if not isinstance(m, dict):
        return f"{where} must be an object"
    role = m.get("role")
    if not isinstance(role, str) or role not in ROLES:
        return f"{where} has no valid role (system, developer, user, assistant or tool)"
    if role == "tool" and not isinstance(m.get("tool_call_id"), str):
        return f"{where} is a tool message without a tool_call_id"
    content = m.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return f"{where}.content must be a string, a list of parts or null"
    calls = m.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"{where}.tool_calls must be a list of tool calls"
    for k, c in enumerate(calls):
        at = f"{where}.tool_calls[{k}]"
        if not isinstance(c, dict):
            return f"{at} must be an object"
        if not isinstance(c.get("id", ""), str):
            return f"{at}.id must be a string"
        function = c.get("function")
        if not isinstance(function, dict):
            return f"{at}.function must be an object with a name and arguments"
        if not isinstance(function.get("name", ""), str):
            return f"{at}.function.name must be a string"
    return None
