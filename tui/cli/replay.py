"""`agent-tui replay FILE`: the read-only viewer, or `--headless` printing as `show` does.

The viewer (tui.replay_app) is imported only when it opens. It returns the run
the operator forked, if any; this command then opens the cockpit on it.
"""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import add_command, file_name, step_or_end
from tui.cli.saved import add_format_argument, add_run_argument, load, position_for, print_saved
from tui.exits import EXIT_OK, EXIT_USAGE, UsageError, report


def register(sub: Any) -> None:
    replay = add_command(sub, "replay", cmd_replay, help="open a saved run read-only (the cockpit, or --headless)")
    replay.add_argument("file", type=file_name)
    replay.add_argument("--headless", action="store_true", help="print the run as `show` does, without the cockpit")
    replay.add_argument("--at", type=step_or_end, metavar="N", help="open (or print up to) the end of step N")
    add_format_argument(replay)
    add_run_argument(replay)


def open_timeline(path: str, fmt: str = "auto", run: str | None = None) -> Any:
    """A Timeline over any supported file (of several runs, the one `run` names): an
    agent-tui transcript is opened lazily (fast on long runs), a foreign log is imported first."""
    from engine.stored.importers import detect_format
    from engine.stored.replay import Timeline
    from engine.stored.transcript import TranscriptError

    if fmt == "auto":
        try:
            with open(path, "rb") as f:
                head = f.read(1 << 16).decode("utf-8", errors="replace")
            first = next((line for line in head.splitlines() if line.strip()), "")
            fmt = detect_format(path, first) if first else "auto"
        except (OSError, TranscriptError):
            fmt = "auto"
    if fmt == "jsonl":
        try:
            timeline = Timeline.open(path, run=run)
        except TranscriptError as exc:
            raise UsageError(str(exc)) from None
        for warning in timeline.warnings:
            report(f"warning: {warning}")
        return timeline
    transcript = load(path, fmt, run)
    return Timeline(transcript.header, transcript.events, path=path, warnings=transcript.warnings)


def cmd_replay(args: argparse.Namespace) -> int:
    if not args.headless:
        timeline = open_timeline(args.file, args.format, args.run)
        if args.at == "end":  # no pass over the run: the viewer draws the last events while it indexes
            position: int | None = len(timeline)
        else:
            position = None if args.at is None else position_for(timeline, args.at, args.file)
        return open_replay(timeline, position)
    print_saved(args.file, args.format, args.at, args.run)
    return EXIT_OK


def open_replay(timeline: Any, at: int | None = None) -> int:
    """Open the replay viewer on a Timeline at a position (None: the viewer's choice);
    a run forked there continues in the cockpit."""
    try:
        from tui.replay_app import run_viewer  # type: ignore[import-not-found]
    except ImportError as exc:
        if getattr(exc, "name", None) not in ("tui.replay_app", None):
            raise
        report("the replay viewer needs the cockpit; use --headless")
        return EXIT_USAGE
    from engine.stored.transcript import TranscriptError

    try:
        forked = run_viewer(timeline, at)
    except TranscriptError as exc:  # the sentence `show` refuses the file with
        raise UsageError(str(exc)) from None
    if forked is None:
        return EXIT_OK
    from tui.cli.run import open_cockpit

    return open_cockpit(forked)
