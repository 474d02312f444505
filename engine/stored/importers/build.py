"""What every importer fills in (a Draft of steps and notes) and how it becomes a run.

An importer reads its format into a `Draft`: the task, the system prompt,
steps (a thought, actions, their observations, maybe an answer) and notes
(user messages, sub-agent work, parts it could not map) in the order of the
source. `Draft.made()` turns that into a Header and ordinary events, with
token usage estimated as the engine does for scripted policies, so replay,
show and export treat an import like any run; the events are made one at a
time as they are taken (`agent-tui import` writes each as it comes), and
`Draft.build()` holds them all in a Transcript.
"""

from __future__ import annotations

import json
import re
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Iterator, Union

from engine.core.text import one_line
from engine.core.events import Action, DecisionMade, Event, Header, Note, NoteKind, Observed, RunEnded, ToolInfo, Usage
from engine.core.jsonvalues import MAX_DEPTH, too_deep
from engine.core.state import RunState, added_words, estimate_tokens, written_words
from engine.stored.importers.formats import IMPORTED
from engine.core.jsontext import loads
from engine.stored.transcript import Transcript, TranscriptError, TranscriptWriter

ANSWER_TOOLS = frozenset({"final_result", "final_answer"})
"""Tools whose call is the run's structured answer (pydantic-ai's `final_result`, smolagents' `final_answer`)."""
_NO_SUCH_TOOL = re.compile(r"tool '?([\w.-]+)'? (?:does not exist|not found)|unknown tool|no such tool", re.I)
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}


def preview(value: Any, limit: int = 60) -> str:
    """A short one-line picture of what was found, for messages."""
    if isinstance(value, (dict, list)):
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
    else:
        text = str(value)
    return one_line(text, limit)


def found(obj: Any) -> str:
    """What a JSON object says it is, e.g. `"type": "session_meta"` or `keys "id", "input"`."""
    if isinstance(obj, dict):
        for key in ("type", "role", "record_type"):
            if isinstance(obj.get(key), str):
                return f'"{key}": "{preview(obj[key], 40)}"'
        keys = ", ".join(f'"{preview(k, 20)}"' for k in list(obj)[:4])
        return f"an object with keys {keys}" if keys else "an empty object"
    if isinstance(obj, list):
        return f"a list of {len(obj)} items"
    return f"{type(obj).__name__} {preview(obj, 40)!r}"


_MEDIA = frozenset({"image", "image_url", "input_image", "audio", "input_audio", "video", "document", "file"})


def _media(part: dict[str, Any]) -> str:
    """An image (or other media) block as words: its kind and type, not kilobytes of base64."""
    source = part.get("source") if isinstance(part.get("source"), dict) else {}
    media_type = part.get("media_type") or part.get("mime_type") or source.get("media_type")
    return f"({part['type'].replace('input_', '').replace('_url', '')}{', ' + str(media_type) if isinstance(media_type, str) else ''})"


def text_of(content: Any, depth: int = 0) -> str:
    """The text of a message's content: a string, or a list of text blocks (a block's own list of
    content read too, a few levels down); media blocks are named."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                for key in ("text", "reasoning", "thinking", "output", "content"):
                    if isinstance(part.get(key), str):
                        parts.append(part[key])
                        break
                else:
                    if isinstance(part.get("type"), str) and part["type"] in _MEDIA:
                        parts.append(_media(part))
                    elif isinstance(part.get("content"), list) and depth < 4:
                        parts.append(text_of(part["content"], depth + 1))
                    else:
                        parts.append(preview(part, 200))
            else:
                parts.append(preview(part, 2000))
        return "\n".join(parts)
    if isinstance(content, dict):
        return text_of([content], depth)
    return preview(content, 2000)


def arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as a dict, from a dict or a JSON string; (args, error)."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, str):
        try:
            value = loads(raw)
        except (json.JSONDecodeError, RecursionError):
            return {}, f"the arguments are not a JSON object: {raw[:200]}"
        if isinstance(value, dict):
            return value, None
    return {}, f"the arguments are not a JSON object: {preview(raw, 200)}"


def tool_calls(message: dict[str, Any]) -> list[Any]:
    """A message's `tool_calls` as a list: none when absent or empty, and one call written on its
    own (an object, not a list) as that call."""
    calls = message.get("tool_calls") or []
    return calls if isinstance(calls, list) else [calls]


def answer_text(args: dict[str, Any]) -> str:
    """A structured answer's text: its one value when it has one, else the JSON."""
    if len(args) == 1:
        (value,) = args.values()
        if isinstance(value, str):
            return value
    try:
        return json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return repr(args)



def _kind_words(what: str, where: list[str]) -> str:
    """`3 × what (line 2, line 5, line 9)`: one kind of unmapped part, the first three places it stands."""
    places = list(dict.fromkeys(w for w in where if w))
    shown = ", ".join(places[:3]) + (", …" if len(places) > 3 else "")
    return f"{len(where)} × {what}" + (f" ({shown})" if shown else "")

def _joined(name: str) -> property:
    """A text kept as the list of its parts in the attribute `name` (None: empty): read joined by
    line ends, set as one part."""

    def get(step: Any) -> str:
        parts = getattr(step, name)
        return "\n".join(parts) if parts else ""

    def put(step: Any, text: str) -> None:
        setattr(step, name, [text] if text else None)

    return property(get, put)


def _more(parts: list[str] | None, text: str) -> list[str]:
    """`parts` with `text` added (a new list for None)."""
    if parts is None:
        return [text]
    parts.append(text)
    return parts


@dataclass(slots=True)
class Step:
    """One step as an importer fills it. Its thought, reply and raw text grow a part at a time
    (`add_thought`, `add_reply`, `add_raw`), kept as lists and joined when read: a file that adds
    300,000 lines to one step costs time linear in them, not their square."""

    thoughts: list[str] | None = None
    """The thought's parts (None: none yet; each field made at its first use, as most steps
    have no reply and no raw text)."""
    actions: list[Action] = field(default_factory=list)
    observations: list[tuple[int, str, bool | None]] = field(default_factory=list)
    answer: str | None = None
    raws: list[str] | None = None
    """The raw text's parts (None: no raw text)."""
    replies: list[str] | None = None
    """What the assistant said to the user: the answer when the step is the last one, else part of the thought."""
    notes: list[Note] = field(default_factory=list)
    """Notes nested under this step (a sub-agent's work), shown between its actions and their results."""
    usage: Usage | None = None
    """The tokens the source recorded for this turn; None: estimated as the engine does."""
    observed: set[int] | None = None
    """The indexes of the actions `observations` holds a result of (None: none)."""
    settled: int = 0
    """No action before this index is without a result (`first_open`)."""

    thought = _joined("thoughts")
    reply = _joined("replies")

    @property
    def raw(self) -> str | None:
        return None if self.raws is None else "\n".join(self.raws)

    @raw.setter
    def raw(self, text: str | None) -> None:
        self.raws = None if text is None else [text]

    def record_usage(self, input_tokens: Any, output_tokens: Any) -> None:
        """The source's token counts for this turn, when both are plausible counts (else left estimated)."""
        if type(input_tokens) is int and type(output_tokens) is int:  # as JSON gives them (`_count`'s first case, for both)
            plausible = 0 <= input_tokens <= MAX_TOKENS and 0 <= output_tokens <= MAX_TOKENS
        else:
            plausible = _count(input_tokens) and _count(output_tokens)
        if plausible:
            self.usage = Usage.trusted(input_tokens=input_tokens, output_tokens=output_tokens, estimated=False)

    def answered(self, index: int) -> bool:
        """Whether the action at `index` has a result."""
        return self.observed is not None and index in self.observed

    def first_open(self) -> int | None:
        """The first action without a result (None: none), found from the last one found: results
        are only added and actions only appended, so it never moves back."""
        index, count, observed = self.settled, len(self.actions), self.observed or ()
        while index < count and index in observed:
            index += 1
        self.settled = index
        return index if index < count else None

    def all_observed(self) -> bool:
        return self.first_open() is None

    def add_thought(self, text: str) -> None:
        text = text.strip()
        if text:
            self.thoughts = _more(self.thoughts, text)

    def add_reply(self, text: str) -> None:
        text = text.strip()
        if text:
            self.replies = _more(self.replies, text)

    def add_raw(self, text: str) -> None:
        """A line more of the raw text."""
        self.raws = _more(self.raws, text)

    def observe(self, index: int, text: str, error: bool | None = None) -> None:
        self.observations.append((index, text, error))
        if self.observed is None:
            self.observed = {index}
        else:
            self.observed.add(index)


@dataclass(slots=True)
class NoteItem:
    kind: NoteKind
    text: str
    source: str = ""


Item = Union[Step, NoteItem]


class _OpenCalls:
    """A draft's calls in order (by step, then within it), and by tool, for the results that name
    no call (`Draft.result` without an id): each lookup takes the oldest call not yet answered,
    dropping answered ones from the front, so that N such results cost time linear in N (a scan
    of every step for each took 47 s for 10,000). Calls are added to the newest step (every
    importer does so): each lookup first takes in the steps added since the last one and the
    calls added since to the step that was newest then."""

    def __init__(self) -> None:
        self.items_seen = 0
        self.newest: Step | None = None
        self.newest_seen = 0
        self.every: deque[tuple[Step, int]] = deque()
        self.by_tool: dict[str, deque[tuple[Step, int]]] = {}

    def _take(self, step: Step, start: int) -> None:
        for index in range(start, len(step.actions)):
            self.every.append((step, index))
            self.by_tool.setdefault(step.actions[index].tool, deque()).append((step, index))

    def oldest(self, items: list[Item], name: Any) -> tuple[Step, int] | None:
        if self.newest is not None:
            self._take(self.newest, self.newest_seen)
        for item in items[self.items_seen:]:
            if type(item) is Step:
                self._take(item, 0)
                self.newest = item
        self.items_seen = len(items)
        if self.newest is not None:
            self.newest_seen = len(self.newest.actions)
        queue = self.every if name is None else self.by_tool.get(name)
        while queue:
            step, index = queue[0]
            if not step.answered(index):
                return step, index
            queue.popleft()
        return None
Looked = tuple[list[Action], bool, list[tuple[int, str, bool, bool]]]
"""A step's calls as written (each with an id), whether each is an `Action`, and its results
(index, text, error, whether it says the tool does not exist), from `Draft.made`'s first look."""


@dataclass(slots=True)
class Made:
    """A run an import made: its header, its warnings (one line each), its events, made as they are
    taken (once), and how many steps they hold."""

    header: Header
    warnings: list[str]
    events: Iterator[Event]
    steps: int
    tail: Callable[[TranscriptWriter], None] | None = None
    """Writes the lines of the events after these, made and serialised elsewhere (`halves`), once
    these are written."""


@dataclass
class Draft:
    """One run as an importer read it."""

    name: str
    fmt: str
    task_text: str | None = None
    system: list[str] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    declared: dict[str, ToolInfo] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    unmapped: dict[str, list[str]] = field(default_factory=dict)  # what -> where, in the order first met
    skipped: Counter[str] = field(default_factory=Counter)
    end: RunEnded | None = None
    final_text_is_answer: bool = True
    calls: dict[str, list[tuple[Step, int]]] = field(default_factory=dict)
    """Open calls by id, oldest first: ids are not always unique (some providers number each turn's calls from 0)."""
    made_steps: int = 0
    """How many steps `new_step` made (every step is made there): whether there is one, without listing the items."""
    reached: set[str | None] | None = None
    """The call ids this run's results looked for (None in it: a result naming no call), when it
    is the later part of a file cut in two (`engine.stored.importers.halves`); None: not kept."""
    _open: _OpenCalls | None = field(default=None, repr=False, compare=False)
    """Every call in order, for results that name no call (made at the first of them)."""

    # -- filling -------------------------------------------------------------

    def steps(self) -> list[Step]:
        return [item for item in self.items if isinstance(item, Step)]

    def last_step(self) -> Step | None:
        for item in reversed(self.items):
            if isinstance(item, Step):
                return item
        return None

    def new_step(self, thought: str = "") -> Step:
        self.made_steps += 1
        step = Step()
        if thought:
            step.add_thought(thought)
        self.items.append(step)
        return step

    def note(self, kind: NoteKind, text: str, source: str = "") -> None:
        self.items.append(NoteItem(kind, text, source))

    def user(self, text: str, source: str = "") -> None:
        """A user message: the task when it is the first thing said, else a note."""
        if self.task_text is None and self.made_steps == 0:  # no step yet (`new_step` counts them)
            self.task_text = text
        else:
            self.note("user", text, source)

    def unrecognised(self, what: str, raw: Any, source: str = "") -> None:
        """A part the importer cannot map: kept raw as a note, and counted for the warning."""
        text = raw if isinstance(raw, str) else preview(raw, 4000)
        self.note("unrecognised", f"{what}: {text}" if text else what, source)
        self.unmapped.setdefault(what, []).append(source)

    def objects(self, items: list[Any], label: str, what: str = "a message") -> Iterator[tuple[str, dict[str, Any]]]:
        """(where, item) for each object of `items`; anything else is kept as an unrecognised note."""
        for i, item in enumerate(items):
            source = f"{label} {i + 1}"
            if isinstance(item, dict):
                yield source, item
            else:
                self.unrecognised(f"{found(item)} where {what} was expected", item, source)

    def call(self, step: Step, action: Action) -> int:
        """Add a tool call to `step`; results find it by its id."""
        step.actions.append(action)
        index = len(step.actions) - 1
        if action.call_id:
            self.calls.setdefault(action.call_id, []).append((step, index))
        return index

    def result(self, call_id: Any, text: str, error: bool | None = None, source: str = "", name: Any = None) -> None:
        """The result of the call with this id (or, without an id, the oldest open call)."""
        waiting = self.calls.get(call_id) if isinstance(call_id, str) else None
        if self.reached is not None:
            self.reached.add(call_id if isinstance(call_id, str) else None)
        target = waiting.pop(0) if waiting else None
        if target is None and call_id is None:
            target = self._oldest_open(name)
        if target is None:
            self.unrecognised(f"a tool result for call {preview(call_id or name, 40)!r} that no earlier message made", text, source)
            return
        step, index = target
        step.observe(index, text, error)

    def answer(self, step: Step, index: int, text: str, error: bool | None = None) -> None:
        """The result the call's own record holds (opencode's tool part, Gemini CLI's call): that
        call's, not the oldest open call of its id, which may be an earlier one; and the call is
        open no more."""
        step.observe(index, text, error)
        call_id = step.actions[index].call_id
        waiting = self.calls.get(call_id) if call_id else None
        if waiting:
            for at in range(len(waiting) - 1, -1, -1):  # the entry `call` added for it: the last, as a rule
                if waiting[at][0] is step and waiting[at][1] == index:
                    del waiting[at]
                    break

    def _oldest_open(self, name: Any) -> tuple[Step, int] | None:
        if self._open is None:
            self._open = _OpenCalls()
        return self._open.oldest(self.items, name)

    def declare(self, tools: Any) -> None:
        """Tools from a request body (`tools` or `functions`), with their JSON-schema parameters."""
        if not isinstance(tools, list):
            return
        for tool in tools:
            fn = tool.get("function", tool) if isinstance(tool, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                continue
            schema = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {}
            props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
            required = schema.get("required") if isinstance(schema.get("required"), list) else []
            params = [
                {"name": str(k), "type": str(v.get("type", "string")) if isinstance(v, dict) else "string", "required": k in required}
                for k, v in props.items()
            ]
            description = fn.get("description") if isinstance(fn.get("description"), str) else ""
            self.declared[fn["name"]] = ToolInfo(name=fn["name"], description=description, parameters=params)

    # -- building ------------------------------------------------------------

    def warning(self) -> str | None:
        """One line on what could not be mapped or was skipped, or None."""
        parts = []
        if self.unmapped:
            total = sum(len(where) for where in self.unmapped.values())
            kinds = [_kind_words(what, where) for what, where in list(self.unmapped.items())[:3]]
            if len(self.unmapped) > 3:
                kinds.append(f"{len(self.unmapped) - 3} more kind{'s' if len(self.unmapped) > 4 else ''}")
            parts.append(f"{total} part{'s' if total != 1 else ''} could not be mapped and {'are' if total != 1 else 'is'} "
                         f"kept as 'unrecognised' notes: {'; '.join(kinds)}")
        if self.skipped:
            total = sum(self.skipped.values())
            kinds = ", ".join(f"{k} ×{n}" for k, n in sorted(self.skipped.items()))
            parts.append(f"{total} bookkeeping line{'s' if total != 1 else ''} without a message {'were' if total != 1 else 'was'} skipped ({kinds})")
        return f"{self.name}: " + "; ".join(parts) if parts else None

    def build(self) -> Transcript:
        made = self.made()
        return Transcript(path=Path(self.name), header=made.header, events=list(made.events), warnings=made.warnings)

    def made(self) -> Made:
        """The run's header and warnings, and its events made one at a time as they are taken
        (an import writes each as it comes: none is kept once written). The header, first in the
        file, names the tools the calls show, so the calls and results are looked at first."""
        steps = self.steps()
        if not steps:
            raise TranscriptError(f"{self.name}: {self._nothing()}")
        self.settle(steps)
        look = Look(steps)
        warning = self.warning()
        events = self.events(self.items, look.looked, estimated=look.estimated)
        return Made(self.header(look), [warning] if warning else [], events, len(steps))

    def header(self, look: Look) -> Header:
        """The run's header: the tools declared, then those the calls show (`look`)."""
        tools = dict(self.declared)
        for name, params in look.seen.items():
            if name not in tools and not look.missing.get(name, False):
                tools[name] = ToolInfo(name=name, parameters=list(params.values()))
        options: dict[str, Any] = {"format": self.fmt, "source": self.name, **self.options}
        if self.system:
            options["system_prompt"] = "\n\n".join(self.system)
        return Header(scenario=IMPORTED, task=self.fmt, task_text=self.task_text or "", options=options,
                      tools=list(tools.values()), policy=IMPORTED, repetition_threshold=None)

    def events(self, items: list[Item], looked: list[Looked], *, estimated: int, number: int = 0, context_words: int | None = None,
               ended: RunEnded | None = None, final: bool = True) -> Generator[Event, None, tuple[int, RunEnded | None]]:
        """The events of `items` (the steps after the first `number`, each looked at in `looked`),
        the context's words counted (as the fold counts them, from `context_words`, else from the
        task's) up to step `estimated`, the last whose usage is estimated from them: after it no
        count is read. `ended`: the end an earlier step's answer made; `final`: the run's end
        follows (else the words counted and the end so far are returned, for the items after)."""
        if context_words is None:
            stub = Header(scenario=IMPORTED, task=self.fmt, task_text=self.task_text or "", policy=IMPORTED)
            context_words = RunState.start(stub).context_words  # and what each event adds (`added_words`): all the fold is asked here
        looks = iter(looked)
        for item in items:
            if type(item) is NoteItem:
                note = Note(step=number, kind=item.kind, text=item.text, source=item.source)
                if number < estimated:
                    context_words += added_words(note)
                yield note
                continue
            actions, plain, results = next(looks)
            number += 1
            counted = number < estimated  # what this step adds is read by a later one
            thoughts, replies, raws, answer = item.thoughts, item.replies, item.raws, item.answer  # the parts: no property call
            said = thoughts + replies if thoughts and replies else thoughts or replies
            thought = ("\n".join(said) if len(said) > 1 else said[0]) if said else ""
            raw = None if raws is None else "\n".join(raws)
            usage = item.usage
            if usage is None:
                words = written_words(raw, thought, actions, answer)
                usage = Usage.trusted(input_tokens=estimate_tokens(context_words), output_tokens=estimate_tokens(words))
            elif counted:
                words = written_words(raw, thought, actions, answer)
            # built as the engine builds its own (`trusted`) when every value read has its field's type, else validated
            if plain and type(thought) is str and (answer is None or type(answer) is str) and (raw is None or type(raw) is str):
                yield DecisionMade.trusted(step=number, policy=IMPORTED, thought=thought, actions=actions, answer=answer, raw=raw, usage=usage)
            else:
                yield DecisionMade(step=number, policy=IMPORTED, thought=thought, actions=actions, answer=answer, raw=raw, usage=usage)
            if counted:
                context_words += words
            for nested in item.notes:
                note = nested.model_copy(update={"step": number})
                if counted:
                    context_words += added_words(note)
                yield note
            count = len(actions)
            for index, text, error, unknown in results:
                action = actions[index] if index < count else None
                tool = action.tool if action else None
                executed = tool is not None and not unknown
                if type(index) is int and type(text) is str and type(error) is bool:
                    # the call's own arguments: the events are frozen, and the fold shares them the same way
                    yield Observed.trusted(step=number, index=index, tool=tool, args=action.args if action else {},
                                           text=text, error=error, executed=executed)
                    if counted:
                        context_words += len(text.split())  # `added_words` of an observation
                else:
                    observed = Observed(step=number, index=index, tool=tool, args=dict(action.args) if action else {},
                                        text=text, error=error, executed=executed)
                    if counted:
                        context_words += len(observed.text.split())
                    yield observed
            if answer is not None and ended is None:
                ended = answer_end(number, answer)
        if not final:
            return context_words, ended
        if self.end is not None:
            ended = self.end.model_copy(update={"step": number})
        if ended is not None:
            yield ended
        return context_words, ended

    def settle(self, steps: list[Step]) -> None:
        """The last step's plain text is the answer when nothing but notes of the source's own follow it."""
        last = steps[-1]
        if any(s.answer is not None for s in steps) or self.end is not None:
            return
        if self.user_note_after(last):
            return
        settle_answer(last, self.final_text_is_answer)

    def user_note_after(self, last: Step) -> bool:
        """Whether a user note follows `last`, or the first item equal to it (as `list.index` finds
        it, dataclasses comparing by value)."""
        users = self.user_notes()
        return bool(users) and stands_before(self.items, last, users[-1])

    def user_notes(self) -> list[int]:
        """Where the user notes stand among the items."""
        return [i for i, item in enumerate(self.items) if type(item) is NoteItem and item.kind == "user"]

    def _nothing(self) -> str:
        said = Counter(i.kind for i in self.items if isinstance(i, NoteItem))
        parts = (["a task"] if self.task_text else []) + [f"{n} {kind} note{'s' if n != 1 else ''}" for kind, n in sorted(said.items())]
        has = f"it has {', '.join(parts)} but" if parts else "it has"
        return f"no step could be read from this {self.fmt} log: {has} no assistant turn"


def settle_answer(last: Step, final_text_is_answer: bool) -> None:
    """The last step's answer, where no step has one and no user note follows it: a structured
    answer's call, else (`final_text_is_answer`) its plain text when it made no call."""
    if last.actions and len(last.actions) == 1 and last.actions[0].tool in ANSWER_TOOLS:
        last.answer = answer_text(last.actions[0].args)
    elif final_text_is_answer and not last.actions and last.reply:
        last.answer, last.reply = last.reply, ""
    elif final_text_is_answer and not last.actions and last.thought:
        last.answer, last.thought = last.thought, ""


def answer_end(number: int, answer: Any) -> RunEnded:
    """The run's end that the answer of step `number` makes (the first step with one)."""
    return RunEnded(outcome="answer", reason="final answer", step=number, answer=answer)


def stands_before(items: list[Item], last: Step, end: int) -> bool:
    """Whether `last`, or a step equal to it, stands among the first `end` items (only the steps
    of the same thought are compared: a step's comparison builds and compares all its fields)."""
    return any(item is last or (type(item) is Step and item.thought == last.thought and item == last) for item in items[:end])


class Look:
    """The first look at a run's steps, numbered from `first`, before its header is written: each
    step's calls as written (`looked`), the tools they show (`seen`: each tool's parameters by
    name; `missing`: whether each of its results says it does not exist) and the last step whose
    usage is estimated from the words before it (`estimated`, 0: none). `numbered`: a call without
    an id was given one from its step's number (so the look holds only for steps numbered so)."""

    __slots__ = ("looked", "seen", "missing", "estimated", "numbered")

    def __init__(self, steps: list[Step], first: int = 1) -> None:
        seen: dict[str, dict[str, dict[str, Any]]] = {}
        missing: dict[str, bool] = {}
        looked: list[Looked] = []
        estimated = 0
        numbered = False
        for number, item in enumerate(steps, first):
            actions = item.actions  # as they are when each has its id and can be written (the usual case)
            plain = True  # every call an Action (as `new_action` makes them), so the decision is built `trusted`
            for i, action in enumerate(actions):
                if not action.call_id or too_deep(action.args):
                    actions = [_writable(a if a.call_id else a.with_call_id(f"s{number}.{i}")) for i, a in enumerate(item.actions)]
                    numbered = numbered or not all(a.call_id for a in item.actions)
                    break
            for action in actions:
                if type(action) is not Action:
                    plain = False
                _infer(action, seen)
            if item.usage is None:
                estimated = number
            observations = item.observations if len(item.observations) < 2 else sorted(item.observations, key=_first)
            results = []
            for index, text, error in observations:
                head = text[:400]
                unknown = "tool" in head.lower() and _NO_SUCH_TOOL.search(head) is not None  # each wording says "tool"
                if error is None:
                    error = text.lstrip()[:5].lower().startswith("error") or unknown  # as of the whole text: each character lowers to one or more
                if index < len(actions):  # a tool is missing when each of its results says so
                    tool = actions[index].tool
                    if not unknown:
                        missing[tool] = False
                    elif tool not in missing:
                        missing[tool] = True
                results.append((index, text, error, unknown))
            looked.append((actions, plain, results))
        self.looked, self.seen, self.missing, self.estimated, self.numbered = looked, seen, missing, estimated, numbered

    def then(self, seen: dict[str, dict[str, dict[str, Any]]], missing: dict[str, bool]) -> None:
        """The tools of the steps after these (their `seen` and `missing`) added, as if looked at
        here in turn: a parameter is required when every call gave it, has the type of its first
        value, and a tool is missing when every result of it says so."""
        for tool, params in seen.items():
            mine = self.seen.get(tool)
            if mine is None:
                self.seen[tool] = params
                continue
            for name, param in mine.items():
                if name not in params or not params[name]["required"]:
                    param["required"] = False
            for name, param in params.items():
                if name not in mine:
                    mine[name] = {**param, "required": False}
        for tool, said in missing.items():
            self.missing[tool] = self.missing.get(tool, True) and said


MAX_TOKENS = 10**12
"""More tokens than any turn can have: a count above it is not believed."""


def _count(value: Any) -> bool:
    if type(value) is int:  # as JSON gives it
        return 0 <= value <= MAX_TOKENS
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


def new_action(*, tool: Any, args: Any, call_id: Any = None, args_error: Any = None) -> Action:
    """`Action(tool=..., args=..., call_id=..., args_error=...)`: built as the engine builds its own
    (`trusted`, without validation) when each value has its field's type (as read from JSON, the
    usual case), else validated (a value of another type converted or refused as pydantic does)."""
    if (type(tool) is str and type(args) is dict and (call_id is None or type(call_id) is str)
            and (args_error is None or type(args_error) is str)
            and (not args or set(map(type, args)) == _STR_ONLY)):
        return Action.trusted(tool=tool, args=args, call_id=call_id, args_error=args_error)
    return Action(tool=tool, args=args, call_id=call_id, args_error=args_error)


_STR_ONLY = frozenset({str})


def _first(observation: tuple[int, str, bool | None]) -> int:
    return observation[0]


def _writable(action: Action) -> Action:
    """A call whose arguments nest deeper than the engine takes (`engine.core.jsonvalues.MAX_DEPTH`;
    pydantic writes no event nested past about 250 levels) keeps them as JSON text, in its argument error."""
    if not too_deep(action.args):
        return action
    try:
        text = json.dumps(action.args, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = preview(action.args, 4000)
    return action.model_copy(update={"args": {}, "args_error": f"the arguments nest deeper than {MAX_DEPTH} levels: {text}"})


def _infer(action: Action, seen: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A tool as its calls show it, kept in `seen` (tool: parameters by name): every argument name
    seen, with the JSON type of its first value (required when every call gave it)."""
    params = seen.get(action.tool)
    args = action.args
    if params is None:
        seen[action.tool] = {key: {"name": key, "type": _JSON_TYPES.get(type(value), "string"), "required": True}
                             for key, value in args.items()}
        return
    for name, param in params.items():
        if name not in args:
            param["required"] = False
    for key, value in args.items():
        if key not in params:
            params[key] = {"name": key, "type": _JSON_TYPES.get(type(value), "string"), "required": False}
