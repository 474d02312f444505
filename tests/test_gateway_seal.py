"""A gateway run is sealed as every other run is: its header and its "approve always"."""

from __future__ import annotations

from pathlib import Path

from engine.core.answers import Answer
from engine.sessions.seals import Sealer, header_sealed, load_key
from engine.stored.transcript import read_transcript
from tests.support.fake_openai import FakeOpenAI, calls, say
from tests.support.gateway_harness import TOOLS, Operator, agent_client, gateway

USER = [{"role": "user", "content": "Tidy the folder."}]


def test_a_gateway_runs_header_and_its_approve_always_carry_good_seals(tmp_path: Path) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(calls(("delete_file", '{"path": "a"}')), say("done"))
        operator = Operator(gw, lambda g: g.answer(Answer.approve_always()))
        agent_client(server).chat.completions.create(model="m", messages=USER, tools=TOOLS)
        operator.join()
        assert operator.seen == ["delete_file"]
    transcript = read_transcript(tmp_path / "gateway.jsonl")
    key = load_key()
    assert transcript.header.seal is not None and header_sealed(key, transcript.header)
    always = [e for e in transcript.events if e.type == "approval_decided" and e.choice == "approve_always"]
    assert len(always) == 1 and Sealer(key, transcript.header).sealed(always[0])


def test_sealing_leaves_the_runs_names_and_ids_out_of_pydantics_cache_of_strings() -> None:
    """Each seal reads its line back: a header's task or an approval's values kept in pydantic's
    string cache would grow a gateway's memory by a run a request up to that cache's 16,384
    entries, so the two sealed lines are read back without it (each read makes its own string)."""
    from engine.core.events import ApprovalDecided, Header

    header = Header(scenario="gateway", task="conversation-7-turn-1", task_text="t", policy="upstream fake").model_dump_json()
    approval = ApprovalDecided(step=1, index=0, choice="reject", reason="keep the notes").model_dump_json()
    assert Header.model_validate_json(header).task is not Header.model_validate_json(header).task
    assert ApprovalDecided.model_validate_json(approval).reason is not ApprovalDecided.model_validate_json(approval).reason

def test_the_key_is_read_once_for_every_run_of_the_gateway(tmp_path: Path, monkeypatch) -> None:
    """Each new conversation is a run sealed with the operator's key, read from its file once
    for the gateway (not once a run, before the upstream is asked); every header carries a good seal."""
    import engine.sessions.seals as seals

    real, reads = seals.load_key, []
    monkeypatch.setattr(seals, "load_key", lambda *a: reads.append(1) or real(*a))
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all") as (gw, server):
        fake.add(say("one"), say("two"), say("three"))
        for n in range(3):
            agent_client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": f"Task {n}."}], tools=TOOLS)
        paths = [run.path for run in gw.runs]
    assert len(paths) == 3 and len(reads) == 1
    key = real()
    assert all(header_sealed(key, read_transcript(p).header) for p in paths)


def _spelled_out(header) -> bytes:
    """The content a header's seal covers, as seals.py's docstring specifies it: the line read
    back, without its seal, as sorted compact ASCII JSON without the fields at their defaults."""
    import json

    from engine.core.events import Header
    from engine.core.guards import serialised

    _, line = serialised(header.model_copy(update={"seal": None}))
    read_back = Header.model_validate_json(line)
    data = read_back.model_dump(mode="json", exclude_defaults=True, exclude={"seal"})
    data["format_version"] = read_back.format_version
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _odd_tools() -> list:
    from engine.core.events import ToolInfo

    return [
        ToolInfo(name="Bash", description="Run a command. " * 40, parameters=[{"name": "command", "type": "string", "required": True}]),
        ToolInfo(name="bare"),
        ToolInfo(name="Édit", description="naïve ☃ text", kind="irreversible", server="files"),
        ToolInfo(name="odd", parameters=[{"z": 1, "a": {"y": [1.5, float("inf")], "b": None}, "name": "x\ud800y"}]),
    ]


def test_a_headers_seal_and_digest_cover_its_content_as_specified_with_any_tools(tmp_path: Path, monkeypatch) -> None:
    """The tools' canonical form, assembled from each tool's, is byte for byte the whole header's:
    odd values (a lone surrogate, infinity, unsorted keys, text beyond ASCII, fields at their
    defaults) and no tools at all seal as before."""
    import hashlib
    import hmac

    from engine.core.events import Header, RuleInfo
    from engine.sessions.seals import header_digest, sealed_run

    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path))
    key = load_key()
    tools = _odd_tools()
    for chosen in (tools, tools[:1], tools[1:2], [], tools[::-1]):
        for repeat in range(2):  # a second time from what was kept of the first
            header = Header(
                scenario="gateway", task=f"conversation-{repeat}-turn-1", task_text="Tidy ☃ \ud801 up", policy="upstream m",
                options={"upstream": "http://127.0.0.1:1/v1", "turn": 1, "z": {"b": 1, "a": 2}}, tools=chosen,
                rules=[RuleInfo(tool="*", effect="allow")], repetition_threshold=None, started_at=1.5,
            )
            spelled = _spelled_out(header)
            sealed, sealer = sealed_run(key, header)
            assert sealed.seal == hmac.new(key, b"agent-tui header seal 1\n" + spelled, hashlib.sha256).hexdigest()
            assert header_sealed(key, sealed) and header_digest(sealed) == hashlib.sha256(spelled).hexdigest().encode()
            assert sealer is not None and sealer._digest == header_digest(sealed)


def test_an_agents_tools_are_put_in_canonical_form_once_for_all_its_runs(tmp_path: Path, monkeypatch) -> None:
    """Every request of an agent declares the same tools, each new run's header holds them: the
    second run's seal takes their canonical JSON from the first's, and writes only the rest."""
    import uuid

    from engine.core.events import Header, ToolInfo
    import engine.sessions.seals as seals

    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path))
    key = load_key()
    marker = f"Run a command {uuid.uuid4().hex}."  # a tool no earlier seal of this process saw
    tools = [ToolInfo(name="Bash", description=marker * 40), ToolInfo(name="bare")]
    real, written = seals.json.dumps, []

    class Counting:
        @staticmethod
        def dumps(*args, **kwargs):
            text = real(*args, **kwargs)
            written.append(text.count(marker))
            return text

    monkeypatch.setattr(seals, "json", Counting)
    for n in range(3):
        header = Header(scenario="gateway", task=f"conversation-{n}-turn-1", task_text="t", policy="p", tools=tools)
        assert header_sealed(key, seals.sealed_run(key, header)[0])
    assert sum(written) == 40, "the tool's description went through JSON once"


def test_a_new_runs_seal_writes_no_line_of_the_tool_records_sealed_before(tmp_path: Path, monkeypatch) -> None:
    """The gateway gives each new run of an agent the same tool records: the seal of every run
    after the first finds their canonical forms by the records, without a JSON line of any."""
    from engine.core.events import Header, ToolInfo
    import engine.sessions.seals as seals

    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path))
    key = load_key()
    tools = [ToolInfo(name=f"tool_{k}", description="Run it. " * 20, parameters=[{"name": "path", "type": "string"}]) for k in range(27)]
    real, lines = seals.serialised, []
    monkeypatch.setattr(seals, "serialised", lambda item: lines.append(type(item).__name__) or real(item))
    for n in range(3):
        header = Header(scenario="gateway", task=f"conversation-{n}-turn-1", task_text="t", policy="p", tools=tools)
        sealed = seals.sealed_run(key, header)[0]
        assert header_sealed(key, sealed) and sealed.seal == seals._mac_of(key, _spelled_out(header))
    assert lines.count("ToolInfo") == 27, lines  # the first run's seal only


def test_a_new_runs_header_takes_the_tools_record_of_the_run_before_when_the_agent_declares_the_same(tmp_path: Path, monkeypatch) -> None:
    """Each new conversation is a run whose header records the agent's tools: declared the same
    as before, they are recorded once (`Tool.info` not called again), and every header has them."""
    from engine.core.tools import Tool

    real, recorded = Tool.info, []
    monkeypatch.setattr(Tool, "info", lambda self: recorded.append(self.name) or real(self))
    with FakeOpenAI() as fake, gateway(fake, tmp_path, approve="all") as (gw, server):
        fake.add(say("one"), say("two"), say("three"))
        for n in range(3):
            agent_client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": f"Task {n}."}], tools=TOOLS)
        paths = [run.path for run in gw.runs]
    assert len(paths) == 3 and sorted(recorded) == sorted(t["function"]["name"] for t in TOOLS)
    assert all([t.name for t in read_transcript(p).header.tools] == [t["function"]["name"] for t in TOOLS] for p in paths)


def test_the_tools_canonical_forms_kept_stay_within_their_bound(tmp_path: Path, monkeypatch) -> None:
    """An agent declaring new tools at every request pushes the oldest forms out: what is kept
    stays under `KEPT_TOOL_BYTES`, a tool larger than that is not kept, and every seal is good."""
    from engine.core.events import Header, ToolInfo
    import engine.sessions.seals as seals

    monkeypatch.setenv("AGENT_TUI_HOME", str(tmp_path))
    monkeypatch.setattr(seals, "KEPT_TOOL_BYTES", 20_000)
    monkeypatch.setattr(seals, "_tool_forms", {})
    monkeypatch.setattr(seals, "_tool_forms_size", 0)
    monkeypatch.setattr(seals, "_record_forms", {})
    monkeypatch.setattr(seals, "_record_forms_size", 0)
    key = load_key()
    for n in range(40):
        tools = [ToolInfo(name=f"t{n}-{k}", description="d" * 300) for k in range(3)] + [ToolInfo(name="huge", description="h" * 30_000)]
        header = Header(scenario="gateway", task=f"c-{n}", task_text="t", policy="p", tools=tools)
        sealed = seals.sealed_run(key, header)[0]
        assert header_sealed(key, sealed) and sealed.seal == seals._mac_of(key, _spelled_out(header))
        assert seals._tool_forms_size == sum(len(line) + len(form) for line, form in seals._tool_forms.items()) <= 20_000
        assert seals._record_forms_size == sum(len(form) for _, form in seals._record_forms.values()) <= 20_000
    assert all(b"huge" not in line for line in seals._tool_forms) and any(b"t39-2" in line for line in seals._tool_forms)
