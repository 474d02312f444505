"""A refund world whose sessions grant 'approve always', and the sealed lines read back and rewritten."""

from __future__ import annotations

import json
from pathlib import Path

import scenarios
from engine.sessions.run import new_run

WORLD = Path(__file__).with_name("refund_world.py")


REFUND_ALWAYS = {"tool": "refund", "effect": "allow", "source": "approve always"}


def refunds():
    return scenarios.get(str(WORLD))


def first_session(path: Path, *, notify_always: bool = False, refund_always: bool = False, rules=()) -> list[str]:
    """Steps 1-2 of a run: notify approved, refund 1 approved; the run stops there (a closed
    terminal). The file's lines."""
    run = new_run(refunds(), "refund", "notify-then-refund", out=path, rules=list(rules))
    assert run.engine.run() == "awaiting_approval" and run.engine.state.pending.tool == "notify"
    run.engine.approve(always=notify_always)
    if run.engine.status != "awaiting_approval":
        assert run.engine.run() == "awaiting_approval"
    assert run.engine.state.pending.tool == "refund"
    run.engine.approve(always=refund_always)
    assert run.world.calls == ["notify 1", "refund 1"]
    run.close()
    return path.read_text().splitlines()


def rewrite(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def parsed(lines: list[str]) -> list[dict]:
    return [json.loads(line) for line in lines]


def refund_approval(lines: list[dict]) -> dict:
    return next(line for line in lines if line["type"] == "approval_decided" and line["step"] == 2)
