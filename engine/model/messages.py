"""The model's messages kept from one request to the next.

A run's history only grows, and only its last step changes (its observations
and the operator's edits arrive after the decision). So each request is the
previous one's messages for the steps that cannot change any more, plus the
messages of the steps after them: building the request at step 10,000 costs
what the new step costs, not the 10,000 before it. Anything unexpected (a
shorter history, another step object where the last kept one was, a change of
mode or tools) starts over from `build_messages`, so the messages are always
the ones it would build.
"""

from __future__ import annotations

from typing import Any

from engine.core.policy import RunView, StepView
from engine.model.wire import Mode, assign_call_ids, head_messages, step_messages


class MessageLog:
    """`build_messages(view, mode, system)`, built incrementally across requests.

    `messages` returns the log's own list, changed in place by the next call
    (its last step's messages replaced, new ones added): a request is sent
    before the next is built, and a copy of every message reference would
    make each request cost what the whole run does. Copy it to keep it.
    """

    def __init__(self, mode: Mode, system: str | None = None) -> None:
        self.mode: Mode = mode
        self.system = system
        self._tools: tuple[Any, ...] = ()
        self._head: list[dict[str, Any]] = []
        self._sent: list[dict[str, Any]] = []
        """The head, the messages of the steps that can no longer change, then the last step's."""
        self._kept = 0
        """How many of `_sent` are the head's and the finished steps'."""
        self._done_steps = 0
        self._last_done: StepView | None = None
        self._ids: dict[tuple[int, int], str] = {}
        self._used: set[str] = set()
        self.words = 0
        """Words in the head's and the finished steps' messages (for estimating tokens)."""
        self.sent_words = 0
        """Words in the messages `messages` returned last."""

    def messages(self, view: RunView) -> list[dict[str, Any]]:
        history = view.history
        if not self._still_valid(view):
            self._restart(view)
        tools = {t.name: t for t in view.tools}
        sent = self._sent
        del sent[self._kept :]  # the last step's messages, as sent before
        # Every step but the last is finished: it moves to the kept part.
        for s in history[self._done_steps : len(history) - 1]:
            self._add(s, tools, sent)
            self._done_steps += 1
            self._last_done = s
        self._kept = len(sent)
        tail = self._tail(history[-1], tools) if len(history) > self._done_steps else []
        self.sent_words = self.words + sum(len(message_words(m).split()) for m in tail)
        sent.extend(tail)
        return sent

    def _tail(self, last: StepView, tools: dict[str, Any]) -> list[dict[str, Any]]:
        """The last step's messages. Its call ids are taken for this request only:
        they are added to the kept ids and taken out again (copying the ids of
        every step before it would make a request cost what the whole run does)."""
        if self.mode != "tools":
            return step_messages(last, self.mode, tools, self._ids)
        keys = [(last.step, i) for i in range(len(last.actions))]
        before = {key: self._ids[key] for key in keys if key in self._ids}
        assign_call_ids(last, self._ids, self._used)
        try:
            return step_messages(last, self.mode, tools, self._ids)
        finally:
            for key in keys:  # every id assign_call_ids gave was unused before it
                self._used.discard(self._ids.pop(key))
            self._ids.update(before)

    def _add(self, s: StepView, tools: dict[str, Any], into: list[dict[str, Any]]) -> None:
        if self.mode == "tools":
            assign_call_ids(s, self._ids, self._used)
        new = step_messages(s, self.mode, tools, self._ids)
        self.words += sum(len(message_words(m).split()) for m in new)
        into.extend(new)

    def _still_valid(self, view: RunView) -> bool:
        history = view.history
        if not self._head:  # never built (a run without tools matched the empty start)
            return False
        if tuple(view.tools) != self._tools or len(history) < self._done_steps + 1 and self._done_steps:
            return False
        return self._done_steps == 0 or history[self._done_steps - 1] is self._last_done

    def _restart(self, view: RunView) -> None:
        self._tools = tuple(view.tools)
        self._head = head_messages(view, self.mode, self.system)
        self._sent, self._kept = list(self._head), len(self._head)
        self._done_steps, self._last_done = 0, None
        self._ids, self._used = {}, set()
        self.words = sum(len(message_words(m).split()) for m in self._head)


def message_words(message: dict[str, Any]) -> str:
    """The text of a message a token estimate counts: its content and its tool calls."""
    parts = [message.get("content") or ""]
    for call in message.get("tool_calls") or []:
        parts.append(f"{call['function']['name']} {call['function']['arguments']}")
    return " ".join(parts)
