"""`agent-tui show FILE`: print a stored run."""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import add_command
from tui.cli.saved import FORMAT_HELP, FORMATS, load, print_run


def register(sub: Any) -> None:
    show = add_command(sub, "show", cmd_show, help="print a saved transcript")
    show.add_argument("file")
    show.add_argument("--format", default="auto", choices=FORMATS, help=FORMAT_HELP)


def cmd_show(args: argparse.Namespace) -> int:
    from engine.core.collector import collector_paused

    # The events read hold no reference cycles: they are freed by reference counting
    # before the collector is back, which would otherwise walk every one of them, on
    # its next pass and the passes after (a quarter of the CPU time of `show`).
    with collector_paused():
        transcript = load(args.file, args.format)
        print_run(transcript.header, transcript.events, unfinished=transcript.unfinished)
        del transcript
    return 0
