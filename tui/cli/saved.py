"""Reading stored runs for the subcommands: any supported file, printed as `show` prints it."""

from __future__ import annotations

from typing import Any

from tui.exits import UsageError, report

FORMATS = ["auto", "jsonl", "chat", "claude-code", "codex", "gemini-cli", "opencode", "swe-agent", "mini-swe-agent", "inspect", "trace", "react", "langchain", "alfworld"]
"""engine.stored.importers.FORMATS, spelled out so that `--help` does not load the engine (a test keeps them equal)."""
FORMAT_HELP = (
    "input format: auto (detect from the content, the default), jsonl (agent-tui), chat (OpenAI chat messages, "
    "request bodies, fine-tune JSONL), claude-code, codex, gemini-cli, opencode (opencode export), swe-agent, mini-swe-agent, inspect (Inspect AI .json/.eval), "
    "trace (Question:/Thought:/Action: text), react (Thought 1:/Action 1:), langchain (Action Input:), "
    "alfworld (Your task is to: / > command)"
)

RUN_HELP = (
    "which run of a file of several (an eval log's samples, transcripts joined with cat): its number from 1, "
    "or its id (an Inspect sample's, an agent-tui run's task); default the first; `show FILE --runs` lists them"
)


def add_format_argument(parser: Any, flag: str = "--format", *, dest: str | None = None, help_prefix: str = "") -> None:
    """The input-format option of every command that opens a stored run (export names it --from)."""
    names = {"dest": dest} if dest else {}
    parser.add_argument(flag, default="auto", choices=FORMATS, help=help_prefix + FORMAT_HELP, **names)


def add_run_argument(parser: Any, *, help_prefix: str = "") -> None:
    """`--run N|ID`: the run of a file of several that a command opens (`engine.stored.runs`)."""
    parser.add_argument("--run", metavar="N|ID", help=help_prefix + RUN_HELP)


def load(path: str, fmt: str = "auto", run: str | None = None, *, one_run: str | None = None, say: Any = report,
         lazy: bool = False) -> Any:
    """Any supported run file as a Transcript (of several runs, the one `run` names); warnings go to `say` (stderr).

    `one_run`: why only a file of one run will do (a resume); a file of several is then refused
    with it, before any warning offers another run. `lazy`: its events parsed when read (a resume's one pass)."""
    from engine.stored.importers import load_any
    from engine.stored.transcript import TranscriptError

    try:
        transcript = load_any(path, fmt, run=run, lazy=lazy)
    except TranscriptError as exc:
        raise UsageError(str(exc)) from None
    if one_run is not None and transcript.run_count > 1:
        raise UsageError(f"{path} holds {transcript.run_count} runs; {one_run}")
    for warning in transcript.warnings:
        say(f"warning: {warning}")
    return transcript


def read_whole(transcript: Any) -> Any:
    """`transcript` with its events as a list: a lazy read's parsed now (for a reader that goes
    over them more than once); UsageError naming FILE:LINE for a line that does not read."""
    from engine.stored.transcript import TranscriptError

    try:
        transcript.events = list(transcript.events)
    except TranscriptError as exc:
        raise UsageError(str(exc)) from None
    return transcript


def list_runs(path: str, fmt: str = "auto") -> None:
    """`show FILE --runs`: each run of the file on a line, with the number and id that `--run` takes."""
    from engine.core.text import clean
    from engine.stored.importers import load_runs
    from engine.stored.runs import run_line
    from engine.stored.transcript import TranscriptError

    try:
        runs = load_runs(path, fmt)
    except TranscriptError as exc:
        raise UsageError(str(exc)) from None
    for warning in runs[0].warnings:
        report(f"warning: {warning}")
    print(clean(f"{path}: {len(runs)} run{'s' if len(runs) != 1 else ''}"))
    for number, run in enumerate(runs, 1):
        print(run_line(number, run.header, sum(1 for e in run.events if e.type == "decision")))


def print_saved(path: str, fmt: str = "auto", at: int | str | None = None, run: str | None = None) -> None:
    """`show`, and `replay --headless [--at N|end]`: a stored run printed, up to the end of step `at`.

    The events read hold no reference cycles: they are freed by reference counting
    before the collector is back on, which would otherwise walk every one of them, on
    its next pass and the passes after (a quarter of the CPU time of `show`)."""
    from engine.core.collector import collector_paused

    with collector_paused():
        transcript = load(path, fmt, run)
        total = position = len(transcript.events)
        if at is not None and at != "end":  # the end needs no fold to be found
            from engine.stored.replay import Timeline

            position = position_for(Timeline(transcript.header, transcript.events), at, path)
        print_run(transcript.header, transcript.events[:position], unfinished_note=position == total, unfinished=transcript.unfinished)
        del transcript
    if position < total:
        print(f"(stopped at event {position} of {total}, the end of step {at})")


def position_for(timeline: Any, at: int | str, path: str) -> int:
    """The position at the end of step `at` ("end": the last); UsageError past the last step."""
    last = timeline.steps()
    step = last if at == "end" else at
    if step > last:
        raise UsageError(f"{path}: the run has {last} steps; --at takes 0..{last} or 'end'")
    return timeline.position_after_step(step) if step < last else len(timeline)


def print_run(header: Any, events: Any, *, unfinished_note: bool = True, unfinished: Any = None) -> None:
    """`unfinished`: the `tool_started` note of a call the run stopped in (a kill): its outcome is unknown."""
    import sys

    from tui.plain import event_lines, header_lines

    write = sys.stdout.write
    lines = header_lines(header)
    ended = False
    for event in events:
        lines += event_lines(event)
        ended = ended or event.type == "run_ended"
        if len(lines) >= 4096:  # written in blocks: one write per line is a third of `show`
            write("\n".join(lines) + "\n")
            lines.clear()
    if lines:
        write("\n".join(lines) + "\n")
    if unfinished is not None and unfinished_note:
        from engine.core.decisions import unknown_outcome_text

        print(f"  !        {unknown_outcome_text(unfinished)}")
    if unfinished_note and not ended:
        if header.scenario == "imported":
            print("outcome: unfinished (the log ends here)")
        else:
            print("outcome: unfinished (the run did not end; `agent-tui run --resume` continues it)")


def scenario_of(transcript: Any, name: str | None, *, fork: bool = False) -> Any:
    """The scenario a stored run acts on (`name` overrides the file's); UsageError when there is none.

    An imported log has a world only for a fork: its tools, each call asking the operator."""
    import scenarios

    header = transcript.header
    if header.scenario == "acp" and not name:
        from engine.acp.run import RESUME_REFUSED

        raise UsageError(RESUME_REFUSED.format(path=transcript.path))
    if header.scenario == "imported":
        if fork:
            from engine.sessions.imported import imported_scenario

            return imported_scenario(header)
        raise UsageError(
            f"{transcript.path}: an imported {header.options.get('format', 'foreign')} log has no world to act on; "
            "it can be replayed, shown, exported and forked (--policy human or model), not resumed or verified"
        )
    try:
        # A name from the operator may be a file; the file's own name never loads one.
        scenario = scenarios.get(name) if name else scenarios.get_named(header.scenario)
    except scenarios.ScenarioError as exc:
        hint = "" if name else "; if it is a scenario file, give it: agent-tui run PATH --resume FILE, verify FILE --scenario PATH"
        raise UsageError(f"{exc} (the run was of scenario '{header.scenario}'{hint})") from None
    if scenario.name != header.scenario:
        raise UsageError(f"{transcript.path}: the run is of scenario '{header.scenario}', not '{scenario.name}'")
    return scenario
