"""`agent-tui import FILE [-o OUT.jsonl] [--format NAME]`: a foreign trace written as agent-tui transcripts.

One run is written to OUT (default: FILE's name with `.agent-tui.jsonl`
next to it); a file of several runs (an eval log's samples, a prompt with
six trajectories, fine-tune data, agent-tui transcripts joined with `cat`)
to OUT-1.jsonl, OUT-2.jsonl, ... The paths
go to stdout, one a line, after a line saying how many runs there were;
warnings (parts kept as unrecognised notes, skipped lines) to stderr. A file
that is not empty, or a symbolic link, is never written (`engine.stored.lock.open_new`).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import Any

from tui.cli.common import add_command, file_name
from tui.cli.saved import add_format_argument
from tui.exits import EXIT_OK, Terminated, UsageError, report


def register(sub: Any) -> None:
    command = add_command(sub, "import", cmd_import)
    command.add_argument("file", type=file_name)
    command.add_argument("-o", "--out", type=file_name, metavar="OUT.jsonl", help="where to write (several runs: OUT-1.jsonl, OUT-2.jsonl, ...)")
    add_format_argument(command)


def out_paths(source: Path, out: str | None, count: int) -> list[Path]:
    """Where `count` runs of `source` go."""
    base = Path(out) if out else source.with_name(source.name.split(".")[0] + ".agent-tui.jsonl")
    if count == 1:
        return [base]
    stem, suffix = (base.name[: -len(".jsonl")], ".jsonl") if base.name.endswith(".jsonl") else (base.name, "")
    return [base.with_name(f"{stem}-{n}{suffix}") for n in range(1, count + 1)]


def cmd_import(args: argparse.Namespace) -> int:
    """Convert a foreign trace (Claude Code, Codex, OpenAI chat, SWE-agent, Inspect AI, ReAct...) to transcripts.

    Convert a trace written by another tool into agent-tui transcripts, one per run, that show,
    replay, export and fork open like any run. The format is detected from the content.
    """
    from engine.core.collector import collector_paused
    from tui.run_guard import sigterm_calls

    def terminated(signum: int, frame: object) -> None:
        raise Terminated  # (a transcript half written is removed on the way out)

    with collector_paused(), sigterm_calls(terminated):  # the runs read live until the command ends: no pass over them when the reading is done
        return _import(args)


def _import(args: argparse.Namespace) -> int:
    from engine.stored.importers import made_runs
    from engine.stored.importers.formats import starts_with_header
    from engine.stored.importers.halves import HalfLost
    from engine.stored.reader import run_spans
    from engine.stored.transcript import TranscriptError, read_bytes, write_transcript

    source = Path(args.file)
    try:
        data = read_bytes(source)
        own = args.format == "jsonl" or (args.format == "auto" and starts_with_header(data))
        if own and len(run_spans(data)) == 1:
            raise UsageError(f"{source} is already an agent-tui transcript: show, replay, export and run --fork "
                             "open it as it is (nothing was written)")
        runs = made_runs(str(source), data, args.format, halves=True)  # each run's events made as they are written
    except TranscriptError as exc:
        raise UsageError(str(exc)) from None
    paths = out_paths(source, args.out, len(runs))
    from engine.stored.lock import TranscriptBusy, check_new

    for path in paths:  # all of them before the first is written
        try:
            check_new(path)
        except (FileExistsError, IsADirectoryError) as exc:
            raise UsageError(f"{exc} (nothing was written)") from None
        except OSError as exc:  # (a file where a folder should be, a name too long, a loop of links)
            raise UsageError(f"{path}: cannot write: {exc.strerror or exc} (nothing was written)") from None
    for run in runs:
        for warning in run.warnings:
            report(f"warning: {warning}")
    fmt = "agent-tui" if own else runs[0].header.options.get("format", args.format)
    from engine.core.text import clean  # a file's name, downloaded with the file, may carry escape sequences

    _say(clean(f"{source}: {len(runs)} {fmt} run{'s' if len(runs) != 1 else ''}") + (", one transcript each:" if len(runs) > 1 else ":"))
    for run, path in zip(runs, paths):
        try:
            try:
                write_transcript(path, run.header, run.events, run.tail)
            except HalfLost as exc:  # (a run made by two processes: one run in the file)
                _unwritten(path)
                report(f"warning: {exc}; read again in one process")
                (run,) = made_runs(str(source), data, args.format)
                write_transcript(path, run.header, run.events)
        except TranscriptError as exc:
            raise UsageError(f"{exc}{_unwritten(path)}") from None
        except (FileExistsError, TranscriptBusy) as exc:  # raised before anything is written
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot write: {exc.strerror or exc}{_unwritten(path)}") from None
        except BaseException:  # the events are made as they are written: a fault leaves no half a run
            _unwritten(path)
            raise
        _say(clean(f"{path}  ({run.steps} step{'s' if run.steps != 1 else ''})"))
    return EXIT_OK


def _say(line: str) -> None:
    """A line of the import's summary on stdout; once no one reads it (`| head -0`), the rest of
    the summary goes nowhere and the import goes on: the transcripts are what it makes."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        nowhere = os.open(os.devnull, os.O_WRONLY)
        os.dup2(nowhere, sys.stdout.fileno())
        os.close(nowhere)


def _unwritten(path: Path) -> str:
    """Remove what was written of a transcript an import could not finish (the path was checked
    new before the first write: a regular file, if anything); the words that say so. Nothing but
    a regular file is ever removed."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return ""  # refused before anything was written
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError:
        return f" ({path} is incomplete)"
    return " (nothing was kept)"
