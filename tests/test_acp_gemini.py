"""`gemini --acp` (Gemini CLI 0.61.0) as an ACP run against a loopback fake model: its file
write is agent-tui's, held for approval; rejected with a reason the model reads, approved,
edited. Each test drives the real agent headless through the ordinary approval calls."""

from __future__ import annotations

import json

from engine.acp.tools import WRITE, permission_tool
from engine.core.edits import edit_preview
from tests.support.acp_harness import approving, drive, gemini_agent, open_run
from tests.support.fake_gemini import Turn

WRITE_NOTE = [Turn(text="I'll write the note.", calls=[("write_file", {"file_path": "note.txt", "content": "hello\n"})]),
              Turn(text="Done.")]


def _answer(write):
    """Approve the agent's permission request, then `write(engine)` answers the held file write."""

    def answer(engine):
        if engine.state.pending.tool == WRITE:
            write(engine)
        else:
            engine.approve()

    return answer


def test_a_write_is_held_until_approved_and_then_the_file_exists():
    seen = []
    with gemini_agent(WRITE_NOTE) as agent:
        run = open_run(agent, "Write hello to note.txt")
        asked = drive(run, _answer(approving(agent.work / "note.txt", seen)))
        assert [tool for tool, _ in asked] == [permission_tool("edit"), WRITE]
        assert asked[1][1] == {"path": str(agent.work / "note.txt"), "content": "hello\n"}
        assert (asked[0][1]["path"], asked[0][1]["content"]) == (str(agent.work / "note.txt"), "hello\n")  # the permission's diff

        assert seen == [False]  # held: nothing written before the approval
        assert (agent.work / "note.txt").read_text() == "hello\n"
        assert run.engine.state.ended.outcome == "answer"


def test_a_rejected_write_is_not_written_and_the_model_reads_the_reason():
    with gemini_agent(WRITE_NOTE) as agent:
        run = open_run(agent, "Write hello to note.txt")
        drive(run, _answer(lambda engine: engine.reject("write it to notes/ instead")))
        assert not (agent.work / "note.txt").exists()
        last = json.dumps(agent.fake.requests[-1][2])
        assert "write it to notes/ instead" in last
        texts = [e.text for e in run.engine.events if e.type == "observation"]
        assert "REJECTED by the operator: write it to notes/ instead" in texts


def test_the_permission_for_an_edit_shows_its_diff_before_approval():
    previews = []
    with gemini_agent(WRITE_NOTE) as agent:
        (agent.work / "note.txt").write_text("old\n")
        run = open_run(agent, "Write hello to note.txt")

        def answer(engine):
            previews.append(edit_preview(engine.state.pending.tool, engine.state.pending.args))
            engine.approve()

        drive(run, answer)
        assert [p.shows for p in previews] == ["diff", "diff"]  # the permission, then the write itself
        assert all("-old" in p.lines and "+hello" in p.lines for p in previews)


def test_an_edited_write_writes_the_edited_content():
    with gemini_agent(WRITE_NOTE) as agent:
        run = open_run(agent, "Write hello to note.txt")
        drive(run, _answer(lambda engine: engine.modify({**engine.state.pending.args, "content": "edited\n"})))
        assert (agent.work / "note.txt").read_text() == "edited\n"
        assert any("as the operator edited it" in e.text for e in run.engine.events if e.type == "observation")


def test_the_transcript_holds_the_agent_turn_as_steps():
    from engine.stored.transcript import read_transcript

    with gemini_agent(WRITE_NOTE) as agent:
        run = open_run(agent, "Write hello to note.txt")
        drive(run, lambda engine: engine.approve())
        saved = read_transcript(run.path)
        assert saved.header.scenario == "acp" and saved.header.policy == "acp"
        assert saved.events[-1].type == "run_ended" and saved.events[-1].answer == "Done."
        thoughts = [e.thought for e in saved.events if e.type == "decision"]
        assert "I'll write the note." in thoughts


def test_gemini_offers_its_modes_and_a_swap_to_plan_switches_it():
    with gemini_agent([Turn(text="Planned.")]) as agent:
        run = open_run(agent, "Plan the change")
        try:
            modes = [n for n in run.policy_names() if n.startswith("mode:")]
            assert "mode:plan" in modes and "mode:default" in modes
            run.engine.swap_policy(run.make_policy("mode:plan"))
            assert run.engine.run() == "ended"
        finally:
            run.close()
    answer = run.engine.state.ended.answer
    assert answer.startswith("[MODE_UPDATE] plan") and answer.endswith("Planned.")  # Gemini CLI says its switch in its message
    assert [(e.old, e.new) for e in run.engine.events if e.type == "policy_swapped"] == [("acp", "acp mode:plan")]

