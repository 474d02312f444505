"""The command-line side of saved runs: replay, verify, export, run --resume / --fork.

Headless paths only; the replay viewer (tui.replay_app) is imported lazily
when the cockpit opens a transcript, so nothing here loads Textual.

Exit codes: 0 ok, 2 usage error or a file that cannot be read, 1 internal
error; `verify` exits 3 when the re-run differs from the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_DIFFERS = 3
FORMAT_HELP = "input format: auto (detect, the default), jsonl (agent-tui), trace (Question:/Thought:/Action: text), chat (OpenAI-style messages)"


class ReplayUsageError(Exception):
    """Reported in one line, exit code 2."""


def _err(message: str) -> None:
    print(f"agent-tui: {message}", file=sys.stderr)


def _at(text: str) -> int | str:
    if text == "end":
        return "end"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a step number or 'end', got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("steps start at 0")
    return value


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """`run --resume FILE`, `run --fork FILE --at N`."""
    run.add_argument("--resume", metavar="FILE", help="continue a run that did not end, appending to FILE")
    run.add_argument("--fork", metavar="FILE", help="start a new run from step --at of FILE (no tool runs again)")
    run.add_argument(
        "--at",
        type=_at,
        metavar="N",
        help="with --fork: keep steps 1..N of the file and let --policy make step N+1 (0 = from the task; "
        "'end' = the last step that can be kept; default end)",
    )


def add_parsers(sub: Any) -> None:
    replay = sub.add_parser("replay", help="open a saved run read-only (the cockpit, or --headless)")
    replay.add_argument("file")
    replay.add_argument("--headless", action="store_true", help="print the run as `show` does, without the cockpit")
    replay.add_argument("--at", type=_at, metavar="N", help="open (or print up to) the end of step N")
    replay.add_argument("--format", default="auto", choices=["auto", "jsonl", "trace", "chat"], help=FORMAT_HELP)

    verify = sub.add_parser(
        "verify",
        help="re-run a run of scripted policies and name the first event that differs",
        description="Re-run a saved run of scripted policies in a fresh world, replaying the operator's "
        "answers from the file. Exit 0 when every event matches, 3 when one differs (it is named), "
        "2 when the file cannot be read or re-run.",
    )
    verify.add_argument("file")

    export = sub.add_parser("export", help="write a readable report of a saved run")
    export.add_argument("file")
    export.add_argument("--format", default="markdown", choices=["markdown"], help="report format (markdown)")
    export.add_argument("--from", dest="source_format", default="auto", choices=["auto", "jsonl", "trace", "chat"], help=FORMAT_HELP)
    export.add_argument("-o", "--out", help="write here instead of stdout")


def load(path: str, fmt: str = "auto"):
    """Any supported run file as a Transcript; warnings go to stderr."""
    from engine.stored.importers import load_any
    from engine.stored.transcript import TranscriptError

    try:
        transcript = load_any(path, fmt)
    except TranscriptError as exc:
        raise ReplayUsageError(str(exc)) from None
    for warning in transcript.warnings:
        _err(f"warning: {warning}")
    return transcript


def print_run(header, events, *, unfinished_note: bool = True) -> None:
    from tui.plain import event_lines, header_lines

    for line in header_lines(header):
        print(line)
    for event in events:
        for line in event_lines(event):
            print(line)
    if unfinished_note and not any(e.type == "run_ended" for e in events):
        if header.scenario == "imported":
            print("outcome: unfinished (the log ends here)")
        else:
            print("outcome: unfinished (the run did not end; `agent-tui run --resume` continues it)")


def open_timeline(path: str, fmt: str = "auto"):
    """A Timeline over any supported file: an agent-tui transcript is opened
    lazily (fast on long runs), a foreign log is imported first."""
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
            timeline = Timeline.open(path)
        except TranscriptError as exc:
            raise ReplayUsageError(str(exc)) from None
        for warning in timeline.warnings:
            _err(f"warning: {warning}")
        return timeline
    transcript = load(path, fmt)
    return Timeline(transcript.header, transcript.events, path=path, warnings=transcript.warnings)


def _position_for(timeline, at, path: str) -> int:
    last = timeline.steps()
    step = last if at == "end" else at
    if step > last:
        raise ReplayUsageError(f"{path}: the run has {last} steps; --at takes 0..{last} or 'end'")
    return timeline.position_after_step(step) if step < last else len(timeline)


def cmd_replay(args: argparse.Namespace) -> int:
    if not args.headless:
        timeline = open_timeline(args.file, args.format)
        position = None if args.at is None else _position_for(timeline, args.at, args.file)
        return open_replay(timeline, position)
    transcript = load(args.file, args.format)
    position = len(transcript.events)
    if args.at is not None:
        from engine.stored.replay import Timeline

        position = _position_for(Timeline(transcript.header, transcript.events), args.at, args.file)
    print_run(transcript.header, transcript.events[:position], unfinished_note=position == len(transcript.events))
    if position < len(transcript.events):
        print(f"(stopped at event {position} of {len(transcript.events)}, the end of step {args.at})")
    return EXIT_OK


def open_replay(timeline, at: int | None = None) -> int:
    """Open the cockpit's replay viewer on a Timeline (`tui.replay_app.open_replay(timeline, at)`,
    imported lazily); `at` is a position (None: the viewer's choice)."""
    try:
        from tui.replay_app import open_replay as open_viewer  # type: ignore[import-not-found]
    except ImportError as exc:
        if getattr(exc, "name", None) not in ("tui.replay_app", None):
            raise
        _err("the replay viewer needs the cockpit; use --headless")
        return EXIT_USAGE
    return open_viewer(timeline, at)


def cmd_verify(args: argparse.Namespace) -> int:
    from engine.sessions.verify import VerifyError, verify_run
    from tui.plain import event_lines

    transcript = load(args.file)
    scenario = _scenario_of(transcript, None)
    try:
        result = verify_run(scenario, transcript)
    except VerifyError as exc:
        raise ReplayUsageError(str(exc)) from None
    if result.match:
        print(f"match: {result.message}")
        return EXIT_OK
    line = _line_of(args.file, result.index)
    print(f"differs: {result.message}" + (f" ({args.file}:{line})" if line else ""))
    if result.expected is not None:
        print("  in the file:")
        for text in event_lines(result.expected):
            print(f"  {text}")
    if result.got is not None:
        print("  in the re-run:")
        for text in event_lines(result.got):
            print(f"  {text}")
    return EXIT_DIFFERS


def _line_of(path: str, index: int | None) -> int | None:
    """The file line of event `index` (0-based) in an agent-tui transcript."""
    if index is None:
        return None
    try:
        lines = Path(path).read_bytes().splitlines()
    except OSError:
        return None
    seen = -1  # the header is the first non-blank line
    for number, raw in enumerate(lines, 1):
        if raw.strip():
            if seen == index:
                return number
            seen += 1
    return None


def cmd_export(args: argparse.Namespace) -> int:
    from tui.export import markdown_report

    transcript = load(args.file, args.source_format)
    report = markdown_report(transcript.header, transcript.events, source=args.file)
    if args.out:
        try:
            Path(args.out).write_text(report + "\n", encoding="utf-8")
        except OSError as exc:
            raise ReplayUsageError(f"{args.out}: cannot write: {exc.strerror or exc}") from None
        print(f"report: {args.out}", file=sys.stderr)
    else:
        print(report)
    return EXIT_OK


def _scenario_of(transcript, name: str | None):
    import scenarios

    header = transcript.header
    if header.scenario == "imported":
        raise ReplayUsageError(
            f"{transcript.path}: an imported {header.options.get('format', 'foreign')} log has no world to act on; "
            "it can be replayed, shown and exported, not resumed, forked or verified"
        )
    wanted = name or header.scenario
    try:
        scenario = scenarios.get(wanted)
    except scenarios.ScenarioError as exc:
        raise ReplayUsageError(f"{exc} (the run was of scenario '{header.scenario}')") from None
    if scenario.name != header.scenario:
        raise ReplayUsageError(f"{transcript.path}: the run is of scenario '{header.scenario}', not '{scenario.name}'")
    return scenario


def make_continued_run(args: argparse.Namespace, *, interactive: bool):
    """The Run for `run --resume FILE` or `run --fork FILE [--at N]`."""
    from engine.sessions.resume import ResumeError, fork_position, fork_run, resume_run

    if args.resume and args.fork:
        raise ReplayUsageError("give --resume or --fork, not both")
    if args.at is not None and not args.fork:
        raise ReplayUsageError("--at goes with --fork")
    source = args.resume or args.fork
    transcript = load(source)
    scenario = _scenario_of(transcript, args.scenario)
    policy: Any = args.policy
    model = None
    if policy == "human" and not interactive:
        raise ReplayUsageError("the human policy needs the cockpit; drop --headless")
    if policy == "model" and "model" not in scenario.policies:
        from engine.model.policy import ModelPolicy, config_from_args

        try:
            model = config_from_args(args)
        except ValueError as exc:
            raise ReplayUsageError(str(exc)) from None
        if model is None:
            raise ReplayUsageError("--policy model needs a model: give --model NAME (or set AGENT_TUI_MODEL)")
        policy = ModelPolicy(model)
    try:
        if args.resume:
            if args.out:
                raise ReplayUsageError("--resume appends to its own file; --out goes with --fork")
            run = resume_run(scenario, transcript, policy, interactive=interactive, approve=args.approve)
        else:
            position = fork_position(transcript, "end" if args.at is None else args.at)
            run = fork_run(scenario, transcript, position, policy, out=args.out, interactive=interactive, approve=args.approve)
    except ResumeError as exc:
        raise ReplayUsageError(str(exc)) from None
    except OSError as exc:
        raise ReplayUsageError(f"cannot write the transcript: {exc}") from None
    if model is not None:
        run.model = model
    if not interactive and run.engine.status == "awaiting_approval" and not sys.stdin.isatty():
        pending = run.engine.state.pending
        run.close()
        raise ReplayUsageError(
            f"the run is waiting for approval of {pending.tool} (asked again, never run on its own); "
            "resume it in a terminal to answer"
        )
    return run


def dispatch(args: argparse.Namespace) -> int | None:
    """Run `replay`, `verify` or `export`; None for other commands."""
    try:
        if args.command == "replay":
            return cmd_replay(args)
        if args.command == "verify":
            return cmd_verify(args)
        if args.command == "export":
            return cmd_export(args)
    except ReplayUsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    return None
