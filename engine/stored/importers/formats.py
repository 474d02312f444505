"""What the importers package needs before it knows a file's format: the format names, the
agent-tui header test and what detection hands on (`Sniffed`).

Reading an agent-tui transcript (`show`, `replay`) stops here: the readers of other tools'
logs (`detect` and one module per format) are imported only for a file that is not one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

IMPORTED = "imported"
"""The scenario and policy names of an imported run's header."""

FORMAT_NAMES: dict[str, str] = {
    "jsonl": "agent-tui transcript",
    "chat": "OpenAI chat messages (list, {\"messages\"}, request body, request + response, fine-tune JSONL)",
    "claude-code": "Claude Code session JSONL",
    "codex": "Codex CLI rollout JSONL",
    "gemini-cli": "Gemini CLI chat (JSONL, or JSON in older versions)",
    "opencode": "opencode session (opencode export)",
    "swe-agent": "SWE-agent .traj",
    "mini-swe-agent": "mini-swe-agent trajectory",
    "inspect": "Inspect AI eval log (.json, .eval) or a sample's message list",
    "trace": "text trace (Question:/Thought:/Action:/Observation:)",
    "react": "ReAct numbered text (Thought 1:/Action 1:/Observation 1:)",
    "langchain": "LangChain scratchpad (Action:/Action Input:)",
    "alfworld": "ALFWorld text game (Your task is to: / > command)",
}
TEXT_FORMATS = ("trace", "react", "langchain", "alfworld")
"""The formats read as text lines, not JSON."""
TRIED = "tried: " + "; ".join(FORMAT_NAMES.values())
ZIP_MAGIC = b"PK\x03\x04"


@dataclass
class Sniffed:
    """The format, and what was already parsed to decide it (so nothing is parsed twice)."""

    fmt: str
    text: str = ""
    document: Any = None
    rows: list[tuple[int, Any]] | None = None
    lines: list[str] | None = None
    """`detect.json_lines(text)`, when detection made it."""


def starts_with_header(data: bytes) -> bool:
    """The first non-blank line is an agent-tui header as the writer writes it (found in the bytes)."""
    pos = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    size = len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        end = size if end < 0 else end
        line = data[pos:end].strip()
        if line:
            return line.startswith((b'{"type": "header"', b'{"type":"header"'))
        pos = end + 1
    return False
