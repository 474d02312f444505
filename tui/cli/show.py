"""`agent-tui show FILE`: print a stored run."""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import add_command, file_name
from tui.cli.saved import add_format_argument, add_run_argument, list_runs, print_saved


def register(sub: Any) -> None:
    show = add_command(sub, "show", cmd_show, help="print a saved transcript")
    show.add_argument("file", type=file_name)
    add_format_argument(show)
    which = show.add_mutually_exclusive_group()
    add_run_argument(which)
    which.add_argument("--runs", action="store_true", help="list the runs the file holds (number, id, steps, task) instead")


def cmd_show(args: argparse.Namespace) -> int:
    if args.runs:
        list_runs(args.file, args.format)
    else:
        print_saved(args.file, args.format, run=args.run)
    return 0
