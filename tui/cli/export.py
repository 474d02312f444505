"""`agent-tui export FILE`: a readable Markdown report of a stored run."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from engine.core.text import BIDI
from tui.cli.common import add_command, file_name
from tui.cli.saved import FORMATS, add_format_argument, add_run_argument, load
from tui.exits import EXIT_OK, UsageError, report


_C1 = re.compile(f"[\x7f-\x9f\u2028\u2029{BIDI}]")
"""What json.dumps leaves raw with ensure_ascii=False but a terminal may obey (C1 controls such as
CSI, U+009B), an editor break a line at, or that reorders what is read (U+202E): written as \\u
escapes, which read back the same."""


def register(sub: Any) -> None:
    export = add_command(sub, "export", cmd_export, help="write a readable report of a saved run, or its OpenAI chat messages")
    export.add_argument("file", type=file_name)
    export.add_argument(
        "--format",
        default="markdown",
        type=_output_format,
        metavar="{markdown,chat}",
        help="markdown: a readable report (default); chat: OpenAI chat messages JSON ({\"messages\", \"tools\"}), usable as fine-tune data",
    )
    add_format_argument(export, "--from", dest="source_format")
    add_run_argument(export)
    export.add_argument("-o", "--out", type=file_name, help="write here instead of stdout")


def cmd_export(args: argparse.Namespace) -> int:
    from engine.core.collector import collector_paused

    if args.out and _same_file(args.out, args.file):
        raise UsageError(f"{args.out}: is the file being exported; choose another name with -o (nothing was written)")
    with collector_paused():  # as `print_saved` (tui/cli/saved.py): what is read is freed before the collector is back
        report_text = _report(args)
    if args.out:
        _write_new(Path(args.out), (report_text + "\n").encode("utf-8"))
        from engine.core.text import clean

        print(clean(f"report: {args.out}"), file=sys.stderr)
    else:
        print(report_text)
    return EXIT_OK


def _write_new(path: Path, data: bytes) -> None:
    """`data` into `path` as every new file is written (`engine.stored.lock.open_new`): never
    over a file that holds something, through a link, or into a transcript a run holds."""
    import os

    from engine.stored.lock import TranscriptBusy, open_new

    try:
        fd = open_new(path)
    except (FileExistsError, IsADirectoryError, TranscriptBusy) as exc:
        raise UsageError(f"{exc} (nothing was written)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _output_format(text: str) -> str:
    """export's --format names what is written; an input format (`--format codex`) belongs to --from."""
    if text in ("markdown", "chat"):
        return text
    if text in FORMATS:
        raise argparse.ArgumentTypeError(f"{text!r} is an input format: give it as --from {text} "
                                         "(--format is what is written: markdown or chat)")
    raise argparse.ArgumentTypeError(f"expected markdown or chat, got {text!r}")


def _same_file(out: str, source: str) -> bool:
    """-o names the source itself (through a link too): writing the report would destroy it."""
    try:
        return Path(out).samefile(source)
    except OSError:
        return False


def _report(args: argparse.Namespace) -> str:
    transcript = load(args.file, args.source_format, args.run)
    if args.format == "chat":
        import json

        from engine.stored.chat_export import chat_messages

        document, left_out = chat_messages(transcript.header, transcript.events)
        if left_out:
            report(f"warning: {left_out} sub-agent or unmapped note{'s have' if left_out != 1 else ' has'} no place in a chat and {'are' if left_out != 1 else 'is'} left out")
        report_text = _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(document, ensure_ascii=False, indent=2))
    else:
        from tui.export import markdown_report

        report_text = markdown_report(transcript.header, transcript.events, source=args.file, unfinished=transcript.unfinished)
    return report_text
