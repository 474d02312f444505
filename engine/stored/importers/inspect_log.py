"""Inspect AI eval logs: the `.json` log and the `.eval` zip archive; one run per sample.

A sample's `messages` are chat messages: `system`, `user` (the first is the
task), `assistant` (`content` a string or blocks of `text` / `reasoning`,
`tool_calls` as `{"id", "function": "<name>", "arguments": {...}}`, or one
such call not in a list; a
`tool_use` block is a tool the provider ran, with its result) and `tool`
(`tool_call_id`, `function`, `content`, `error`, whose message is kept with
the result). The sample's `scores` are a system note after the last step; its
`error` or `limit` ends the run as stopped with the reason. The `.eval` archive holds
`header.json` and one `samples/<id>_epoch_<n>.json` per sample. A bare list
of such messages (a sample's `messages` saved on its own) is one run.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from engine.core.events import RunEnded
from engine.stored.importers.build import Draft, Step, arguments, found, new_action, preview, text_of, tool_calls
from engine.core.jsontext import loads
from engine.stored.reader import MAX_LINE_BYTES
from engine.stored.transcript import TranscriptError


MAX_UNPACK_RATIO = 100
"""How many times its own size an .eval archive's samples may unpack to (real logs: about 15)."""
MIN_UNPACK_CAP = 256 << 20
"""Below this, the unpacked size of the samples is not checked against the ratio."""


def is_inspect(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("eval"), dict) and (
        "samples" in data or "status" in data or "version" in data
    )


def is_inspect_messages(data: Any) -> bool:
    """A bare list of Inspect `ChatMessage`s (a sample's `messages` saved on its own): its tool
    calls name their function as a string (`"function": "bash"`, the arguments an object) and its
    tool messages name theirs, where OpenAI chat messages nest `{"function": {"name", "arguments"}}`."""
    if not isinstance(data, list):
        return False
    for m in data[:200]:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool" and isinstance(m.get("function"), str):
            return True
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if isinstance(calls, list) and any(isinstance(c, dict) and isinstance(c.get("function"), str) for c in calls):
            return True
    return False


def _sample_text(content: Any) -> tuple[str, str, list[dict[str, Any]]]:
    """(text, reasoning, server tool uses) of an Inspect message's content. Redacted reasoning
    holds the provider's encrypted blob, not words: its summary stands for it."""
    if isinstance(content, list):
        texts, reasoning, tool_uses = [], [], []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "reasoning":
                summary = block.get("summary") if isinstance(block.get("summary"), str) else ""
                if block.get("redacted"):
                    reasoning.append(summary or "(redacted reasoning)")
                else:
                    reasoning.append(str(block.get("reasoning") or summary or ""))
            elif kind == "tool_use" and isinstance(block.get("name"), str):
                tool_uses.append(block)
            else:
                texts.append(text_of([block]))
        return "\n".join(t for t in texts if t), "\n".join(r for r in reasoning if r), tool_uses
    return text_of(content), "", []


def _server_tool_use(draft: Draft, step: Step, block: dict[str, Any]) -> None:
    """A tool the model's provider ran (web search...): the call and its result, in one content block."""
    args, error = arguments(block.get("arguments"))
    index = draft.call(step, new_action(tool=block["name"], args=args, args_error=error))
    failure = block.get("error") if isinstance(block.get("error"), str) and block.get("error") else None
    result = text_of(block.get("result")) if not isinstance(block.get("result"), (dict, int, float)) else preview(block["result"], 4000)
    step.observe(index, failure or result, bool(failure))


def _sample_end(draft: Draft, sample: dict[str, Any]) -> None:
    """The sample's scores as a note, and the error or limit that halted it as the run's end."""
    scores = sample.get("scores")
    if isinstance(scores, dict) and scores:
        lines = []
        for scorer, score in scores.items():
            if not isinstance(score, dict):
                continue
            line = f"{scorer}: {preview(score.get('value'), 200)}"
            for key in ("answer", "explanation"):
                if isinstance(score.get(key), str) and score[key].strip():
                    line += f"\n  {key}: {score[key]}"
            lines.append(line)
        if lines:
            draft.note("system", "score " + "\nscore ".join(lines), "scores")
    error, limit = sample.get("error"), sample.get("limit")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        draft.end = RunEnded(outcome="stopped", reason=f"error: {error['message']}", step=0)
    elif isinstance(error, str) and error:
        draft.end = RunEnded(outcome="stopped", reason=f"error: {error}", step=0)
    elif isinstance(limit, dict) and isinstance(limit.get("type"), str):
        draft.end = RunEnded(outcome="stopped", reason=f"{limit['type']} limit ({preview(limit.get('limit'), 30)})", step=0)


def read_sample(name: str, sample: Any, label: str) -> Draft:
    draft = Draft(name, "inspect")
    if not isinstance(sample, dict):
        draft.unrecognised(f"{found(sample)} where a sample was expected", sample, label)
        return draft
    for key in ("id", "epoch"):
        if isinstance(sample.get(key), (str, int)) and not isinstance(sample.get(key), bool):
            draft.options[f"sample_{key}"] = sample[key]
    messages = sample.get("messages")
    if not isinstance(messages, list):
        draft.unrecognised("a sample without a messages list", sample.get("input"), label)
        return draft
    for source, m in draft.objects(messages, f"{label}, message"):
        role = m.get("role")
        text, reasoning, tool_uses = _sample_text(m.get("content"))
        if role == "system":
            if draft.made_steps or draft.task_text is not None:
                draft.note("system", text, source)
            else:
                draft.system.append(text)
        elif role == "user":
            draft.user(text, source)
        elif role == "assistant":
            step = draft.new_step(reasoning)
            calls = tool_calls(m)
            step.add_reply(text)
            for block in tool_uses:
                _server_tool_use(draft, step, block)
            for call in calls:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):  # an OpenAI-shaped call inside an Inspect log
                    fn, raw = fn.get("name"), fn.get("arguments")
                else:
                    raw = call.get("arguments") if isinstance(call, dict) else None
                if not isinstance(fn, str):
                    draft.unrecognised("a tool call without a function name", call, source)
                    continue
                args, error = arguments(raw)
                if isinstance(call.get("parse_error"), str) and call["parse_error"]:
                    error = call["parse_error"]
                cid = call.get("id") if isinstance(call.get("id"), str) else None
                draft.call(step, new_action(tool=fn, args=args, call_id=cid, args_error=error))
        elif role == "tool":
            error = m.get("error")
            message = str(error["message"]) if isinstance(error, dict) and error.get("message") else ""
            if message and message not in text:
                text = f"{text}\n{message}" if text else message
            draft.result(m.get("tool_call_id"), text, bool(error) if error is not None else None, source,
                         name=m.get("function"))
        else:
            draft.unrecognised(f"a message with role {role!r}", text or m, source)
    _sample_end(draft, sample)
    return draft


def read_inspect_messages(name: str, messages: list[Any]) -> list[Draft]:
    """A bare message list: one run, read as a sample holding only its messages."""
    return [read_sample(name, {"messages": messages}, "the message list")]


def read_inspect_json(name: str, data: dict[str, Any]) -> list[Draft]:
    samples = data.get("samples")
    if not isinstance(samples, list) or not samples:
        status = data.get("status")
        raise TranscriptError(
            f"{name}:1: an Inspect AI eval log with no samples (status {status!r}); nothing to import"
        )
    drafts = [read_sample(name, s, f"sample {i + 1}") for i, s in enumerate(samples)]
    _eval_options(drafts, data.get("eval"))
    return drafts


def _eval_options(drafts: list[Draft], eval_info: Any) -> None:
    if not isinstance(eval_info, dict):
        return
    for draft in drafts:
        for key in ("task", "model"):
            if isinstance(eval_info.get(key), str):
                draft.options.setdefault(key, eval_info[key])


def _sample_order(name: str) -> tuple[int, str]:
    m = re.match(r"samples/(\d+)_epoch_(\d+)\.json$", name)
    return (int(m.group(1)) * 1000 + int(m.group(2)), name) if m else (1 << 60, name)


def _unpacked(name: str, archive: zipfile.ZipFile, member: str) -> bytes:
    """A member's bytes; one longer than the line cap is refused after unpacking one byte
    over it (a member is one line of packed JSON, and kilobytes of zip unpack to gigabytes)."""
    with archive.open(member) as stream:
        raw = stream.read(MAX_LINE_BYTES + 1)
    if len(raw) > MAX_LINE_BYTES:
        raise TranscriptError(f"{name}: {member} in the archive is longer than {MAX_LINE_BYTES >> 20} MiB; not read")
    return raw


def _check_unpacked_size(name: str, archive: zipfile.ZipFile, members: list[str], packed: int) -> None:
    """Refuse, before unpacking anything, samples that together unpack to more than
    MAX_UNPACK_RATIO times the archive (and over MIN_UNPACK_CAP): JSON packs about 15:1, a zip
    bomb thousands to one, and many members each under the line cap still add up to gigabytes.
    The sizes the archive declares bound what zipfile unpacks (a member longer than it says
    fails its CRC check)."""
    declared = sum(archive.getinfo(m).file_size for m in members)
    cap = max(MIN_UNPACK_CAP, MAX_UNPACK_RATIO * packed)
    if declared > cap:
        raise TranscriptError(
            f"{name}: the samples in the archive unpack to {declared >> 20:,} MiB, over {MAX_UNPACK_RATIO} times "
            f"the archive's {packed:,} bytes (a zip bomb?); not read"
        )


def read_eval_zip(name: str, data: bytes) -> list[Draft]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.namelist()
    except Exception as exc:  # a damaged archive fails in many ways (zlib, struct, EOF...)
        raise TranscriptError(f"{name}:1: a zip archive that cannot be opened ({exc})") from None
    samples = sorted((m for m in members if m.startswith("samples/") and m.endswith(".json")), key=_sample_order)
    if "header.json" not in members and not samples:
        shown = ", ".join(members[:5]) + ("…" if len(members) > 5 else "")
        raise TranscriptError(
            f"{name}:1: a zip archive ({len(members)} files: {shown or 'none'}), not an Inspect AI .eval log "
            "(expected header.json and samples/*.json)"
        )
    if not samples:
        raise TranscriptError(f"{name}: an Inspect AI .eval log with no samples; nothing to import")
    _check_unpacked_size(name, archive, samples, len(data))
    drafts = []
    for member in samples:
        try:
            sample = loads(_unpacked(name, archive, member))
        except TranscriptError:
            raise
        except Exception as exc:  # a damaged member: zlib, CRC, encryption, JSON...
            raise TranscriptError(f"{name}: {member} in the archive cannot be read ({type(exc).__name__}: {exc})") from None
        drafts.append(read_sample(name, sample, member))
    try:
        header = loads(_unpacked(name, archive, "header.json")) if "header.json" in members else {}
    except TranscriptError:
        raise
    except Exception:  # the header only adds the task and model names
        header = {}
    _eval_options(drafts, header.get("eval") if isinstance(header, dict) else None)
    return drafts
