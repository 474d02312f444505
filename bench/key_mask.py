"""What the key mask costs an upstream's reply: `KeyMask.reply` on an Anthropic message.

    python bench/key_mask.py [--replies 2000] [--runs 7] [--against FILE]

The message holds a thinking block (600 characters, signed), a text (300) and a
tool use, as a Claude Code turn does. Prints the CPU time per reply of masking
it with a key set, next to its floor, a copy of the message walked as the mask
walks it (every string kept, nothing searched), the median of --runs runs taken
in turns. --against
names another copy of engine/model/keymask.py (`git show main:engine/model/keymask.py
> /tmp/keymask.py`), timed in the same turns.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.options import at_least  # noqa: E402
from engine.model import keymask  # noqa: E402
from engine.wires.neutral import Reply, ToolCall  # noqa: E402

KEY = "sk-ant-upstream-key-0123456789abcdef"
MESSAGE: dict[str, Any] = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-fake", "stop_reason": "tool_use",
    "content": [
        {"type": "thinking", "thinking": "The user wants the build gone. " * 20, "signature": "EqQBCkYIBxgCKkA" * 27},
        {"type": "text", "text": "Removing the build folder now. " * 10},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "rm -rf build", "description": "Remove the build folder"}},
    ],
    "usage": {"input_tokens": 120, "output_tokens": 24},
}


def _reply() -> Reply:
    call = ToolCall("toolu_1", "Bash", '{"command": "rm -rf build", "description": "Remove the build folder"}')
    return Reply(content=MESSAGE["content"][1]["text"], tool_calls=[call], finish_reason="tool_calls", wire="anthropic", message=MESSAGE)


def _per_reply(module: ModuleType, replies: int) -> float:
    """CPU microseconds per `reply` call of `module`'s KeyMask."""
    mask = module.KeyMask(KEY)
    batch = [_reply() for _ in range(replies)]
    started = time.process_time()
    for reply in batch:
        mask.reply(reply)
    return (time.process_time() - started) / replies * 1e6


def _copied(data: Any) -> Any:
    if isinstance(data, dict):
        return {_copied(k): _copied(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_copied(v) for v in data]
    return data


def _floor(replies: int) -> float:
    """CPU microseconds per copy of a reply's message, walked as `KeyMask.value` walks it."""
    batch = [_reply() for _ in range(replies)]
    started = time.process_time()
    for reply in batch:
        reply.message = _copied(reply.message)
    return (time.process_time() - started) / replies * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=at_least(10), default=2000)
    parser.add_argument("--runs", type=at_least(1), default=7)
    parser.add_argument("--against", type=Path, help="another keymask.py, timed in the same turns")
    args = parser.parse_args()
    modules = {"this": keymask}
    if args.against is not None:
        spec = importlib.util.spec_from_file_location("keymask_against", args.against)
        assert spec is not None and spec.loader is not None
        other = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(other)
        modules["against"] = other
    times: dict[str, list[float]] = {"floor": [], **{name: [] for name in modules}}
    for _ in range(args.runs):
        times["floor"].append(_floor(args.replies))
        for name, module in modules.items():
            times[name].append(_per_reply(module, args.replies))
    for label, values in times.items():
        print(f"{label:>8}: {statistics.median(values):7.1f} us a reply (median of {args.runs}, CPU time)")


if __name__ == "__main__":
    main()
