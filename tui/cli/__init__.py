"""The `agent-tui` command.

`agent-tui` alone opens the cockpit on the built-in default run. The headless
paths (`run --headless`, `list`, `show`, `replay --headless`, `verify`,
`export`, `bench`) never import Textual, so they start fast and work without
a terminal.

Each subcommand is one module with `register(subparsers)`, which adds its
parser and sets `handler=` to a function `(args) -> exit code`. To add one,
write the module (import anything heavy inside the handler, so `--help`
stays fast) and add its name to `SUBCOMMANDS` below. Flags of `run` are added
in `tui.cli.run.add_arguments`. Report a user's mistake by raising
`UsageError` (tui.exits): `main` prints it and exits 2.

Exit codes (tui.exits): 0 answered or ok, 3 stopped by a brake or budget
(`verify`: differs), 4 handed off to a human, 5 aborted, 6 the cockpit quit on
a run that can go on (`run --resume` continues it), 2 usage error or a file
that cannot be read, 1 internal error (`bench`: a check failed).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Sequence

from tui.cli.common import Parser
from tui.exits import EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE, Terminated, UsageError, report

__all__ = ["COMMANDS", "EXIT_USAGE", "SUBCOMMANDS", "UsageError", "build_parser", "console_main", "main"]

COMMANDS = (
    ("list", "tui.cli.listing", "list scenarios, their tasks and policies"),
    ("run", "tui.cli.run", "run a scenario (the cockpit, or --headless)"),
    ("runs", "tui.cli.runs", "list your runs, newest first (--open: a screen to open, resume or fork one)"),
    ("show", "tui.cli.show", "print a saved transcript"),
    ("replay", "tui.cli.replay", "open a saved run read-only (the cockpit, or --headless)"),
    ("verify", "tui.cli.verify", "re-run a run of scripted policies and name the first event that differs"),
    ("export", "tui.cli.export", "write a readable report of a saved run, or its OpenAI chat messages"),
    (
        "import",
        "tui.cli.importing",
        "convert a foreign trace (Claude Code, Codex, OpenAI chat, SWE-agent, Inspect AI, ReAct...) to transcripts",
    ),
    ("bench", "tui.bench", "run scenarios x policies x tasks headless and tabulate the results"),
    ("gateway", "tui.cli.gateway", "an endpoint between an agent and its model (chat completions, Anthropic Messages, OpenAI Responses, Gemini), steered here"),
    ("config", "tui.cli.config", "print the merged configuration and where each value came from"),
)
"""(name, the module whose `register` adds it, its line in `--help`), in the order `--help`
lists them. A test keeps each line equal to the one the module registers."""

SUBCOMMANDS = tuple(module for _name, module, _help in COMMANDS)
"""The modules that register a subcommand."""


class Subcommands:
    """What each command's module registers with (`register(sub)`): every command has an
    empty parser from the start, so `agent-tui --help` lists them from `COMMANDS`
    without importing any subcommand's module, and the chosen command's module fills
    its parser in (`build`), so `agent-tui show FILE` builds only `show`'s parser.
    """

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        chooser = parser.add_subparsers(dest="command", parser_class=Parser)
        self.parsers: dict[str, argparse.ArgumentParser] = {name: chooser.add_parser(name, help=help) for name, _module, help in COMMANDS}
        self.modules = {name: module for name, module, _help in COMMANDS}
        self.registered_help: dict[str, str | None] = {}
        """The `help=` each module registered its command with (a test keeps COMMANDS equal)."""

    def build(self, name: str) -> argparse.ArgumentParser:
        """`name`'s parser, filled in (its module imported and registered) the first time."""
        if name not in self.registered_help:
            importlib.import_module(self.modules[name]).register(self)
        return self.parsers[name]

    def add_parser(self, name: str, *, help: str | None = None, description: str | None = None) -> argparse.ArgumentParser:
        """The parser of command `name`, for its module to add its flags to."""
        self.registered_help[name] = help
        parser = self.parsers[name]
        parser.description = description
        return parser


class CommandLine(Parser):
    """The `agent-tui` parser: builds the chosen command's parser before it parses."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_argument("--version", action=VersionAction, help="print the version and exit")
        self.subcommands = Subcommands(self)

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        words = sys.argv[1:] if args is None else list(args)
        command = next((word for word in words if not word.startswith("-")), None)  # the only options here take no value
        if command in self.subcommands.modules:
            self.subcommands.build(command)
        return super().parse_known_args(args, namespace)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """As argparse's, but a word given after the command that it does not take is refused with
        that command's usage (`usage: agent-tui run ...`), not the top one's."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            words = sys.argv[1:] if args is None else list(args)
            command = getattr(parsed, "command", None) or ""
            chosen = self.subcommands.parsers.get(command)
            before = words[: words.index(command)] if command in words else words
            (self if chosen is None or any(word in extras for word in before) else chosen).error(
                f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def installed_version() -> str:
    """agent-tui's version: the installed package's, else the one pyproject.toml beside the code gives."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-tui")
    except PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
        except (OSError, ValueError, KeyError):
            return "unknown"


class VersionAction(argparse.Action):
    """`--version`: the version is looked up only when asked for, so other commands start as fast."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        print(f"agent-tui {installed_version()}")
        parser.exit(0)


def build_parser() -> CommandLine:
    """The command line; each subcommand's own parser is built when it is chosen (`Subcommands`)."""
    return CommandLine(prog="agent-tui", description="Watch and steer AI agents one step at a time.")


def main(argv: Sequence[str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv) == ["list"]:
        # `list` takes no options: answered without building every subcommand's parser
        from tui.cli.listing import cmd_list

        try:
            return cmd_list()
        except BrokenPipeError:
            return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            args = parser.parse_args(["run", *(argv or [])])
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help()
            return EXIT_USAGE
        return handler(args)
    except UsageError as exc:
        report(str(exc))
        return EXIT_USAGE
    except Terminated:
        report("terminated (SIGTERM)")
        return EXIT_TERMINATED
    except BrokenPipeError:
        return 0


def console_main() -> None:
    """The `agent-tui` console script.

    When the cockpit quit while a policy or tool call that ignores
    interruption was still running, the run's transcript is already closed:
    leave without waiting for that thread.
    """
    import os

    try:
        code = main()
    except KeyboardInterrupt:  # a run records its own end; any other command just stops
        print("\nagent-tui: interrupted (Ctrl+C)", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    run = sys.modules.get("tui.cli.run")  # not loaded: no run, no work left behind
    if run is not None and run.abandoned_work:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
