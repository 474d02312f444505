"""A Gemini CLI chat written as a transcript with no mapping at all: the floor of its import.

    python bench/bare_import.py CHAT.jsonl OUT.jsonl

What any import of the `gemini-cli` chats `bench/import_speed.py` writes (a session line, the
task, then a line a step: one call with its result and the step's tokens) costs with the parts an import
cannot do without, and nothing of its own: the file read and split into lines, each line
parsed by the JSON reader the importers use (pydantic's, the same options), the step's four
objects built as the engine builds its own (`trusted`: the call, the usage, the decision, the
observation) and written by the one transcript writer (`write_transcript`: each event
serialised as the engine serialises it). No detection, no check that the file is plain JSON,
no Draft, no first look at the calls (the header names no tool), no word counts, no test of
any value's type: a line of any other shape raises. `import_speed.py` times it as a process
in the same rounds as `agent-tui import` of the same file and `show`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic_core import from_json  # noqa: E402

from engine.core.events import Action, DecisionMade, Event, Header, Observed, Usage  # noqa: E402
from engine.stored.importers.formats import IMPORTED  # noqa: E402
from engine.stored.transcript import write_transcript  # noqa: E402


def events(lines: list[str]) -> Iterator[Event]:
    """Each step's decision and observation, from the lines after the session's and the task's."""
    for number, line in enumerate(lines[2:], 1):
        record = from_json(line, allow_inf_nan=False, cache_strings="keys")
        call = record["toolCalls"][0]
        tokens = record["tokens"]
        action = Action.trusted(tool=call["name"], args=call["args"], call_id=call["id"])
        usage = Usage.trusted(input_tokens=tokens["input"], output_tokens=tokens["output"], estimated=False)
        yield DecisionMade.trusted(step=number, policy=IMPORTED, thought="", actions=[action], usage=usage)
        text = call["result"][0]["functionResponse"]["response"]["output"]
        yield Observed.trusted(step=number, index=0, tool=action.tool, args=action.args, text=text, error=False, executed=True)


def main(argv: list[str]) -> int:
    source, out = argv
    lines = Path(source).read_bytes().decode("utf-8").splitlines()
    task = from_json(lines[1])["content"][0]["text"]
    header = Header(scenario=IMPORTED, task="gemini-cli", task_text=task, policy=IMPORTED)
    write_transcript(out, header, events(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
