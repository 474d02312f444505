"""Open runs written by other tools as agent-tui transcripts.

One module per format, each detected from the content (`detect`):

| format | module | what |
| --- | --- | --- |
| jsonl | (engine.stored.transcript) | agent-tui's own transcript |
| chat | chat | OpenAI chat messages: a list, {"messages"}, a request body, a request + response, fine-tune JSONL |
| claude-code | claude_code | Claude Code session JSONL |
| codex | codex | Codex CLI rollout JSONL |
| gemini-cli | gemini_cli | Gemini CLI chats (JSONL; one JSON document in older versions) |
| opencode | opencode | opencode sessions as `opencode export` writes them |
| swe-agent, mini-swe-agent | swe_agent | SWE-agent .traj, mini-swe-agent trajectories |
| inspect | inspect_log | Inspect AI eval logs (.json, .eval zip), one run per sample |
| trace, react, langchain | react | text traces: the seeds', the ReAct paper's numbered ones (HotpotQA's Question:, FEVER's Claim:), LangChain's |
| alfworld | alfworld | ALFWorld text games as the ReAct paper's prompts write them (`Your task is to:`, `> command`, the game's reply) |

An import is a Header with scenario "imported" (the tools declared or seen in
the calls, no budget) and ordinary events plus `note` events (user messages,
system prompts, sub-agent work, unmapped parts kept raw). Nothing is dropped
silently: what cannot be mapped is an `unrecognised` note, counted in one
warning line. Bad input raises TranscriptError naming the file, the line,
what was found there and the formats tried.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from engine.core.collector import collector_paused
from engine.core.text import with_article
from engine.stored.importers.formats import FORMAT_NAMES, IMPORTED, TEXT_FORMATS, ZIP_MAGIC, Sniffed, starts_with_header
from engine.stored.reader import as_utf8, run_bytes, run_spans
from engine.stored.runs import choose, chosen_run, others_warning, run_id
from engine.stored.transcript import Transcript, TranscriptError, read_bytes, read_from_bytes

if TYPE_CHECKING:
    from engine.stored.importers.build import Draft, Made

FORMATS: tuple[str, ...] = ("auto", *FORMAT_NAMES)
__all__ = ["FORMATS", "FORMAT_NAMES", "IMPORTED", "detect_format", "load_any", "load_runs", "made_runs", "runs_from_bytes"]


def detect_format(name: str, text: str) -> str:
    """The format name of `text` (one of FORMATS but 'auto'); TranscriptError when it is none."""
    from engine.stored.importers.detect import sniff

    return sniff(name, text.encode("utf-8")).fmt


_TEXT_TRACES = ("trace", "react", "langchain")


def _forced(name: str, data: bytes, fmt: str) -> Sniffed:
    """The file read as `fmt`: refused, naming both, when its content is plainly another format
    (a valid chat file given as a Codex rollout); read as `fmt` when detection finds that format
    or none (its JSON parsed once, if it is one document)."""
    from engine.core.jsontext import loads
    from engine.stored.importers.detect import decode

    detected = _detected_as(name, data, fmt)
    if fmt == "jsonl":
        return Sniffed(fmt)
    if detected is not None and detected.fmt == fmt and detected.text:
        return detected
    text = decode(name, data)
    try:
        document = loads(text) if fmt not in TEXT_FORMATS else None
    except (json.JSONDecodeError, RecursionError):
        document = None
    return Sniffed(fmt, text, document=document)


def _detected_as(name: str, data: bytes, fmt: str) -> Sniffed | None:
    """What detection finds in a file given as `fmt` (None: nothing); TranscriptError naming
    both formats when it is another one (a text trace's dialects count as one)."""
    from engine.stored.importers.detect import sniff

    try:
        detected = sniff(name, data)
    except TranscriptError:
        return None
    if detected.fmt != fmt and not (detected.fmt in _TEXT_TRACES and fmt in _TEXT_TRACES):
        raise TranscriptError(
            f"{name}:{_first_line(data)}: not {with_article(FORMAT_NAMES[fmt])}; it reads as {FORMAT_NAMES[detected.fmt]} "
            f"(format {detected.fmt}, found without naming a format)"
        )
    return detected


def _first_line(data: bytes) -> int:
    """The number of the first line that is not blank (where a format shows)."""
    stripped = data.lstrip()
    return data[: len(data) - len(stripped)].count(b"\n") + 1




def _document(name: str, sniffed: Sniffed) -> object:
    from engine.core.jsontext import loads

    if sniffed.document is not None:
        return sniffed.document
    try:
        return loads(sniffed.text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"{name}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise TranscriptError(f"{name}: not JSON (too deeply nested)") from None


def _drafts(name: str, data: bytes, sniffed: Sniffed) -> list[Draft]:
    """The runs of a file of another tool's format, each as a Draft (its readers are imported here)."""
    from engine.stored.importers.alfworld import read_alfworld
    from engine.stored.importers.chat import read_chat, read_chat_lines
    from engine.stored.importers.claude_code import read_claude_code
    from engine.stored.importers.codex import read_codex
    from engine.stored.importers.build import found
    from engine.stored.importers.detect import json_rows
    from engine.stored.importers.gemini_cli import read_gemini_cli
    from engine.stored.importers.inspect_log import read_eval_zip, read_inspect_json, read_inspect_messages
    from engine.stored.importers.opencode import read_opencode
    from engine.stored.importers.react import read_text
    from engine.stored.importers.swe_agent import read_mini, read_swe_agent

    fmt = sniffed.fmt
    if data.startswith(ZIP_MAGIC):
        if fmt == "inspect":
            return read_eval_zip(name, data)
        raise TranscriptError(f"{name}:1: a zip archive, not a {FORMAT_NAMES.get(fmt, fmt)}")
    text = sniffed.text
    if not text or text.isspace():  # (not `strip`: a copy of the whole text)
        raise TranscriptError(f"{name}: the file is empty")
    if fmt == "alfworld":
        return read_alfworld(name, text)
    if fmt in TEXT_FORMATS:
        return read_text(name, text, fmt)
    if fmt in ("claude-code", "codex") or (fmt == "gemini-cli" and sniffed.document is None):
        def read(fast: bool) -> list[Draft]:
            def rows() -> Iterator[tuple[int, Any]]:
                return json_rows(name, text, strict=False, lines=sniffed.lines, fast=fast)

            if fmt == "gemini-cli":
                return read_gemini_cli(name, rows)  # which may read them twice
            return (read_claude_code if fmt == "claude-code" else read_codex)(name, rows())

        return _checked(text, read)
    if fmt == "chat" and sniffed.document is None:
        return _checked(text, lambda fast: read_chat_lines(name, list(json_rows(name, text, lines=sniffed.lines, fast=fast))))
    document = _document(name, sniffed)
    if fmt == "chat":
        return read_chat(name, document, text)
    if fmt == "mini-swe-agent":
        return read_mini(name, document)
    if fmt == "gemini-cli":
        return read_gemini_cli(name, lambda: [(1, document)])
    if fmt == "opencode":
        return read_opencode(name, document)
    if fmt == "inspect" and isinstance(document, list):
        return read_inspect_messages(name, document)
    if not isinstance(document, dict):
        raise TranscriptError(f"{name}:1: a {FORMAT_NAMES[fmt]} is a JSON object; got {found(document)}")
    if fmt == "swe-agent":
        return read_swe_agent(name, document)
    return read_inspect_json(name, document)


def _checked(text: str, read: Callable[[bool], list[Draft]]) -> list[Draft]:
    """`read(fast)` of a file of JSON lines, its lines read fast (`fast`) while the text is checked
    `plain` aside (`PlainCheck`), and read again exactly if it is not: what it read fast, or an
    error it met, may be the fast reading's alone."""
    from engine.core.jsontext import PlainCheck

    with PlainCheck(text) as check:
        if not check.aside:
            return read(check.hoped)
        drafts: list[Draft] | None = None
        try:
            drafts = read(True)
        except TranscriptError:
            if check.holds():
                raise
        if drafts is not None and check.holds():
            return drafts
        drafts = None
    return read(False)


def _sniffed(name: str, data: bytes, fmt: str) -> tuple[bytes, Sniffed]:
    """The file's bytes as UTF-8 and what they are (`fmt`, or what detection finds)."""
    if fmt not in FORMATS:
        raise TranscriptError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    data = as_utf8(name, data)  # bytes not read by `read_bytes`: UTF-16 decoded as a file's would be
    return data, _sniff(name, data, fmt)


def _sniff(name: str, data: bytes, fmt: str) -> Sniffed:
    if fmt == "auto":
        from engine.stored.importers.detect import sniff

        return sniff(name, data)
    if data.startswith(ZIP_MAGIC):
        return Sniffed(fmt)
    return _forced(name, data, fmt)


def _own_runs(name: str, data: bytes, strict: bool) -> list[Transcript]:
    spans = run_spans(data)
    if len(spans) == 1:
        return [read_from_bytes(name, data, strict=strict)]
    runs = []
    for span in spans:
        run, lines_before = run_bytes(data, span)
        runs.append(read_from_bytes(name, run, strict=strict, lines_before=lines_before))
    return runs


def _made(name: str, data: bytes, sniffed: Sniffed, halves: bool = False) -> list[Made]:
    """The runs of a file of another tool's format, each made (see `Made`); `halves`: a long Gemini
    CLI chat by two processes, if it can be (`halves.halved`)."""
    if halves and sniffed.fmt == "gemini-cli" and sniffed.document is None and sniffed.text and not data.startswith(ZIP_MAGIC):
        from engine.stored.importers.halves import halved

        with collector_paused():
            one = halved(name, sniffed.text, sniffed.lines)
        if one is not None:
            return [one]
    made: list[Made] = []
    empty: list[str] = []
    with collector_paused():  # a long file is hundreds of thousands of objects that live on (see `collector_paused`)
        drafts = _drafts(name, data, sniffed)
        for number, draft in enumerate(drafts, 1):
            if len(drafts) > 1 and not draft.steps():
                empty.append(str(number))
                continue
            made.append(draft.made())
    if not made:
        raise TranscriptError(f"{name}: none of the {len(drafts)} runs has a step; expected at least one assistant turn")
    if empty:
        made[0].warnings.append(f"{name}: run{'s' if len(empty) > 1 else ''} {', '.join(empty)} of {len(drafts)} "
                                "had no step and were not imported")
    return made


def made_runs(name: str, data: bytes, fmt: str = "auto", *, halves: bool = False) -> list[Made]:
    """Every run in a file's bytes, in order, each with its events made as they are taken (what
    `agent-tui import` writes one at a time; agent-tui's own runs are read whole). `halves`: a
    long Gemini CLI chat is made by two processes where it can be (`halves`), its second half's
    lines given by its `Made.tail`, for a writer."""
    from engine.stored.importers.build import Made

    data, sniffed = _sniffed(name, data, fmt)
    if sniffed.fmt == "jsonl":
        return [Made(run.header, run.warnings, iter(run.events), sum(1 for e in run.events if e.type == "decision"))
                for run in _own_runs(name, data, strict=True)]
    return _made(name, data, sniffed, halves)


def runs_from_bytes(name: str, data: bytes, fmt: str = "auto", *, strict: bool = True) -> list[Transcript]:
    """Every run in a file's bytes, in order (one for most formats)."""
    data, sniffed = _sniffed(name, data, fmt)
    if sniffed.fmt == "jsonl":
        return _own_runs(name, data, strict)
    made = _made(name, data, sniffed)
    with collector_paused():
        return [Transcript(path=Path(name), header=m.header, events=list(m.events), warnings=m.warnings) for m in made]


def load_runs(path: str | Path, format: str = "auto", *, strict: bool = True) -> list[Transcript]:
    """Every run in a file (an Inspect log with three samples is three runs)."""
    p = Path(path)
    runs = runs_from_bytes(str(p), read_bytes(p), format, strict=strict)
    for run in runs:
        run.path = p
    return runs


def load_any(path: str | Path, format: str = "auto", *, strict: bool = True, run: str | int | None = None, lazy: bool = False) -> Transcript:
    """A file's run as a Transcript: the one `run` names (its number from 1, or its id;
    see `engine.stored.runs`), else the first, with a warning naming the rest. `lazy`: an
    agent-tui file's events parsed when read (`read_from_bytes`)."""
    p = Path(path)
    data = read_bytes(p)
    if format == "jsonl" and not starts_with_header(data):
        _detected_as(str(p), data, format)
    if format == "jsonl" or (format == "auto" and starts_with_header(data)):  # only the chosen run is read
        one, lines_before, warnings, count = chosen_run(str(p), data, run)
        del data
        transcript = read_from_bytes(str(p), one, strict=strict, lines_before=lines_before, lazy=lazy)
        transcript.path, transcript.run_count = p, count
        transcript.warnings.extend(warnings)
        return transcript
    runs = runs_from_bytes(str(p), data, format, strict=strict)
    for each in runs:
        each.path = p
    chosen = runs[choose(str(path), len(runs), run, lambda: [run_id(r.header) for r in runs])]
    chosen.run_count = len(runs)
    if len(runs) > 1 and run is None:
        chosen.warnings.append(others_warning(str(path), len(runs)))
    return chosen
