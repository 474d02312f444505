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
