"""Generated runs over real MCP tools (tests/support/mcp_server.py): the approval invariant holds for them too.

Random decisions over the server's read-only, destructive and unannotated
tools, random operator answers, approval modes and swaps. In every transcript
no irreversible call executes without an approval before it, and the server's
own log of calls equals the executions the transcript records.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Budget, Decision, ScriptedPolicy
from engine.mcp import McpHub, hub_tools
from engine.sessions.run import new_run
from engine.core.scenario import Task
from engine.stored.transcript import read_transcript
from scenarios.mcp import SCENARIO as MCP
from tests.support.mcp_helpers import notes_server
from tests.support.invariants import assert_no_unapproved_irreversible

VALID = {
    "list_notes": {},
    "read_note": {"name": "todo"},
    "delete_note": {"name": "scratch"},
    "write_note": {"name": "scratch", "text": "generated"},
    "archive_note": {"name": "ideas"},
    "fail": {"message": "generated failure"},
}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    hub = McpHub([notes_server()], tmp_path_factory.mktemp("logs"))
    hub.start()
    yield hub
    hub.close()


def server_calls(hub: McpHub) -> list[str]:
    return json.loads(hub.call("notes", "call_log", {}).content[0].text)


@st.composite
def decision(draw):
    tool = draw(st.sampled_from(sorted(VALID)))
    kind = draw(st.sampled_from(["act", "act", "act", "bad_args", "unknown", "answer"]))
    if kind == "act":
        return Decision.act("go", tool, **VALID[tool])
    if kind == "bad_args":
        return Decision.act("bad", tool, name=5, extra=[1])
    if kind == "unknown":
        return Decision.act("invent", "made_up_tool")
    return Decision.final("done", "finished")


@st.composite
def cases(draw):
    scripts = [draw(st.lists(decision(), min_size=1, max_size=5)) for _ in range(2)]
    operator = draw(st.lists(st.sampled_from(["approve", "always", "reject", "edit", "bad_edit", "abort", "swap"]), min_size=1, max_size=10))
    return scripts, operator, draw(st.booleans()), draw(st.sampled_from(["ask", "ask", "all", "none"]))


def scripted(name: str, script: list) -> ScriptedPolicy:
    return ScriptedPolicy(name, lambda view: script[(view.step - 1) % len(script)])


def drive(hub: McpHub, case, path: Path):
    scripts, operator, interactive, approve = case
    run = new_run(
        MCP, policy=scripted("p0", scripts[0]), task=Task("custom", "generated"), extra_tools=hub_tools(hub),
        mcp=hub.public(), out=path, interactive=interactive, approve=approve, budget=Budget(max_steps=8),
    )
    engine = run.engine
    moves = iter(operator * 10)
    for _ in range(60):
        status = engine.step()
        if status == "ended":
            break
        move = next(moves, "abort")
        if status == "awaiting_approval":
            pending = engine.state.pending
            if move == "approve":
                engine.approve()
            elif move == "always":
                engine.approve(always=True)
            elif move == "edit":
                engine.modify(dict(VALID[pending.tool]))
            elif move == "bad_edit":
                with pytest.raises(ValueError):
                    engine.modify({"name": 7})
            elif move == "abort":
                engine.abort()
            else:
                engine.reject(f"operator says {move}")
        elif status == "awaiting_budget":
            engine.end_at_budget()
        if move == "swap" and not engine.ended:
            engine.swap_policy(scripted(f"p{len(engine.events) % 2}", scripts[len(engine.events) % 2]))
    if not engine.ended:
        engine.abort("driver bound reached")
    run.close()
    return run


CASES = 1000 if os.environ.get("AGENT_TUI_LONG") else 40


def test_generated_mcp_runs_keep_the_approval_invariant(hub):
    server_calls(hub)  # start from an empty log

    @settings(max_examples=CASES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(cases())
    def check(case):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "run.jsonl"
            run = drive(hub, case, path)
            transcript = read_transcript(path)
            assert transcript.events == run.engine.events
            assert transcript.events[-1].type == "run_ended"
            kinds = {t.name: t.kind for t in transcript.header.tools}
            assert kinds["delete_note"] == kinds["write_note"] == "irreversible"
            assert kinds["archive_note"] == kinds["list_notes"] == "ordinary"  # a trusted server's hints
            assert_no_unapproved_irreversible(transcript.header, transcript.events)
            executed = [e.tool for e in transcript.events if e.type == "observation" and e.executed]
            assert server_calls(hub) == executed, "the server ran exactly the executions the transcript records"

    check()
