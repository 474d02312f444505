"""ReAct text traces, one field a line, in three dialects.

- "trace": the seeds' format::

      Question: How many copies of Il Gattopardo are available?
      Thought: I need the total copies.
      Action: catalog[Il Gattopardo]          (or tool(key=value, ...))
      Observation: 5
      Final Answer: 2                         (or Answer: ...)

- "react": the ReAct paper's numbered fields (`Thought 1:`, `Action 1:
  Search[...]`, `Observation 1:`), a `Question:` or `Claim:` per run, and
  `Action N: Finish[answer]` as the answer.
- "langchain": LangChain's scratchpad, `Action: tool` then `Action Input: ...`
  (a JSON object, or text), and `Final Answer:` (or the conversational
  agent's `AI:`), as `verbose=True` prints it between `> Entering new ...
  chain...` and `> Finished chain.`. That console output is coloured: the
  colour codes are removed, and a tool's output printed in its colour with no
  `Observation:` label (LangChain 0.1 onwards) is read as the observation.

`Action: Finish[answer]` is the answer in every dialect (the ReAct paper's and
LangChain's docstore agent's).

Lines that start with no keyword continue the field above them; lines before
the first field (the FEVER prompt's instruction) are every run's system
prompt. A new `Question:` (or `Claim:`) starts a new run, so a prompt file
with six trajectories is six runs.
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

from engine.core.events import Action
from engine.stored.importers.build import Draft, Step, new_action, preview
from engine.core.parse import arguments_from_text
from engine.stored.transcript import TranscriptError

TEXT_FORMATS = ("trace", "react", "langchain")
EXPECTED = (
    "expected a text trace (Question: / Thought: / Action: / Observation: / Final Answer: lines, "
    "numbered as in the ReAct paper or with LangChain's Action Input:)"
)
KEYWORD = re.compile(
    r"^\s*(Question|Claim|Thought|Action Input|Action|Observation|Final Answer|Answer)(?:\s+(\d+))?\s*:\s?(.*)$", re.I
)
_CANON = {"question": "Question", "claim": "Question", "thought": "Thought", "action input": "Input", "action": "Action",
          "observation": "Observation", "final answer": "Answer", "answer": "Answer"}
_CHAIN_MARK = re.compile(r"^\s*> (?:Entering new .*chain\.\.\.|Finished chain\.)\s*$")
_LABEL = re.compile(r"^\s*([A-Z][A-Za-z ]{0,30}):\s*(.*)$")
_ACTION_BRACKET = re.compile(r"^([A-Za-z_][\w.-]*)\s*\[(.*)\]\s*$", re.S)
_ACTION_PAREN = re.compile(r"^([A-Za-z_][\w.-]*)\s*\((.*)\)\s*$", re.S)
_ACTION_BARE = re.compile(r"^([A-Za-z_][\w.-]*)\s*$")
_AI_ANSWER = re.compile(r"^\s*AI:\s?(.*)$")
_SGR = re.compile(r"\x1b\[[0-9;]*m")
_COLOURED_HEAD = re.compile(r"\x1b\[([0-9;]*)m\x1b\[1;3m")
_RESET = "\x1b[0m"
_AGENT_COLOUR = "32;1"
"""LangChain prints what the model wrote in green; each tool's output in another colour."""


def has_colour(text: str) -> bool:
    """Whether `text` holds a terminal's colour codes (LangChain's verbose=True output). Its escape
    character is looked for first: a search for one character is ten times quicker than for two,
    and a file of JSON never holds it."""
    return "\x1b" in text and "\x1b[" in text


def decolour(text: str) -> str:
    """LangChain's coloured console output as plain text: a tool's output that no `Observation:`
    label introduces gets one, on its own line, and the model's next words start a new line."""
    out: list[str] = []
    pos = 0
    for colour, start, body, end in _coloured(text):
        out.append(_SGR.sub("", text[pos:start]))
        before = "".join(out[-3:])
        if colour == _AGENT_COLOUR:
            if before and not before.endswith("\n") and not before.rstrip(" ").endswith(":"):
                out.append("\n")
        elif not before.rstrip(" ").endswith("Observation:"):
            out.append("Observation: " if not before or before.endswith("\n") else "\nObservation: ")
        out.append(_SGR.sub("", body))
        if colour != _AGENT_COLOUR and not text.startswith("\n", end):
            out.append("\n")
        pos = end
    out.append(_SGR.sub("", text[pos:]))
    return "".join(out)


def _coloured(text: str) -> Iterator[tuple[str, int, str, int]]:
    """Each coloured span (colour, where it starts, its text, where it ends), in time linear in
    `text`: a span runs to the first reset after its head, and once a head has no reset after it,
    no later head has one either (one lazy pattern would rescan the rest of the text from each)."""
    pos = 0
    while (head := _COLOURED_HEAD.search(text, pos)) is not None:
        close = text.find(_RESET, head.end())
        if close < 0:
            return
        yield head.group(1), head.start(), text[head.end() : close], close + len(_RESET)
        pos = close + len(_RESET)


def dialect(text: str) -> str:
    """'react' when fields are numbered, 'langchain' with Action Input: or chain markers, else 'trace'."""
    numbered = langchain = False
    for line in text.splitlines()[:2000]:
        langchain = langchain or _CHAIN_MARK.match(line) is not None
        m = KEYWORD.match(line)
        if m is None:
            continue
        numbered = numbered or m.group(2) is not None
        langchain = langchain or m.group(1).lower() == "action input"
    return "react" if numbered else "langchain" if langchain else "trace"


def action_from_text(text: str) -> Action | None:
    body = text.strip()
    m = _ACTION_BRACKET.match(body)
    if m:
        return new_action(tool=m.group(1), args={"input": m.group(2).strip()})
    m = _ACTION_PAREN.match(body)
    if m:
        return new_action(tool=m.group(1), args=arguments_from_text(m.group(2), ()))
    m = _ACTION_BARE.match(body)
    if m:
        return Action(tool=m.group(1))
    return None


class _Reader:
    """Reads the fields of one file into runs."""

    def __init__(self, name: str, fmt: str) -> None:
        self.name = name
        self.fmt = fmt
        self.runs: list[Draft] = []
        self.question: list[str] | None = None
        self.field_lines: list[str] | None = None
        self.closer: Callable[[str], None] | None = None
        self.answered_at = 0
        self.chain_over = False
        self.preamble: list[str] = []
        """Lines before the first run (the FEVER prompt's instruction): every run's system prompt."""

    @property
    def run(self) -> Draft:
        if not self.runs:
            self.runs.append(Draft(self.name, self.fmt, final_text_is_answer=False))
        return self.runs[-1]

    def close(self) -> None:
        if self.field_lines is not None and self.closer is not None:
            self.closer("\n".join(self.field_lines).strip())
        self.field_lines, self.closer = None, None

    def where(self, number: int) -> str:
        return f"{self.name}:{number}"

    def line(self, number: int, line: str, after_blank: bool) -> None:
        m = KEYWORD.match(line)
        ai = _AI_ANSWER.match(line) if m is None and self.fmt == "langchain" and not self.answered_at else None
        if m is None and ai is None:
            self.other(number, line, after_blank)
            return
        self.close()
        kind, value = ("Answer", ai.group(1).strip()) if m is None else (_CANON[m.group(1).lower()], m.group(3).strip())
        if kind == "Question":
            self.question_line(number, value)
            return
        if self.answered_at:
            raise TranscriptError(
                f"{self.where(number)}: the trace goes on after its final answer (line {self.answered_at}); "
                "expected a new Question: line before a new run"
            )
        self.field_lines = [value]
        getattr(self, f"field_{kind.lower()}")(number)

    def other(self, number: int, line: str, after_blank: bool) -> None:
        """A line without a keyword: the field above goes on, or (by dialect) a chain marker,
        LangChain's unlabelled first thought, or a labelled line of another tool kept as a note."""
        if self.fmt == "langchain" and _CHAIN_MARK.match(line):
            self.close()
            self.run.skipped["LangChain chain marker"] += 1
            self.chain_over = "Finished chain" in line
            return
        label = _LABEL.match(line) if self.fmt == "react" and (after_blank or self.field_lines is None) else None
        if label is not None:
            self.close()
            run, what = self.run, label.group(1)
            self.field_lines = [label.group(2).strip()]

            def closer(text: str) -> None:
                run.unrecognised(f"a '{what}:' line", f"{what}: {text}".strip(), f"line {number}")

            self.closer = closer
            return
        if self.field_lines is not None:
            self.field_lines.append(line.strip())
        elif line.strip() and self.fmt == "langchain" and not self.answered_at and not self.chain_over:
            self.field_lines = [line.strip()]
            self.field_thought(number)
        elif line.strip() and self.fmt == "langchain":
            where = "the final answer" if self.answered_at else "'> Finished chain.'"
            self.run.unrecognised(f"a line after {where}", line.strip(), f"line {number}")
        elif line.strip() and not self.runs:
            self.preamble.append(line.strip())
        elif line.strip():
            raise TranscriptError(f"{self.where(number)}: {EXPECTED}; got {preview(line)!r}")

    def question_line(self, number: int, value: str) -> None:
        if self.runs and (self.run.steps() or self.run.task_text is not None):
            self.runs.append(Draft(self.name, self.fmt, final_text_is_answer=False))
        self.answered_at = 0
        run = self.run
        if self.preamble:
            run.system = ["\n".join(self.preamble)]
        self.field_lines = [value]

        def closer(text: str) -> None:
            run.task_text = text

        self.closer = closer

    def _current(self, new_if: Callable[[Step], bool]) -> Step:
        last = self.run.last_step()
        if last is None or last.answer is not None or new_if(last):
            return self.run.new_step()
        return last

    def field_thought(self, number: int) -> None:
        step = self._current(lambda s: bool(s.actions))

        def closer(text: str) -> None:
            step.add_thought(text)
            step.add_raw(f"Thought: {text}")

        self.closer = closer

    def field_action(self, number: int) -> None:
        step = self._current(lambda s: bool(s.actions) and s.all_observed())

        def closer(text: str) -> None:
            action = action_from_text(text)
            if action is None:
                raise TranscriptError(
                    f"{self.where(number)}: expected 'Action: tool[argument]' or 'Action: tool(name=value, ...)', "
                    f"got {preview(text)!r}"
                )
            step.add_raw(f"Action: {text}")
            if action.tool.lower() == "finish" and set(action.args) == {"input"}:
                step.answer = str(action.args.get("input", ""))
                self.answered_at = number
                return
            step.actions.append(action)

        self.closer = closer

    def field_input(self, number: int) -> None:
        step = self.run.last_step()
        if step is None or not step.actions:
            raise TranscriptError(f"{self.where(number)}: an Action Input: line with no Action: line before it")

        def closer(text: str) -> None:
            last = step.actions[-1]
            step.actions[-1] = last.model_copy(update={"args": arguments_from_text(text, ())})
            step.add_raw(f"Action Input: {text}")

        self.closer = closer

    def field_observation(self, number: int) -> None:
        step = self.run.last_step()
        if step is None:
            raise TranscriptError(f"{self.where(number)}: an Observation: before any Thought: or Action: line")
        first = step.first_open()
        if first is None and step.actions:
            raise TranscriptError(
                f"{self.where(number)}: a second Observation: for one Action:; expected an Action: line before it"
            )
        index = first if first is not None else len(step.observations)

        def closer(text: str) -> None:
            step.observe(index, text)

        self.closer = closer

    def field_answer(self, number: int) -> None:
        step = self._current(lambda s: bool(s.actions))
        step.answer = self.field_lines[0] if self.field_lines else ""
        self.answered_at = number

        def closer(text: str) -> None:
            step.answer = text
            step.add_raw(f"Final Answer: {text}")

        self.closer = closer


def read_text(name: str, text: str, fmt: str | None = None) -> list[Draft]:
    """Every run of a text trace (one per Question:)."""
    if has_colour(text):
        text = decolour(text)
    fmt = fmt or dialect(text)
    reader = _Reader(name, fmt)
    blank = True
    for number, line in enumerate(text.splitlines(), 1):
        reader.line(number, line, blank)
        blank = not line.strip()
    reader.close()
    if not reader.runs:
        raise TranscriptError(f"{name}: the file is empty" if not text.strip() else f"{name}:1: {EXPECTED}")
    return reader.runs
