"""`agent-tui export FILE`: a readable Markdown report of a stored run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tui.cli.common import EXIT_OK, UsageError
from tui.cli.saved import FORMAT_HELP, FORMATS, load


def register(sub: Any) -> None:
    export = sub.add_parser("export", help="write a readable report of a saved run")
    export.add_argument("file")
    export.add_argument("--format", default="markdown", choices=["markdown"], help="report format (markdown)")
    export.add_argument("--from", dest="source_format", default="auto", choices=FORMATS, help=FORMAT_HELP)
    export.add_argument("-o", "--out", help="write here instead of stdout")
    export.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from tui.export import markdown_report

    transcript = load(args.file, args.source_format)
    report_text = markdown_report(transcript.header, transcript.events, source=args.file)
    if args.out:
        try:
            Path(args.out).write_text(report_text + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{args.out}: cannot write: {exc.strerror or exc}") from None
        print(f"report: {args.out}", file=sys.stderr)
    else:
        print(report_text)
    return EXIT_OK
