"""The Markdown report: steps, approvals, the end, usage; agent text cannot inject Markdown."""

from __future__ import annotations

from pathlib import Path

from engine import Decision
from engine.stored.importers import load_any
from engine.stored.transcript import read_transcript
from tests.support.helpers import counting_run, rejected_support_run
from tui.export import code, escape, inline, markdown_report

DATA = Path(__file__).resolve().parent / "data"


def _support_with_rejection(tmp_path):
    path = tmp_path / "support.jsonl"
    rejected_support_run(path)
    return path


def test_report_has_steps_approvals_end_and_usage(tmp_path):
    t = read_transcript(_support_with_rejection(tmp_path))
    report = markdown_report(t.header, t.events, source="support.jsonl")
    assert report.startswith("# Run report: support · return-1187")
    for section in ("## Steps", "## End", "## Usage"):
        assert section in report
    assert "### Step 1 · scripted" in report and "### Step 3 · scripted" in report
    assert "> **Approval** `open_return_request(order_id=\"1187\") needs approval (irreversible tool)`" in report
    assert "**Rejected** rejected by operator: the customer changed their mind" in report
    assert "**Run ended: answer after 3 steps**: final answer." in report
    assert "| Steps | 3 |" in report and "| Approvals asked | 1 |" in report and "| Rejections | 1 |" in report
    assert "| `get_order_status` | 1 |" in report
    assert "(estimated)" in report


def test_unfinished_and_imported_runs(tmp_path):
    t = load_any(DATA / "trace_000_stuck.txt")
    report = markdown_report(t.header, t.events)
    assert "The run did not end (status: ready after step 2)." in report
    t = load_any(DATA / "trace_000_hallucinating.txt")
    report = markdown_report(t.header, t.events)
    assert "**Error** from `web\\_search`" not in report  # tool names are in code spans, not escaped
    assert "**Error** from `web_search` (the tool did not run):" in report


def test_hostile_text_stays_inert():
    hostile = "![x](http://evil/) <script>alert(1)</script> [link](http://a) **bold** # head\x1b[31m"
    run = counting_run(Decision.act(hostile, "echo", text="```\n# not a heading\n```"), Decision.final(hostile, hostile))
    run.engine.run()
    report = markdown_report(run.engine.header, run.engine.events)
    assert "<script>" not in report and "![x](" not in report and "[link](" not in report and "\x1b" not in report
    assert "\\<script\\>" in report and "\\!\\[x\\]" in report
    assert "````text" in report, "a fence longer than the backticks inside"


def test_helpers():
    assert escape("a*b_c") == "a\\*b\\_c"
    assert inline("a`b") == "``a`b``"
    assert code("x ``` y").startswith("````text\n")


def test_cli_export_to_a_file_and_stdout(tmp_path, capsys):
    from tui.cli import main

    path = _support_with_rejection(tmp_path)
    out = tmp_path / "report.md"
    assert main(["export", str(path), "--format", "markdown", "-o", str(out)]) == 0
    assert out.read_text().startswith("# Run report: support")
    assert f"report: {out}" in capsys.readouterr().err
    assert main(["export", str(DATA / "chat_calculator.json")]) == 0
    assert "# Run report: imported · chat" in capsys.readouterr().out
    assert main(["export", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
