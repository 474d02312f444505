"""`agent-tui runs`: the runs in the data folder (or `--dir`), newest first, one line each.

The listing is plain text, one run a line, to read or to pipe (`--json` for
scripts); `--open` shows the same list as a screen to filter as you type and
open a run in the replay viewer, resume it (`r`) or fork it (`f`), as the
cockpit's and the viewer's `l` do. The columns and cells are tui.run_list's,
the screen's too. Each file is read at its ends only (engine.stored.catalog).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from tui.cli.common import add_command
from tui.exits import EXIT_OK, EXIT_USAGE, Terminated, UsageError, report
from tui.run_list import RunChoice, cells, read_folder, runs_folder, table


def register(sub: Any) -> None:
    runs = add_command(sub, "runs", cmd_runs, help="list your runs, newest first (--open: a screen to open, resume or fork one)")
    runs.add_argument("filter", nargs="?", default="", help="show only runs whose task, scenario, policy or outcome holds this text")
    runs.add_argument("--dir", metavar="FOLDER", help="list the runs in FOLDER (default: the runs folder of the data folder)")
    runs.add_argument("--json", action="store_true", help="print the runs as one JSON array, for scripts")
    runs.add_argument("--open", action="store_true", help="show them in a screen: filter as you type, enter replays, r resumes, f forks")


def cmd_runs(args: argparse.Namespace) -> int:
    from engine.stored.catalog import matches

    folder = runs_folder(args.dir)
    if args.open:
        return open_screen(folder, args.filter, given=args.dir is not None)
    summaries = [s for s in read_folder(folder, given=args.dir is not None) if not args.filter or matches(s, args.filter)]
    if args.json:
        print(json.dumps([s.as_json() for s in summaries], ensure_ascii=False, indent=1))
        return EXIT_OK
    if not summaries:
        report(f"no runs in {folder}" + (f" holding {args.filter!r}" if args.filter else ""))
        return EXIT_OK
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    print("\n".join(table([cells(s, folder) for s in summaries], width)))
    return EXIT_OK


def open_screen(folder: Path, text: str, *, given: bool) -> int:
    """The runs screen in a terminal; what the operator chose there runs as its command does."""
    if not sys.stdout.isatty():
        raise UsageError("--open shows a screen and needs a terminal; without it the runs are printed")
    try:
        from tui.screens.runs import RunsApp
    except ImportError as exc:
        if getattr(exc, "name", None) not in ("tui.screens.runs", "textual", None):
            raise
        report("the runs screen needs the cockpit; list them without --open")
        return EXIT_USAGE
    from tui.run_guard import sigterm_closes

    app = RunsApp(folder, text, given=given)
    with sigterm_closes(app):
        choice = app.run()
    if app.terminated:
        raise Terminated
    if not isinstance(choice, RunChoice):
        return EXIT_OK
    from tui.cli import main

    return main(choice.argv())
