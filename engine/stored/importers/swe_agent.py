"""SWE-agent `.traj` files and mini-swe-agent trajectories.

SWE-agent: a JSON object with `history` (chat messages: the assistant's
`thought`, `action` and `tool_calls`, the action its call when none of the
tool calls can be read; `tool` messages answer by a list of
`tool_call_ids`; `user` messages after an action are its observation;
demonstration messages are part of the prompt; `thinking_blocks` are part of
the thought) and `trajectory` (action, observation, thought per step: read
when the history holds no assistant turn, the history's or the first step's
`query` messages then giving the system prompt and the task, else the
`replay_config`'s problem statement). `info.submission` is the answer when
`info.exit_status` is `submitted`; another exit status stops the run. A
retry loop's file (`{"attempts": [...]}`, maybe with the chosen attempt
copied beside it) is one run per attempt. An action is a command line (or an
object holding only one, or only a named tool and its arguments); any other
is kept as an unrecognised note, with its observation.

mini-swe-agent: a JSON list of messages (or `{"messages", "info",
"trajectory_format"}`): the action is the fenced shell block in the
assistant's text, its output the next user message. The command that prints
`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` submits: its output is the answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.core.events import Action, RunEnded
from engine.stored.importers.build import Draft, Step, answer_text, arguments, found, new_action, preview, text_of, tool_calls
from engine.core.jsontext import loads
from engine.stored.importers.chat import read_messages
from engine.stored.transcript import TranscriptError

_SHELL_FENCES = frozenset({"bash", "sh", "shell", "mswea_bash_command", "console"})
_FORMAT_ERROR = re.compile(r"EXACTLY ONE action|found \d+ actions", re.I)
"""mini-swe-agent's reply to a message without exactly one command: nothing was run."""
_TIMED_OUT = re.compile(r"timed out and has been killed", re.I)
"""mini-swe-agent's timeout template: the command was killed."""
_SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")


def is_swe_agent(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    if _attempts(data):
        return True
    history, trajectory = data.get("history"), data.get("trajectory")
    return (isinstance(history, list) and (isinstance(trajectory, list) or _has_swe_messages(history))) or (
        isinstance(trajectory, list) and bool(trajectory) and isinstance(trajectory[0], dict) and "action" in trajectory[0]
    )


def _attempts(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The attempts of a retry-loop .traj (SWE-agent's RetryAgent writes `{"attempts": [...]}`,
    with the chosen attempt's data copied beside it when it chose one)."""
    attempts = data.get("attempts")
    if not isinstance(attempts, list):
        return []
    return [a for a in attempts if isinstance(a, dict) and ("history" in a or "trajectory" in a)]


def _has_swe_messages(history: list[Any]) -> bool:
    return any(isinstance(m, dict) and ("message_type" in m or "tool_call_ids" in m or "agent" in m) for m in history[:20])


def is_mini(data: Any) -> bool:
    if isinstance(data, dict):
        fmt = data.get("trajectory_format")
        if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
            return True
        data = data.get("messages")
    if not isinstance(data, list):
        return False
    for m in data:
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
            if m["content"].lstrip().startswith("<returncode>"):
                return True
        if isinstance(m, dict) and m.get("role") == "exit":
            return True
    return False


def fenced_blocks(text: str) -> list[tuple[str, str, int, int]]:
    """The fenced blocks of a message in order, each fence paired with the next as Markdown pairs
    them: (language, body, start, end). Pairing matters: the closing fence of a ```python block
    must not open a block that runs to the next ```bash."""
    blocks = []
    pos = 0
    while (start := text.find("```", pos)) >= 0:
        eol = text.find("\n", start)
        if eol < 0:
            break
        info = text[start + 3:eol]
        if "```" in info:  # an inline ```code``` span on one line
            pos = start + 3 + info.index("```") + 3
            continue
        close = text.find("```", eol)
        if close < 0:
            break
        language = info.strip().split()[0].lower() if info.strip() else ""
        blocks.append((language, text[eol + 1:close].rstrip("\r\n"), start, close + 3))
        pos = close + 3
    return blocks


def shell_commands(text: str) -> tuple[list[str], str]:
    """The commands of an assistant message (its shell-fenced blocks, else its unlabelled ones; a
    ```python block is prose, not a command) and the text without them."""
    blocks = fenced_blocks(text)
    chosen = [b for b in blocks if b[0] in _SHELL_FENCES] or [b for b in blocks if not b[0]]
    rest, pos = [], 0
    for _language, _body, start, end in chosen:
        rest.append(text[pos:start])
        pos = end
    rest.append(text[pos:])
    return [body for _language, body, _start, _end in chosen], "".join(rest).strip()


def _command_action(command: str) -> Action:
    """A SWE-agent command line: the first word is the tool, the rest its input."""
    head, _, rest = command.strip().partition(" ")
    return new_action(tool=head or "command", args={"input": rest.strip()} if rest.strip() else {})


def _action(action: Any) -> Action | None:
    """A step's `action` as a call: a command line, or an object that is only a command line
    (`command` or `cmd`) or only a named tool (`name` or `tool`) with its `arguments` (or `args`,
    an object or its JSON). None for anything else, which the caller keeps as an unrecognised note."""
    if isinstance(action, str):
        return _command_action(action) if action.strip() else None
    if not isinstance(action, dict):
        return None
    keys = set(action)
    for key in ("command", "cmd"):
        if keys == {key} and isinstance(action[key], str) and action[key].strip():
            return _command_action(action[key])
    for key in ("name", "tool"):
        for args_key in ("arguments", "args"):
            if keys <= {key, args_key} and isinstance(action.get(key), str) and action[key].strip():
                args, error = arguments(action.get(args_key))
                return new_action(tool=action[key], args=args) if error is None else None
    return None


def _written(action: Any) -> bool:
    """Whether a step's `action` holds anything (an empty or blank one is no action)."""
    if isinstance(action, str):
        return bool(action.strip())
    return action is not None and action != [] and action != {}


def _end(draft: Draft, info: Any) -> None:
    if not isinstance(info, dict):
        return
    status = info.get("exit_status")
    submission = info.get("submission")
    if isinstance(submission, dict) and submission:
        submission = answer_text(submission)
    if isinstance(submission, str) and submission.strip() and (not isinstance(status, str) or "submitted" in status.lower()):
        draft.end = RunEnded(outcome="answer", reason=str(status or "submitted"), step=0, answer=submission)
    elif isinstance(status, str) and status:
        draft.end = RunEnded(outcome="stopped", reason=status, step=0)


def read_swe_agent(name: str, data: dict[str, Any]) -> list[Draft]:
    attempts = _attempts(data)
    if not attempts:
        return [_attempt(name, data)]
    drafts = []
    best = data.get("info", {}).get("best_attempt_idx") if isinstance(data.get("info"), dict) else None
    for number, attempt in enumerate(attempts, 1):
        draft = _attempt(name, attempt)
        draft.options["attempt"] = number
        if isinstance(best, int) and not isinstance(best, bool):
            draft.options["best_attempt"] = best + 1
        drafts.append(draft)
    return drafts


def _attempt(name: str, data: dict[str, Any]) -> Draft:
    """One SWE-agent run: its history when it has the assistant's turns, else its trajectory
    (with the system prompt and task the history or the first step's query holds)."""
    draft = Draft(name, "swe-agent", final_text_is_answer=False)
    history = data.get("history") if isinstance(data.get("history"), list) else []
    trajectory = data.get("trajectory") if isinstance(data.get("trajectory"), list) else []
    if any(isinstance(m, dict) and m.get("role") == "assistant" for m in history):
        _history(draft, history)
    else:
        query = trajectory[0].get("query") if trajectory and isinstance(trajectory[0], dict) else None
        if history:
            _history(draft, history)
        elif isinstance(query, list):
            _history(draft, [m for m in query if not (isinstance(m, dict) and m.get("role") == "assistant")], "query")
        if draft.task_text is None:
            draft.task_text = _problem_statement(data.get("replay_config"))
        _trajectory(draft, trajectory)
    _end(draft, data.get("info"))
    return draft


def _problem_statement(config: Any) -> str | None:
    """The issue text of a `replay_config` (a JSON string, or an object), when it holds one."""
    if isinstance(config, str):
        try:
            config = loads(config)
        except (json.JSONDecodeError, RecursionError):
            return None
    statement = config.get("problem_statement") if isinstance(config, dict) else None
    text = statement.get("text") if isinstance(statement, dict) else None
    return text if isinstance(text, str) and text.strip() else None


def _thinking(blocks: Any) -> str:
    """The text of an assistant message's `thinking_blocks` (Anthropic thinking, as litellm passes it on)."""
    if not isinstance(blocks, list):
        return ""
    texts = []
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("thinking"), str):
            texts.append(block["thinking"])
        elif isinstance(block, dict) and block.get("type") == "redacted_thinking":
            texts.append("(redacted thinking)")
    return "\n".join(t for t in texts if t.strip())


def _history(draft: Draft, history: list[Any], label: str = "history") -> None:
    for source, m in draft.objects(history, label):
        role, content = m.get("role"), text_of(m.get("content"))
        if m.get("is_demo"):
            draft.note("system", content, source)
        elif role == "system":
            if draft.made_steps:
                draft.note("system", content, source)
            else:
                draft.system.append(content)
        elif role == "assistant":
            thought = m.get("thought") if isinstance(m.get("thought"), str) else content
            step = draft.new_step(_thinking(m.get("thinking_blocks")))
            step.add_thought(thought)
            calls = tool_calls(m)
            for call in calls:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                    args, error = arguments(fn.get("arguments"))
                    cid = call.get("id") if isinstance(call.get("id"), str) else None
                    draft.call(step, new_action(tool=fn["name"], args=args, call_id=cid, args_error=error))
                else:
                    draft.unrecognised("a tool call without a function name", call, source)
            action = None if step.actions else _action(m.get("action"))  # it repeats the calls: read when none could be
            if action is not None:
                draft.call(step, action)
            elif not step.actions and _written(m.get("action")):
                draft.unrecognised("an action that cannot be read as a call", m["action"], source)
        elif role == "tool":
            ids = m.get("tool_call_ids") if isinstance(m.get("tool_call_ids"), list) else [m.get("tool_call_id")]
            for call_id in ids or [None]:
                draft.result(call_id, content, None, source)
        elif role == "user":
            last = draft.items[-1] if draft.items else None
            if type(last) is Step and (index := last.first_open()) is not None:
                last.observe(index, content)
            else:
                draft.user(content, source)
        else:
            draft.unrecognised(f"a message with role {role!r}", content or m, source)


def _trajectory(draft: Draft, trajectory: list[Any]) -> None:
    for source, entry in draft.objects(trajectory, "trajectory", "a step"):
        thought = entry.get("thought") if isinstance(entry.get("thought"), str) else text_of(entry.get("response"))
        step = draft.new_step(thought)
        action, observation = _action(entry.get("action")), text_of(entry.get("observation"))
        if action is not None:
            step.actions.append(action)
            step.observe(0, observation)
        elif _written(entry.get("action")):  # one note, so the observation stays with its action
            seen = f"\nits observation: {observation}" if observation else ""
            draft.unrecognised("an action that cannot be read as a call", preview(entry["action"], 4000) + seen, source)
        elif entry.get("observation"):
            draft.unrecognised("an observation without an action", entry.get("observation"), source)


def read_mini(name: str, data: Any) -> list[Draft]:
    draft = Draft(name, "mini-swe-agent", final_text_is_answer=False)
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list):
        raise TranscriptError(f"{name}:1: a mini-swe-agent trajectory without a \"messages\" list; got {found(data)}")
    submitting = False
    for source, m in draft.objects(messages, "message"):
        role, content = m.get("role"), text_of(m.get("content"))
        if role == "assistant" and not m.get("tool_calls"):
            blocks, thought = shell_commands(content)
            recorded = _recorded_commands(m.get("extra"))
            blocks = recorded if recorded is not None else blocks
            step = draft.new_step(thought)
            for block in blocks:
                step.actions.append(new_action(tool="bash", args={"command": block}))
            submitting = any(marker in b for b in blocks for marker in _SUBMIT_MARKERS)
            step.raw = content
        elif role == "user" and _refused(draft, content):
            step = draft.last_step()
            step.actions.clear()  # mini-swe-agent ran none of them: they stay in the thought, as written
            step.thought, submitting = (step.raw or "").strip(), False
            draft.note("system", content, source)
        elif role == "user" and draft.items and type(step := draft.items[-1]) is Step and (index := step.first_open()) is not None:
            step.observe(index, content, error=_failed(content, m.get("extra")))
            if submitting:
                draft.end = RunEnded(outcome="answer", reason="submitted", step=0, answer=content)
        elif role == "exit":
            extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
            _end(draft, {"exit_status": extra.get("exit_status") or content or "exit", "submission": extra.get("submission")})
        else:
            read_messages(draft, [m], lambda _i, s=source: s)
    if isinstance(data, dict) and draft.end is None:
        _end(draft, data.get("info"))
    return [draft]


def _refused(draft: Draft, content: str) -> bool:
    """The message right after a step is mini-swe-agent's format error (zero or several commands)."""
    step = draft.last_step()
    return (step is not None and draft.items[-1] is step and not step.observations
            and not content.lstrip().startswith("<returncode>") and _FORMAT_ERROR.search(content[:300]) is not None)


def _recorded_commands(extra: Any) -> list[str] | None:
    """The commands mini-swe-agent 2 parsed and ran (`extra.actions`), which hold whatever its
    configured action format was; None when the message does not carry them."""
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if not isinstance(actions, list) or not actions:
        return None
    commands = [a.get("command") for a in actions if isinstance(a, dict)]
    return commands if all(isinstance(c, str) for c in commands) and commands else None


def _failed(output: str, extra: Any = None) -> bool | None:
    """Whether a command failed: its recorded return code, the one the output shows, or a timeout."""
    code = extra.get("returncode") if isinstance(extra, dict) else None
    if isinstance(code, int) and not isinstance(code, bool):
        return code != 0
    if _TIMED_OUT.search(output[:500]):
        return True
    m = re.match(r"\s*<returncode>\s*(-?\d+)\s*</returncode>", output)
    return None if m is None else m.group(1) != "0"
