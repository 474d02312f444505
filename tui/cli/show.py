"""`agent-tui show FILE`: print a stored run."""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import add_command
from tui.cli.saved import FORMAT_HELP, FORMATS, print_saved


def register(sub: Any) -> None:
    show = add_command(sub, "show", cmd_show, help="print a saved transcript")
    show.add_argument("file")
    show.add_argument("--format", default="auto", choices=FORMATS, help=FORMAT_HELP)


def cmd_show(args: argparse.Namespace) -> int:
    print_saved(args.file, args.format)
    return 0
