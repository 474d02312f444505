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
`UsageError` (tui.cli.common): `main` prints it and exits 2.

Exit codes (tui.cli.common): 0 answered or ok, 3 stopped by a brake or budget
(`verify`: differs), 4 handed off to a human, 5 aborted, 2 usage error or a
file that cannot be read, 1 internal error (`bench`: a check failed).
"""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

from tui.cli.common import EXIT_USAGE, Parser, UsageError, report

__all__ = ["EXIT_USAGE", "SUBCOMMANDS", "UsageError", "build_parser", "console_main", "main"]

SUBCOMMANDS = (
    "tui.cli.listing",
    "tui.cli.run",
    "tui.cli.show",
    "tui.cli.replay",
    "tui.cli.verify",
    "tui.cli.export",
    "tui.cli.importing",
    "tui.bench",
    "tui.cli.gateway",
    "tui.cli.config",
)
"""The modules that register a subcommand, in the order `--help` lists them."""


def build_parser() -> Parser:
    parser = Parser(prog="agent-tui", description="Watch and steer AI agents one step at a time.")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(sub)
    return parser


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
    except BrokenPipeError:
        return 0


def console_main() -> None:
    """The `agent-tui` console script.

    When the cockpit quit while a policy or tool call that ignores
    interruption was still running, the run's transcript is already closed:
    leave without waiting for that thread.
    """
    import os

    code = main()
    run = sys.modules.get("tui.cli.run")  # not loaded: no run, no work left behind
    if run is not None and run.abandoned_work:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
