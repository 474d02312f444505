"""The `agent-tui` command.

`agent-tui` alone opens the cockpit on the built-in default run. The headless
paths (`run --headless`, `list`, `show`, `replay --headless`, `verify`,
`export`) never import Textual, so they start fast and work without a terminal.
Saved runs (replay, verify, export, run --resume / --fork) live in
`tui.replay_cli`.

Exit codes: 0 answered, 3 stopped by a brake or budget, 4 handed off to a
human, 5 aborted, 2 usage error, 1 internal error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from tui.replay_cli import FORMAT_HELP, ReplayUsageError
from tui.replay_cli import add_parsers as add_replay_parsers
from tui.replay_cli import add_run_arguments

EXIT_USAGE = 2
EXIT_INTERNAL = 1


class UsageError(Exception):
    """Bad flags or input: reported in one line, exit code 2."""


def _err(message: str) -> None:
    print(f"agent-tui: {message}", file=sys.stderr)


def _option_pair(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return key.strip(), parsed


def _repetition(text: str) -> int:
    """A threshold of 2 or more, or 0 for 'off'."""
    if text.lower() in ("off", "none", "0"):
        return 0
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a whole number of repeats, or 'off'") from None
    if value < 2:
        raise argparse.ArgumentTypeError("the repetition threshold must be 2 or more (or 'off')")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        _err(message)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="agent-tui", description="Watch and steer AI agents one step at a time.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    sub.add_parser("list", help="list scenarios, their tasks and policies")

    run = sub.add_parser("run", help="run a scenario (the cockpit, or --headless)")
    run.add_argument("scenario", nargs="?", help="scenario name or path to a scenario .py file (default: support)")
    run.add_argument("--task", help="task id (see `agent-tui list`)")
    run.add_argument("--policy", help="policy name (see `agent-tui list`), or 'human'")
    run.add_argument("--headless", action="store_true", help="run without the cockpit and print each step")
    run.add_argument(
        "--approve",
        choices=["ask", "all", "none"],
        default="ask",
        help="approvals: ask the operator (default), approve all, or reject all",
    )
    run.add_argument("--rules", help="TOML file of approval rules (allow / ask / deny)")
    run.add_argument("--max-steps", type=_positive_int, help="step cap")
    run.add_argument("--max-tokens", type=_positive_int, help="token budget")
    run.add_argument("--max-cost", type=_positive_float, help="cost budget in dollars")
    run.add_argument("--max-seconds", type=_positive_float, help="time budget in seconds of policy and tool time")
    run.add_argument("--repetition", type=_repetition, help="stop at N identical actions in a row, or 'off'")
    run.add_argument("--option", action="append", type=_option_pair, default=[], metavar="KEY=VALUE", help="scenario option")
    run.add_argument("--out", help="transcript file (default: a file in the per-user data folder)")
    from engine.model.policy import add_model_arguments

    add_model_arguments(run)
    add_run_arguments(run)

    show = sub.add_parser("show", help="print a saved transcript")
    show.add_argument("file")
    show.add_argument("--format", default="auto", choices=["auto", "jsonl", "trace", "chat"], help=FORMAT_HELP)
    add_replay_parsers(sub)

    from tui.bench import add_parser as add_bench_parser

    add_bench_parser(sub)
    return parser


def cmd_list() -> int:
    import scenarios

    for name in scenarios.names():
        try:
            scenario = scenarios.get(name)
        except scenarios.ScenarioError as exc:
            print(f"{name}: cannot load ({exc})")
            continue
        print(f"{scenario.name}: {scenario.description}")
        for task in scenario.tasks.values():
            print(f"  task    {task.id}: {task.text}")
        print(f"  policies {', '.join([*scenario.policies, 'human'])}, model (with --model)")
    return 0


def _budget(scenario, args: argparse.Namespace):
    budget = scenario.budget
    updates = {
        "max_steps": args.max_steps,
        "max_tokens": args.max_tokens,
        "max_cost": args.max_cost,
        "max_seconds": args.max_seconds,
    }
    return budget.model_copy(update={k: v for k, v in updates.items() if v is not None})


def make_run(args: argparse.Namespace, *, interactive: bool):
    """Build a Run from `run` flags; UsageError for anything the user got wrong."""
    import scenarios
    from engine.core.approvals import RulesError, load_rules
    from engine.sessions.run import new_run

    try:
        scenario = scenarios.get(args.scenario or scenarios.DEFAULT)
    except scenarios.ScenarioError as exc:
        raise UsageError(str(exc)) from None
    try:
        task = scenario.task(args.task)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    from engine.model.policy import config_from_args

    try:
        model = config_from_args(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    policy = args.policy or ("model" if args.model else scenario.default_policy)
    if policy == "model" and model is None and "model" not in scenario.policies:
        raise UsageError("--policy model needs a model: give --model NAME (or set AGENT_TUI_MODEL)")
    if policy not in ("human", "model") and policy not in scenario.policies:
        raise UsageError(
            f"scenario '{scenario.name}' has no policy '{policy}' (policies: {', '.join([*scenario.policies, 'human'])})"
        )
    if policy == "human" and not interactive:
        raise UsageError("the human policy needs the cockpit; drop --headless")
    rules = []
    if args.rules:
        try:
            rules = load_rules(args.rules)
        except RulesError as exc:
            raise UsageError(str(exc)) from None
    try:
        return new_run(
            scenario,
            task.id,
            policy,
            options=dict(args.option),
            budget=_budget(scenario, args),
            rules=rules,
            repetition_threshold="default" if args.repetition is None else (args.repetition or None),
            out=args.out,
            interactive=interactive,
            approve=args.approve,
            model=model,
        )
    except FileExistsError as exc:
        raise UsageError(str(exc.args[0]) if exc.args else str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the transcript: {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        detail = exc.args[0] if exc.args else type(exc).__name__
        raise UsageError(f"scenario '{scenario.name}' cannot start with these options: {detail}") from None


def _ask_on_terminal(engine) -> bool:
    """Ask the operator about the pending approval on the terminal; False if there is none to ask."""
    from tui.plain import render_args

    pending = engine.state.pending
    if not sys.stdin.isatty():
        _err(
            "an action needs approval but there is no terminal to ask on; "
            "run in a terminal, or pass --approve all or --approve none"
        )
        return False
    print(f"  ?        {render_args(pending.tool, pending.args)} needs approval ({pending.reason})")
    while True:
        try:
            answer = input("  [a]pprove, [A]pprove always, [r]eject, [e]dit, [x] abort > ").strip()
        except EOFError:
            answer = "x"
        if answer in ("a", "approve"):
            engine.approve()
        elif answer == "A":
            engine.approve(always=True)
        elif answer in ("r", "reject"):
            engine.reject(input("  reason the policy will read > "))
        elif answer in ("e", "edit"):
            raw = input(f"  new arguments as JSON {json.dumps(pending.args)} > ")
            try:
                engine.modify(json.loads(raw))
            except (ValueError, TypeError) as exc:
                print(f"  not accepted: {exc}")
                continue
        elif answer in ("x", "abort"):
            engine.abort()
        else:
            continue
        return True


def run_headless(run) -> int:
    from tui.plain import EXIT_CODES, event_lines, header_lines

    engine = run.engine
    for line in header_lines(engine.header):
        print(line)

    def printer(event) -> None:
        for line in event_lines(event):
            print(line, flush=True)

    engine.listeners.append(printer)
    try:
        while not engine.ended:
            status = engine.run()
            if status == "awaiting_approval":
                if not _ask_on_terminal(engine):
                    return EXIT_USAGE
            elif status == "awaiting_input":
                _err("the human policy needs the cockpit")
                return EXIT_USAGE
            elif status != "ended" and status != "ready":
                engine.abort(f"unexpected pause: {status}")
    except KeyboardInterrupt:
        engine.abort("interrupted (Ctrl+C)")
    finally:
        run.close()
        if run.path is not None:
            print(f"transcript: {run.path}", file=sys.stderr)
    return EXIT_CODES[engine.state.ended.outcome]


def cmd_show(path: str, fmt: str = "auto") -> int:
    from tui.replay_cli import load, print_run

    try:
        transcript = load(path, fmt)
    except ReplayUsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    print_run(transcript.header, transcript.events)
    return 0


_abandoned_work = False


def open_cockpit(run) -> int:
    global _abandoned_work
    from tui.app import CockpitApp

    app = CockpitApp(run)
    try:
        app.run()
    finally:
        run.close()
    if app.busy:
        # The operator quit while a policy or tool call was running and could not
        # be cancelled; its thread cannot be stopped, so the process leaves it.
        _abandoned_work = True
        print("agent-tui: left a policy or tool call that was still running", file=sys.stderr)
    if run.path is not None:
        print(f"transcript: {run.path}", file=sys.stderr)
    return app.return_code or 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            args = parser.parse_args(["run", *(argv or [])])
        if args.command == "list":
            return cmd_list()
        if args.command == "show":
            return cmd_show(args.file, args.format)
        if args.command in ("replay", "verify", "export"):
            from tui.replay_cli import dispatch

            return dispatch(args)
        if args.command == "bench":
            from tui.bench import run as run_bench

            return run_bench(args)
        if args.command == "run" and (args.resume or args.fork or args.at is not None):
            from tui.replay_cli import make_continued_run

            return (run_headless if args.headless else open_cockpit)(make_continued_run(args, interactive=not args.headless))
        if args.command == "run":
            if args.headless:
                return run_headless(make_run(args, interactive=False))
            return open_cockpit(make_run(args, interactive=True))
    except (UsageError, ReplayUsageError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
    parser.print_help()
    return EXIT_USAGE


def console_main() -> None:
    """The `agent-tui` console script.

    When the cockpit quit while a policy or tool call that ignores
    interruption was still running, the run's transcript is already closed:
    leave without waiting for that thread.
    """
    import os

    code = main()
    if _abandoned_work:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console_main()
