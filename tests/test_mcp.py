"""MCP tools in the engine: kinds from annotations, schema validation, results, progress, faults.

The servers are tests/support/mcp_server.py (the official `mcp` SDK), over stdio and
streamable HTTP, started and stopped here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import Decision
from engine.mcp.servers import McpServerConfig
from engine.mcp import McpHub, McpStartError, hub_tools
from engine.sessions.run import new_run
from engine.core.tools import validate_args
from scenarios.mcp import SCENARIO as MCP
from engine.core.scenario import Task
from tests.support.helpers import script
from tests.support.mcp_helpers import HttpServer, notes_server


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    logs = tmp_path_factory.mktemp("mcp-logs")
    hub = McpHub([notes_server(), notes_server("trusted"), notes_server("untrusted", trusted=False)], logs)
    hub.start()
    yield hub
    hub.close()


def tools_of(hub: McpHub) -> dict:
    return {t.name: t for t in hub_tools(hub)}


def mcp_run(hub: McpHub, *decisions, interactive: bool = False, **kw):
    return new_run(
        MCP, policy=script(*decisions), task=Task("custom", "work on the notes"), extra_tools=hub_tools(hub),
        mcp=hub.public(), interactive=interactive, save=False, **kw,
    )


def test_kinds_follow_annotations_and_trust(hub):
    tools = tools_of(hub)
    # both servers offer the same names: every clashing tool is prefixed with its server
    assert "read_note" not in tools
    kinds = {name: t.kind for name, t in tools.items()}
    assert kinds["notes.read_note"] == "ordinary"  # readOnlyHint true, from a trusted server
    assert kinds["notes.delete_note"] == "irreversible"  # destructiveHint true
    assert kinds["notes.write_note"] == "irreversible"  # no annotations: may destroy
    assert kinds["trusted.archive_note"] == "ordinary"  # destructiveHint false, from a trusted server
    assert kinds["trusted.delete_note"] == "irreversible"
    assert kinds["untrusted.read_note"] == "irreversible"  # the hints of a server nobody trusts are not believed
    assert kinds["untrusted.archive_note"] == "irreversible"
    assert {t.server for t in tools.values()} == {"notes", "trusted", "untrusted"}
    info = tools["notes.write_note"].info()
    assert info.server == "notes"
    assert [(p["name"], p["type"], p["required"]) for p in info.parameters] == [
        ("name", "string", True), ("text", "string", True), ("pinned", "boolean", False)
    ]


def test_schema_validation_names_each_problem(hub):
    tool = tools_of(hub)["notes.write_note"]
    with pytest.raises(ValueError) as caught:
        validate_args(tool, {"name": 3, "pinned": "yes"})
    message = str(caught.value)
    assert "missing argument 'text'" in message
    assert "argument 'name' must be string, not integer" in message
    assert "argument 'pinned' must be boolean, not string" in message
    assert validate_args(tool, {"name": "a", "text": "b"}) == {"name": "a", "text": "b"}


def test_invalid_arguments_are_the_observation_before_any_approval(hub):
    run = mcp_run(hub, Decision.act("write", "notes.write_note", name=5))
    run.engine.step()
    events = list(run.engine.events)
    assert not any(e.type == "approval_requested" for e in events)
    observed = [e for e in events if e.type == "observation"][-1]
    assert observed.error and not observed.executed
    assert "invalid arguments for notes.write_note" in observed.text and "missing argument 'text'" in observed.text


def test_an_edit_is_validated_again(hub):
    run = mcp_run(hub, Decision.act("write", "notes.write_note", name="n1", text="one"), interactive=True)
    assert run.engine.step() == "awaiting_approval"
    with pytest.raises(ValueError, match="argument 'text' must be string, not integer"):
        run.engine.modify({"name": "n1", "text": 7})
    assert run.engine.status == "awaiting_approval"
    run.engine.modify({"name": "n1", "text": "edited"})
    observed = [e for e in run.engine.events if e.type == "observation"][-1]
    assert observed.executed and observed.text == "wrote n1 (6 characters)"
    read = mcp_run(hub, Decision.act("read", "notes.read_note", name="n1"))
    read.engine.step()
    assert [e for e in read.engine.events if e.type == "observation"][-1].text == "edited"


def test_readonly_runs_destructive_waits_and_reject_changes_nothing(hub):
    run = mcp_run(
        hub,
        Decision.act("look", "trusted.list_notes"),
        Decision.act("remove", "trusted.delete_note", name="ideas"),
        Decision.act("look again", "trusted.list_notes"),
        interactive=True,
    )
    assert run.engine.step() == "ready"
    first = [e for e in run.engine.events if e.type == "observation"][-1]
    assert first.executed and "ideas" in first.text
    assert run.engine.step() == "awaiting_approval"
    assert run.engine.state.pending.reason == "irreversible tool"
    run.engine.reject("keep it")
    run.engine.step()
    last = [e for e in run.engine.events if e.type == "observation"][-1]
    assert "ideas" in last.text  # rejected: nothing was deleted


def test_results_errors_caps_and_placeholders(hub):
    run = mcp_run(
        hub,
        Decision.act("fail", "notes.fail", message="disk on fire"),
        Decision.act("big", "notes.huge", size=1_000_000),
        Decision.act("pic", "notes.picture"),
        Decision.act("hostile", "notes.echo_hostile"),
    )
    for _ in range(4):
        run.engine.step()
    fail, big, pic, hostile = [e for e in run.engine.events if e.type == "observation"]
    assert fail.error and fail.executed and "disk on fire" in fail.text and fail.text.startswith("ERROR:")
    assert run.engine.fault is None and run.engine.status == "ready"  # isError is no fault
    assert big.truncated and len(big.text) < 4100 and "[... truncated: 996000 more characters]" in big.text
    assert pic.text == "a red dot\n[image: image/png, 8 bytes]"
    assert "[bold red]boom[/]" in hostile.text  # kept as data; renderers clean and never parse it


def test_progress_reaches_listeners(hub):
    seen = []
    hub.progress_listeners.append(seen.append)
    try:
        run = mcp_run(hub, Decision.act("count", "notes.slow", steps=4, delay=0.01))
        run.engine.step()
    finally:
        hub.progress_listeners.remove(seen.append)
    assert [(p.server, p.tool, p.progress, p.total) for p in seen] == [("notes", "slow", float(i), 4.0) for i in range(1, 5)]
    assert seen[-1].message == "step 4 of 4"


def test_stderr_goes_to_the_log_named_in_the_header(hub):
    logs = [s["log"] for s in hub.public()]
    assert all(Path(log).read_text().startswith("test server started") for log in logs)
    run = mcp_run(hub, Decision.final("x", "y"))
    assert [s["log"] for s in run.engine.header.mcp] == logs


def test_streamable_http(tmp_path):
    server = HttpServer()
    try:
        hub = McpHub([McpServerConfig(name="web", url=server.url, timeout=20, trusted=True)], tmp_path)
        hub.start()
        try:
            run = mcp_run(hub, Decision.act("read", "read_note", name="todo"), Decision.act("del", "delete_note", name="todo"), interactive=True)
            run.engine.step()
            assert [e for e in run.engine.events if e.type == "observation"][-1].text == "buy milk"
            assert run.engine.step() == "awaiting_approval"
            run.engine.approve()
            assert [e for e in run.engine.events if e.type == "observation"][-1].text == "deleted todo"
            assert hub.public()[0]["url"] == server.url and "log" not in hub.public()[0]
        finally:
            hub.close()
    finally:
        server.stop()


def test_an_unreachable_url_is_a_start_error(tmp_path):
    from tests.support.mcp_helpers import free_port

    hub = McpHub([McpServerConfig(name="web", url=f"http://127.0.0.1:{free_port()}/mcp", timeout=5)], tmp_path)
    with pytest.raises(McpStartError, match="MCP server 'web' at http://127.0.0.1:.* cannot be reached"):
        hub.start()


@pytest.mark.parametrize(
    ("tool", "args", "words"),
    [
        ("crash", {}, "exited during crash"),
        ("hang", {}, "did not answer hang within 2 s"),
        ("garbage", {}, "sent a reply that cannot be read"),
    ],
)
def test_faults_stop_a_headless_run_and_pause_the_cockpit(tmp_path, tool, args, words):
    hub = McpHub([notes_server(timeout=2)], tmp_path)
    hub.start()
    try:
        headless = mcp_run(hub, Decision.act("go", tool, **args))
        headless.engine.step()
        observed = [e for e in headless.engine.events if e.type == "observation"][-1]
        assert observed.error and words in observed.text
        assert headless.engine.state.ended.outcome == "stopped"
        assert headless.engine.state.ended.reason.startswith("tool fault: ") and words in headless.engine.state.ended.reason
        # the cockpit: `continue` stops at the fault (the crashed server's next call faults too)
        cockpit = mcp_run(hub, Decision.act("go", tool, **args), Decision.act("again", "list_notes"), interactive=True)
        status = cockpit.engine.run()
        assert status == "ready" and "MCP server 'notes'" in (cockpit.engine.fault or "")
        assert cockpit.engine.state.step == 1 and not cockpit.engine.ended
    finally:
        hub.close()


def test_a_server_exiting_at_start_is_named_with_its_log(tmp_path):
    hub = McpHub([notes_server("broken", "--exit-at-start")], tmp_path)
    with pytest.raises(McpStartError) as caught:
        hub.start()
    message = str(caught.value)
    assert message.startswith("MCP server 'broken' exited at start")
    assert "last line: fatal: refusing to start" in message


def test_a_missing_command_is_named(tmp_path):
    hub = McpHub([McpServerConfig(name="ghost", command="agent-tui-no-such-server")], tmp_path)
    with pytest.raises(McpStartError, match="MCP server 'ghost': command not found: agent-tui-no-such-server"):
        hub.start()


def test_a_call_from_a_worker_thread_waits_on_that_thread_and_keeps_its_deadline(tmp_path, monkeypatch):
    """The cockpit steps on a worker thread: an MCP call waits there for the hub, without a runner
    thread between (the hub's own deadline is the call's), and a server that hangs still faults
    at its timeout."""
    import threading

    hub = McpHub([notes_server(timeout=2)], tmp_path)
    hub.start()
    try:
        waited_on: list[str] = []
        call = hub.call

        def recorded(*args, **kw):
            waited_on.append(threading.current_thread().name)
            return call(*args, **kw)

        monkeypatch.setattr(hub, "call", recorded)
        run = mcp_run(hub, Decision.act("list", "list_notes"), Decision.act("go", "hang"))
        worker = threading.Thread(target=lambda: [run.engine.step(), run.engine.step()], name="engine-worker")
        worker.start()
        worker.join(30)
        assert not worker.is_alive()
        assert waited_on == ["engine-worker", "engine-worker"]
        observed = [e for e in run.engine.events if e.type == "observation"]
        assert not observed[0].error
        assert observed[1].error and "did not answer hang within 2 s" in observed[1].text
    finally:
        hub.close()


def test_a_tools_output_schema_is_checked_once_and_its_structured_content_every_call(hub, monkeypatch):
    """The structured content of each result is checked against the tool's output schema (as
    the SDK's `call_tool` does) by a validator built once for the schema, not at every call."""
    from jsonschema import Draft202012Validator

    assert next(t for t in hub.connections[0].tools if t.name == "read_note").outputSchema is not None
    checked: list[object] = []
    real = Draft202012Validator.check_schema.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Draft202012Validator, "check_schema", classmethod(lambda cls, schema, **kw: (checked.append(schema), real(cls, schema, **kw))[1]))
    for _ in range(3):
        assert hub.call("notes", "read_note", {"name": "todo"}).structuredContent is not None
    assert len(checked) <= 1


def test_structured_content_that_does_not_fit_the_output_schema_is_a_fault():
    from mcp.types import CallToolResult, TextContent

    from engine.mcp.hub import structured_problem

    schema = {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    text = [TextContent(type="text", text="5")]
    assert structured_problem(schema, CallToolResult(content=text, structuredContent={"result": "5"})) is None
    assert structured_problem(None, CallToolResult(content=text)) is None
    assert "argument 'result' must be string, not integer" in (structured_problem(schema, CallToolResult(content=text, structuredContent={"result": 5})) or "")
    assert "no structured content" in (structured_problem(schema, CallToolResult(content=text)) or "")


def test_an_output_schema_that_cannot_be_checked_says_so_in_words():
    """A tool whose output schema refers to a URL (never fetched) faults saying the schema cannot
    be checked, in a sentence that reads after the tool's name."""
    from mcp.types import CallToolResult, TextContent

    from engine.mcp.hub import structured_problem

    schema = {"type": "object", "properties": {"result": {"$ref": "http://127.0.0.1:9/nowhere.json"}}}
    problem = structured_problem(schema, CallToolResult(content=[TextContent(type="text", text="5")], structuredContent={"result": 5}))
    assert problem is not None and problem.startswith("has an output schema that cannot be checked: "), problem
    assert "\n" not in problem
