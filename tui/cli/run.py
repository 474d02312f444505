"""`agent-tui run`: a new run, or a stored one continued (--resume / --fork), in the cockpit or headless."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from tui.cli.common import add_command, budget_limits, file_name, nonempty_name, option_pair, positive_float, positive_int, repetition, step_or_end
from tui.cli.model_flags import add_model_arguments
from tui.cli.policies import policy_from_flags
from tui.cli.acp_run import add_arguments as add_acp_arguments, make_acp_run, refuse_follow_ups, wants_acp
from tui.cli.run_extras import add_arguments as add_extra_arguments
from tui.cli.saved import add_format_argument, add_run_argument
from tui.exits import EXIT_CODES, EXIT_INTERNAL, EXIT_USAGE, UsageError, os_error_text, report

abandoned_work = False
"""True when the cockpit quit while a policy or tool call could not be cancelled."""


def register(sub: Any) -> None:
    run = add_command(sub, "run", cmd_run, help="run a scenario (the cockpit, or --headless)")
    add_arguments(run)


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The flags of `run`; a new flag goes here (or in a function this calls)."""
    run.add_argument("scenario", nargs="?", type=nonempty_name, help="scenario name or path to a scenario .py file (default: support)")
    run.add_argument("--task", help="task id (see `agent-tui list`)")
    run.add_argument("--policy", type=nonempty_name, help="policy name (see `agent-tui list`), or 'human'")
    run.add_argument("--headless", action="store_true", help="run without the cockpit and print each step")
    run.add_argument(
        "--approve",
        choices=["ask", "all", "none"],
        default="ask",
        help="approvals: ask the operator (default), approve all, or reject all",
    )
    run.add_argument("--rules", type=file_name, help="TOML file of approval rules (allow / ask / deny)")
    run.add_argument("--max-steps", type=positive_int, help="step cap")
    run.add_argument("--max-tokens", type=positive_int, help="token budget")
    run.add_argument("--max-cost", type=positive_float, help="cost budget in dollars")
    run.add_argument("--max-seconds", type=positive_float, help="time budget in seconds of policy and tool time")
    run.add_argument("--repetition", type=repetition, help="stop at N identical actions in a row (1 and 2: at the first repeat), or 'off' / 0")
    run.add_argument("--option", action="append", type=option_pair, default=[], metavar="KEY=VALUE", help="scenario option")
    run.add_argument("-o", "--out", type=file_name, metavar="FILE", help="transcript file (default: a file in the per-user data folder)")
    add_model_arguments(run)
    run.add_argument("--resume", type=file_name, metavar="FILE", help="continue a run that did not end, appending to FILE")
    run.add_argument("--fork", type=file_name, metavar="FILE", help="start a new run from step --at of FILE (no tool runs again)")
    run.add_argument(
        "--at",
        type=step_or_end,
        metavar="N",
        help="with --fork: keep steps 1..N of the file and let --policy make step N+1 (0 = from the task; "
        "'end' = the last step that can be kept; default end)",
    )
    add_format_argument(run, help_prefix="with --fork: the file's ")
    add_run_argument(run, help_prefix="with --fork: ")
    add_extra_arguments(run)
    add_acp_arguments(run)


def cmd_run(args: argparse.Namespace) -> int:
    interactive = not args.headless
    if wants_acp(args):
        run = make_acp_run(args, interactive=interactive)
    elif args.resume and interactive:
        run = open_resumed(args)
    elif args.resume or args.fork or args.at is not None or args.run is not None or args.format != "auto":
        run = make_continued_run(args, interactive=interactive)
    else:
        run = make_run(args, interactive=interactive)
    return open_cockpit(run, args) if interactive else run_headless(run)


def _budget(scenario: Any, args: argparse.Namespace, extras: Any) -> Any:
    return extras.budget(scenario.budget).model_copy(update=budget_limits(args))


def make_run(args: argparse.Namespace, *, interactive: bool) -> Any:
    """Build a Run from `run` flags; UsageError for anything the user got wrong."""
    import scenarios
    from engine.core.approvals import RulesError, load_rules
    from engine.sessions.run import new_run
    from engine.stored.lock import TranscriptBusy
    from tui.cli.run_extras import RunExtras, default_policy, start_servers

    refuse_follow_ups(args)
    extras = RunExtras.from_args(args)
    try:
        scenario = scenarios.get(args.scenario or (scenarios.MCP if extras.servers else scenarios.DEFAULT))
    except scenarios.ScenarioError as exc:
        if args.scenario and args.scenario.endswith((".jsonl", ".json", ".txt")):
            name = args.scenario
            raise UsageError(
                f"{name} looks like a saved run, not a scenario: continue it with agent-tui run --resume {name}, "
                f"fork it with agent-tui run --fork {name} --at N, or watch it with agent-tui replay {name}"
            ) from None
        raise UsageError(str(exc)) from None
    try:
        task = extras.pick_task(scenario, args.task)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    check_options(scenario, dict(args.option))
    policy, model = policy_from_flags(
        scenario, args, interactive=interactive, default=default_policy(scenario, extras), named=extras.named
    )
    if not task.text.strip() and not interactive:
        raise UsageError("a run of MCP tools needs a task: give it with --task-text (-t)")
    rules = list(extras.config.rules)
    if args.rules is not None:  # a rules file that is not there is always an error (`--rules ""` too)
        try:
            rules += load_rules(args.rules)
        except RulesError as exc:
            raise UsageError(str(exc)) from None
    hub, tools = start_servers(extras.servers, withheld=extras.key_variables)
    try:
        run = new_run(
            scenario,
            task.id,
            policy,
            options=dict(args.option),
            budget=_budget(scenario, args, extras),
            rules=rules,
            repetition_threshold="default" if args.repetition is None else (args.repetition or None),
            out=args.out,
            interactive=interactive,
            approve=args.approve,
            model=model,
            named=extras.named,
            task=task,
            extra_tools=tools,
            mcp=hub.public() if hub is not None else (),
        )
    except BaseException as exc:
        if hub is not None:
            hub.close()
        if isinstance(exc, FileExistsError):
            raise UsageError(str(exc.args[0]) if exc.args else str(exc)) from None
        if isinstance(exc, TranscriptBusy):
            raise UsageError(str(exc)) from None
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write the transcript: {os_error_text(exc)}") from None
        if isinstance(exc, (ValueError, TypeError, KeyError)):
            detail = exc.args[0] if exc.args else type(exc).__name__
            raise UsageError(f"scenario '{scenario.name}' cannot start with these options: {detail}") from None
        raise
    extras.attach(run, hub)
    if not interactive:  # the cockpit says them as notifications
        for warning in run.warnings:
            report(f"warning: {warning}")
    return run


def _own_model_policy(scenario: Any, transcript: Any, model: Any, named: Any) -> str | None:
    """The model policy a resumed run was in charge of, by its name when the model flags given
    (`--model m` for a run of "model:m") or the configuration's [[policy]] of its name can run
    it again; None when the run's policy is the scenario's own. UsageError for a model policy with neither."""
    from engine.sessions.policies import model_of

    current = transcript.last_policy()
    if current in scenario.policies or current == "human":
        return None
    if model_of(current, scenario, model, named) is not None:
        return current
    if current.startswith("model:"):
        raise UsageError(
            f"the run's policy is {current}, a model: give its flags again to go on with it "
            f"(--model {current.removeprefix('model:')}, and --base-url if it had one), or --policy NAME to swap"
        )
    return None


def check_options(scenario: Any, options: dict[str, Any]) -> None:
    """UsageError for an --option key the scenario does not declare (a typo is never ignored)."""
    unknown = [key for key in options if key not in scenario.options]
    if not unknown:
        return
    known = ", ".join(scenario.options)
    takes = f"its options: {known}" if known else "it takes no options"
    names = ", ".join(repr(key) for key in unknown)
    raise UsageError(f"scenario '{scenario.name}' has no option {names} ({takes})")


def open_resumed(args: argparse.Namespace) -> Any:
    """`run --resume FILE` in the cockpit: an Opening whose first frame is the file's tail, the
    whole resume (`make_continued_run`) its build. What the file's ends decide (a run that ended,
    another run writing the file) is refused here, before the cockpit; a file whose tail cannot
    be read (or an ACP run) is resumed before the cockpit starts, as any other continued run."""
    import os

    from engine.sessions.resume import ended_refusal
    from engine.stored.lock import TranscriptBusy, lock
    from engine.stored.tail import read_tail
    from engine.stored.transcript import TranscriptError
    from tui.app import Opening
    from tui.cli.saved import scenario_of

    check_continued_flags(args)
    try:
        tail = read_tail(args.resume)
    except TranscriptError:
        tail = None
    if tail is None or tail.problem is not None or tail.header.scenario == "acp" and not args.scenario:
        return make_continued_run(args, interactive=True)
    refuse_follow_ups(args)
    scenario = scenario_of(tail, args.scenario)
    refusal = ended_refusal(args.resume, tail.state)
    if refusal is not None:
        raise UsageError(refusal)
    fd = os.open(args.resume, os.O_RDONLY)
    try:
        lock(fd, tail.path)  # let go at once: the build takes it for good
    except TranscriptBusy as exc:
        raise UsageError(str(exc)) from None
    finally:
        os.close(fd)
    said: list[str] = []
    return Opening(tail, scenario, lambda: make_continued_run(args, interactive=True, say=said.append, scenario=scenario), said)


def check_continued_flags(args: argparse.Namespace) -> None:
    """UsageError for flags `run --resume` / `--fork` do not take together."""
    from tui.cli.fixed_flags import refuse_fixed_flags

    if args.resume and args.fork:
        raise UsageError("give --resume or --fork, not both")
    for flag, given in (("--at", args.at is not None), ("--format", args.format != "auto"), ("--run", args.run is not None)):
        if given and not args.fork:
            raise UsageError(f"{flag} goes with --fork")
    if args.resume and args.out:
        raise UsageError("--resume appends to its own file; --out goes with --fork")
    refuse_fixed_flags(args)


def make_continued_run(args: argparse.Namespace, *, interactive: bool, say: Callable[[str], None] = report,
                       scenario: Any = None) -> Any:
    """The Run for `run --resume FILE` or `run --fork FILE [--at N]`; its warnings go to `say`.
    `scenario`: the one the file's tail already named (a scenario file is loaded once)."""
    from engine.sessions.policies import model_of
    from engine.sessions.resume import ResumeError, continue_run
    from tui.cli.fixed_flags import fork_changes, fork_rules
    from engine.stored.lock import TranscriptBusy
    from tui.cli.saved import load, read_whole, scenario_of
    from tui.cli.run_extras import continued_extras

    check_continued_flags(args)
    several = ("--resume appends to its own file, so it continues a file of one run: "
               f"fork the one to go on with (agent-tui run --fork {args.resume} --run N)")
    transcript = load(args.fork, args.format, args.run, say=say) if args.fork else load(args.resume, one_run=several, say=say, lazy=True)
    if args.resume and transcript.header.scenario == "acp" and not args.scenario:
        from tui.cli.acp_run import resume_acp

        return _checked(resume_acp(args, read_whole(transcript), interactive=interactive), interactive, say)
    refuse_follow_ups(args)
    if scenario is None:
        scenario = scenario_of(transcript, args.scenario, fork=bool(args.fork))
    extras = continued_extras(args)
    policy, model = policy_from_flags(scenario, args, interactive=interactive, default=None, named=extras.named)
    if policy is None and args.resume:
        policy = _own_model_policy(scenario, transcript, model, extras.named)
    if policy is None and transcript.header.scenario == "imported":
        raise UsageError("an imported log has no policy of its own to go on with: give --policy human or --policy model")
    hub, tools = extras.restart(transcript.header.mcp, args, transcript.path)
    out_existed = args.out is not None and Path(args.out).exists()  # (empty, or the fork refuses it)
    try:
        run = continue_run(
            scenario, transcript, policy, resume=bool(args.resume), at=args.at, interactive=interactive, approve=args.approve,
            extra_tools=tools, operator_rules=extras.config.rules, model=model, named=extras.named, out=args.out,
            mcp=hub.public() if hub is not None and args.fork else None, header_changes=fork_changes(args, transcript.header),
            added_rules=fork_rules(args),
        )
    except BaseException as exc:
        if hub is not None:
            hub.close()
        if isinstance(exc, (ResumeError, TranscriptBusy)):
            raise UsageError(str(exc)) from None
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write the transcript: {os_error_text(exc)}") from None
        raise
    extras.attach(run, hub)
    if policy is not None and model_of(policy, scenario, model, extras.named) is not None:
        run.model = model  # the swap picker offers "model" again
    return _checked(run, interactive, say, fork=bool(args.fork), out_existed=out_existed)


def _checked(run: Any, interactive: bool, say: Callable[[str], None] = report, *, fork: bool = False,
             out_existed: bool = False) -> Any:
    """A continued run, its warnings said; UsageError when a headless one cannot go on: it waits
    for an approval with no terminal to ask on, or its policy is the human one. The run is then
    closed, and what a fork wrote (what it copied and nothing more) taken back: its new file
    removed, or the empty file --out named before (`out_existed`) emptied again, so that a retry
    with the same --out is not refused."""
    from engine.core.policy import HumanPolicy

    for warning in run.warnings:
        say(f"warning: {warning}")
    why = None
    if not interactive and run.engine.status == "awaiting_approval" and not sys.stdin.isatty():
        why = waiting_for_approval(run.engine.state.pending.tool)
    elif not interactive and isinstance(run.engine.policy, HumanPolicy):
        where = "where the fork starts" if fork else "where the run stopped"
        why = f"the policy {where} is human, who needs the cockpit: drop --headless, or give --policy NAME to go on with another"
    if why is not None:
        run.close()
        if fork and run.path is not None:
            if out_existed:
                os.truncate(run.path, 0)
            else:
                Path(run.path).unlink(missing_ok=True)
        raise UsageError(why)
    return run


def waiting_for_approval(tool: str) -> str:
    return (
        f"the run was waiting for approval of {tool} when it stopped; it is asked again, never run on its own "
        "(--approve does not answer it): resume it in a terminal to answer"
    )


PROMPT_DIFF_LINES = 200
"""Lines of a file edit's diff the terminal prompt prints (the cockpit holds up to 2,000)."""


def _ask_on_terminal(engine: Any, edit_tools: tuple[Any, ...] | None = None) -> bool:
    """Ask the operator about the pending approval on the terminal; False if there is none to ask.
    A file edit (a row of `edit_tools`, the built-in ones by default) prints its diff first."""
    from engine.core.answers import Answer
    from engine.core.edits import EDIT_TOOLS, edit_preview
    from engine.core.text import visible
    from tui.cockpit_actions import prompt_keys
    from tui.plain import approval_question

    pending = engine.state.pending
    if not sys.stdin.isatty():
        if (pending.step, pending.index) in engine.ask_again:
            report(waiting_for_approval(pending.tool))
        else:
            report(
                "an action needs approval but there is no terminal to ask on; "
                "run in a terminal, or pass --approve all or --approve none"
            )
        return False
    print("\n".join(approval_question(pending.tool, pending.args, pending.reason, pending.thought)))
    preview = edit_preview(pending.tool, pending.args, EDIT_TOOLS if edit_tools is None else edit_tools, max_lines=PROMPT_DIFF_LINES)
    if preview is not None:
        print(f"  {preview.shows:<9}{visible(preview.note, one_line=True)}")  # the note names the path: one line
        for line in preview.lines:
            print(f"           {line}")
    while True:
        try:
            answer = input(f"  {prompt_keys()} > ").strip()
        except EOFError:  # Ctrl+D: the run is aborted, said on a line of its own
            print()
            answer = "x"
        if answer in ("a", "approve"):
            engine.answer(Answer.approve())
        elif answer == "A":
            engine.answer(Answer.approve_always())
        elif answer in ("r", "reject"):
            reason = _line("  reason the policy will read > ")
            if reason is None:
                continue
            engine.answer(Answer.reject(reason))
        elif answer in ("e", "edit"):
            raw = _line(f"  new arguments as JSON {json.dumps(pending.args)} > ")
            if raw is None:
                continue
            try:
                engine.answer(Answer.edit(json.loads(raw)))
            except (ValueError, TypeError) as exc:
                print(f"  not accepted: {exc}")
                continue
            except RecursionError:
                print("  not accepted: the JSON is nested too deeply")
                continue
        elif answer in ("x", "abort"):
            engine.answer(Answer.abort())
        else:
            print(f"  not an answer: {answer!r}; type a (approve), A (approve always), r (reject), e (edit) or x (abort)")
            continue
        return True


def _line(prompt: str) -> str | None:
    """A line typed at `prompt`; None after Ctrl+D (end of input), which goes back to the question."""
    try:
        return input(prompt)
    except EOFError:
        print("\n  nothing decided (end of input)")
        return None


def run_headless(run: Any) -> int:
    from engine.core.guards import Interrupted, RecordError
    from tui.cli.stops import halted_message, sigterm_raises, stop
    from tui.plain import event_lines, header_lines

    engine = run.engine
    if run.writer is not None:
        run.writer.notify = report
    for line in header_lines(engine.header):
        print(line)

    def printer(event: Any) -> None:
        for line in event_lines(event):
            print(line, flush=True)

    engine.listeners.append(printer)
    if engine.ended:  # ended while it was rebuilt: a resume at a budget pause, or cut after its answer
        printer(engine.state.ended)
    try:
        with sigterm_raises():
            try:
                while not engine.stopped:
                    status = engine.run()
                    if status == "awaiting_approval":
                        if not _ask_on_terminal(engine, run.edit_tools):
                            return EXIT_USAGE
                    elif status == "awaiting_input":
                        report("the human policy needs the cockpit")
                        return EXIT_USAGE
                    elif status not in ("ended", "ready", "halted"):
                        engine.abort(f"unexpected pause: {status}")
            except KeyboardInterrupt:
                print()  # the terminal echoed ^C where the cursor was, maybe after a prompt
                stop(engine, "interrupted (Ctrl+C)")
            except Interrupted as exc:
                stop(engine, str(exc))
    except RecordError:
        pass  # said below: the engine is halted
    finally:
        run.close()
        if run.path is not None:
            print(f"transcript: {run.path}", file=sys.stderr)
    if engine.halted is not None:
        report(halted_message(run))
        return EXIT_INTERNAL
    return EXIT_CODES[engine.state.ended.outcome]


def open_cockpit(run: Any, args: argparse.Namespace | None = None) -> int:
    """Run the cockpit on a live run until the operator quits; the run's exit code.
    A run left unfinished says how to resume it (with the flags of `args` it needs again)."""
    global abandoned_work
    from engine.core.text import clean
    from tui.app import CockpitApp, Opening
    from tui.cli.stops import halted_message, resume_command, stop
    from tui.run_guard import sigterm_closes

    said = run.said if isinstance(run, Opening) else []
    app = CockpitApp(run)
    with sigterm_closes(app):
        try:
            app.run()
            run = app.run_  # an Opening's once built; None: the cockpit closed before
            if run is not None and app.terminated:
                stop(run.engine, "terminated (SIGTERM)", running=True)
        finally:
            if app.run_ is not None:
                app.run_.close()
    for message in said:
        report(message)
    if run is None:  # closed while it was opening: the file is as it was
        if app.open_error is not None:
            report(app.open_error)
            return EXIT_USAGE
        if app.opening is not None:  # its build still reads: the process does not wait for it
            abandoned_work = True
        print(f"transcript: {app.path}", file=sys.stderr)
        print(clean(f"unfinished: resume with {resume_command(None, args, header=app.header, path=app.path)}"), file=sys.stderr)
        return app.return_code or 0
    if app.busy:
        # The operator quit while a policy or tool call was running and could not
        # be cancelled; its thread cannot be stopped, so the process leaves it.
        abandoned_work = True
        report("left a policy or tool call that was still running")
    if run.path is not None:
        print(f"transcript: {run.path}", file=sys.stderr)
    if run.engine.halted is not None:
        report(halted_message(run))
    elif not run.engine.ended and run.path is not None:
        print(clean(f"unfinished: resume with {resume_command(run, args)}"), file=sys.stderr)
    return app.return_code or 0
