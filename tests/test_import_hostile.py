"""Hostile foreign traces and the commands that open them: each is refused with one line naming the
file (exit 2), in bounded time and memory, and nothing the user owns is destroyed."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from engine.stored.importers import runs_from_bytes
from engine.stored.transcript import TranscriptError
from tui.cli import main

TRACES = Path(__file__).resolve().parent / "data" / "traces"


def _eval_of_many_members(members: int, size: int) -> bytes:
    """An .eval archive whose samples are each under the 32 MiB member cap but add up to far more."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
        body = b'{"messages": [' + b" " * size + b"]}"
        for n in range(1, members + 1):
            archive.writestr(f"samples/{n}_epoch_1.json", body)
    return out.getvalue()


def test_an_eval_whose_samples_add_up_to_a_zip_bomb_is_refused_before_unpacking():
    data = _eval_of_many_members(24, 16 << 20)  # 384 MiB of samples in an archive under 2 MB
    assert len(data) < 2 << 20
    with pytest.raises(TranscriptError, match=r"^bomb\.eval: the samples in the archive unpack to 384 MiB, .*zip bomb"):
        runs_from_bytes("bomb.eval", data)


def test_an_eval_of_ordinary_ratio_is_still_read():
    data = (TRACES / "inspect_ai_message_deduplication.eval").read_bytes()
    (run,) = runs_from_bytes("log.eval", data)
    assert run.events[-1].outcome == "answer"


def test_export_refuses_to_write_over_the_file_it_exports(tmp_path, capsys):
    source = tmp_path / "run.traj"
    original = (TRACES / "swe_agent_test_repo.traj").read_bytes()
    source.write_bytes(original)
    link = tmp_path / "link.traj"
    link.symlink_to(source)
    for out in (source, link):
        assert main(["export", str(source), "-o", str(out)]) == 2
        assert "is the file being exported" in capsys.readouterr().err
    assert main(["export", str(link), "--format", "chat", "-o", str(source)]) == 2
    assert source.read_bytes() == original
    assert main(["export", str(source), "-o", str(tmp_path / "report.md")]) == 0
    assert (tmp_path / "report.md").read_text().startswith("# Run report")


def test_export_chat_writes_c1_controls_as_escapes_that_read_back_the_same(tmp_path, capsys):
    hostile = "red\x1b[31m csi\x9b2J del\x7f line\u2028sep"
    source = tmp_path / "chat.json"
    source.write_text(json.dumps([{"role": "user", "content": hostile}, {"role": "assistant", "content": "ok " + hostile}]))
    assert main(["export", str(source), "--format", "chat"]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x9b\x7f\u2028")
    messages = json.loads(out)["messages"]
    assert [m["content"] for m in messages] == [hostile, "ok " + hostile]
