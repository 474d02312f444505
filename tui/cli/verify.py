"""`agent-tui verify FILE`: re-run a run of scripted policies and name the first event that differs."""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import add_command, file_name, nonempty_name
from tui.cli.saved import load, scenario_of
from tui.exits import EXIT_DIFFERS, EXIT_OK, UsageError


def register(sub: Any) -> None:
    verify = add_command(sub, "verify", cmd_verify)
    verify.add_argument("file", type=file_name)
    verify.add_argument("--scenario", type=nonempty_name, help="the scenario, a name or a .py path (default: the one the file names)")


def cmd_verify(args: argparse.Namespace) -> int:
    """Re-run a run of scripted policies and name the first event that differs.

    Re-run a saved run of scripted policies in a fresh world, replaying the operator's answers
    from the file. Exit 0 when every event matches (an unfinished run says so), 3 when one
    differs (it is named), 2 when the file cannot be read or re-run. A gateway or MCP run,
    whose model and servers are not here, is checked for events that agree with each other
    (exit 0, or 3 naming the first that does not); its decisions are not re-derived.
    """
    from engine.sessions.verify import VerifyError, check_recorded, live_source, verify_run
    from tui.plain import event_lines

    transcript = load(args.file)
    if args.scenario is None and live_source(transcript.header) is not None:
        return _say_checked(args.file, transcript, check_recorded(transcript))
    scenario = scenario_of(transcript, args.scenario)
    try:
        result = verify_run(scenario, transcript)
    except VerifyError as exc:
        raise UsageError(str(exc)) from None
    _say_unsealed(transcript, scenario)
    if result.unfinished:
        print(f"unfinished: {result.message}")
        return EXIT_OK
    if result.match:
        print(f"match: {result.message}")
        return EXIT_OK
    line = transcript.lines[result.index] if result.index is not None and result.index < len(transcript.lines) else None
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


def _say_checked(path: str, transcript: Any, result: Any) -> int:
    """A gateway or MCP run: whether its events agree (`consistent` / `inconsistent`), and what was not re-derived."""
    from tui.plain import event_lines

    if result.match:
        print(f"consistent: {result.message}")
        return EXIT_OK
    line = transcript.lines[result.index] if result.index < len(transcript.lines) else None
    print(f"inconsistent: {result.message}" + (f" ({path}:{line})" if line else ""))
    for text in event_lines(result.expected):
        print(f"  {text}")
    return EXIT_DIFFERS


def _say_unsealed(transcript: Any, scenario: Any) -> None:
    """Name on stderr the rules a resume or fork of the file here would not use (no valid seal)."""
    from engine.sessions.trust import believe
    from tui.exits import report

    warning = believe(transcript.header, transcript.events, scenario.rules).warning(transcript.path)
    if warning is not None:
        report(f"note: if resumed or forked here: {warning}")
