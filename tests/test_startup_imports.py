"""Headless commands import only what they use: checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from tests.support.imports import ROOT, heavy, loaded_by


def test_help_imports_neither_textual_nor_the_model_client_nor_the_event_models():
    code, modules = loaded_by("--help")
    assert code == 0
    assert "tui.cli" in modules  # the probe ran the real command
    assert heavy(modules, "textual", "rich", "httpx", "pydantic", "engine.model", "engine.core.events", "concurrent.futures") == []


def test_subcommand_help_stays_as_light():
    for command in ("run", "show", "replay", "bench"):
        code, modules = loaded_by(command, "--help")
        assert code == 0
        assert heavy(modules, "textual", "rich", "httpx", "pydantic", "engine.model") == [], command


def test_list_imports_neither_textual_nor_the_model_client():
    code, modules = loaded_by("list")
    assert code == 0
    assert "scenarios" in modules
    assert heavy(modules, "textual", "rich", "httpx", "engine.model") == []
    # the built-in scenarios are listed from their catalogue: no scenario module, no engine, no pydantic
    assert heavy(modules, "pydantic", "engine", "importlib.metadata", *(f"scenarios.{n}" for n in ("support", "grid", "mcp"))) == []
    assert heavy(modules, "tui.cli.run", "tui.cli.gateway", "tui.bench") == []  # no other subcommand's parser is built


def test_help_lists_every_command_without_importing_one():
    code, modules = loaded_by("--help")
    assert code == 0
    from tui.cli import SUBCOMMANDS

    assert heavy(modules, *SUBCOMMANDS) == []


def test_a_command_builds_only_its_own_parser():
    code, modules = loaded_by("show", "--help")
    assert code == 0
    assert "tui.cli.show" in modules
    assert heavy(modules, "tui.cli.run", "tui.cli.gateway", "tui.cli.replay", "tui.bench", "tui.cli.importing") == []


def three_step_transcript(path: Path) -> Path:
    """The support desk's return, approved: a transcript of 3 steps written by the real engine."""
    subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "support", "--headless", "--approve", "all", "-o", str(path)],
        cwd=ROOT, capture_output=True, check=True, timeout=120,
    )
    return path


def test_show_imports_the_reader_and_the_words_it_prints_only(tmp_path):
    code, modules = loaded_by("show", str(three_step_transcript(tmp_path / "run.jsonl")))
    assert code == 0
    assert {"engine.stored.reader", "tui.plain"} <= modules  # the probe read and printed the run
    assert heavy(modules, "textual", "rich", "httpx", "scenarios", "engine.model", "engine.sessions", "engine.mcp", "engine.gateway") == []
    # neither the engine nor the importers of other tools' logs
    assert heavy(modules, "engine.core.engine", "engine.core.approvals", "engine.core.policy", "engine.core.tools", "engine.core.state") == []
    assert sorted(m for m in modules if m.startswith("engine.stored.importers.")) == ["engine.stored.importers.formats"]


def test_the_listed_help_lines_are_the_ones_the_commands_register():
    """COMMANDS keeps each command's `--help` line so that listing them imports nothing;
    it must say what the command's module says."""
    from tui.cli import COMMANDS, build_parser

    parser = build_parser()
    sub = parser.subcommands
    for name, _module, help in COMMANDS:
        built = sub.build(name)
        assert built.prog == f"agent-tui {name}"
        assert sub.registered_help[name] == help, name
    args = parser.parse_args(["show", "run.jsonl"])
    assert (args.command, args.file, args.handler.__name__) == ("show", "run.jsonl", "cmd_show")
