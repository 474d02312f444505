"""`agent-tui run --acp COMMAND` and `run --agent NAME`: an ACP agent's run, in the cockpit or headless."""

from __future__ import annotations

import argparse
from typing import Any

from tui.exits import UsageError, os_error_text, report

REFUSED_WITH_ACP = ("scenario", "--task", "--policy", "--resume", "--fork", "--option", "--mcp", "--mcp-url", "--model")


def add_arguments(run: argparse.ArgumentParser) -> None:
    group = run.add_argument_group("ACP agents", "an Agent Client Protocol agent as the run's policy (Gemini CLI, Claude Code, Codex...)")
    group.add_argument("--acp", metavar="COMMAND", help="the agent's command line, e.g. 'gemini --acp' (with -t TASK)")
    from tui.cli.common import nonempty_name

    group.add_argument("--agent", metavar="NAME", type=nonempty_name, help="an [[agent]] of the configuration (with -t TASK)")
    group.add_argument("--follow-up", metavar="TEXT", action="append", default=[],
                       help="the agent's next prompt when it ends its turn, in the same session (repeat it for more); "
                            "after the last the run ends with the agent's answer (the cockpit holds it for you)")


def wants_acp(args: argparse.Namespace) -> bool:
    return getattr(args, "acp", None) is not None or getattr(args, "agent", None) is not None


def refuse_follow_ups(args: argparse.Namespace) -> None:
    """UsageError when --follow-up is given to a run that is not an ACP agent's."""
    if getattr(args, "follow_up", None):
        raise UsageError("--follow-up goes with --acp COMMAND, --agent NAME or the --resume of an ACP run: it is the agent's next prompt")


def _follow_ups(args: argparse.Namespace) -> list[str]:
    if any(not text.strip() for text in args.follow_up):
        raise UsageError("--follow-up needs the prompt's text, e.g. --follow-up 'now add a test'")
    return list(args.follow_up)


def _given(args: argparse.Namespace) -> list[str]:
    given = {
        "scenario": args.scenario, "--task": args.task, "--policy": args.policy, "--resume": args.resume, "--fork": args.fork,
        "--option": args.option, "--mcp": getattr(args, "mcp", None), "--mcp-url": getattr(args, "mcp_url", None),
        "--model": getattr(args, "model", None),
    }
    return [flag for flag in REFUSED_WITH_ACP if given.get(flag)]


def make_acp_run(args: argparse.Namespace, *, interactive: bool) -> Any:
    """The Run of `--acp COMMAND` or `--agent NAME`; UsageError for anything the operator got wrong."""
    from engine.acp.connection import AgentStartError
    from engine.core.approvals import RulesError, load_rules
    from engine.stored.lock import TranscriptBusy
    from tui.cli.common import budget_limits
    from tui.cli.run_extras import read_config

    if args.acp is not None and args.agent is not None:
        raise UsageError("give --acp COMMAND or --agent NAME, not both")
    clash = _given(args)
    if clash:
        raise UsageError(f"{clash[0]} does not go with {'--acp' if args.acp is not None else '--agent'}: the agent is the run's policy and brings its own tools")
    text = (args.task_text or "").strip()
    if not text:
        raise UsageError("an ACP agent's run needs a task: give it with --task-text (-t)")
    config = read_config(args.config)
    cwd, env = ".", {}
    if args.agent is not None:
        named = config.agent(args.agent)
        if named is None:
            known = ", ".join(a.name for a in config.agents) or "none configured"
            raise UsageError(f"no [[agent]] named '{args.agent}' in the configuration ({known})")
        command: Any = named.argv()
        cwd, env = named.cwd or ".", named.env
        name = args.agent
    else:
        if not args.acp.strip():
            raise UsageError("--acp needs the agent's command line, e.g. --acp 'gemini --acp'")
        command, name = args.acp, "acp"
    rules = list(config.rules)
    if args.rules is not None:
        try:
            rules += load_rules(args.rules)
        except RulesError as exc:
            raise UsageError(str(exc)) from None
    from engine.acp.run import BUDGET, new_acp_run

    budget = (BUDGET.model_copy(update=config.budget) if config.budget else BUDGET).model_copy(update=budget_limits(args))
    try:
        run = new_acp_run(command, text, cwd=cwd, env=env, name=name, budget=budget, rules=rules, out=args.out,
                          interactive=interactive, approve=args.approve, follow_ups=_follow_ups(args))
    except AgentStartError as exc:
        raise UsageError(str(exc)) from None
    except FileExistsError as exc:
        raise UsageError(str(exc.args[0]) if exc.args else str(exc)) from None
    except TranscriptBusy as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the transcript: {os_error_text(exc)}") from None
    from engine.core.edits import edit_table

    run.edit_tools = edit_table(config.edit_tools)
    if not interactive:
        for warning in run.warnings:
            report(f"warning: {warning}")
    return run


def resume_acp(args: argparse.Namespace, transcript: Any, *, interactive: bool) -> Any:
    """The Run of `run --resume FILE` for an ACP run: the agent started again and its session loaded
    (`session/load`) when the agent offers it; UsageError in one line when it cannot be."""
    from engine.acp.run import RESUME_REFUSED, resume_acp_run
    from engine.acp.connection import AgentStartError
    from engine.sessions.resume import ResumeError
    from engine.stored.lock import TranscriptBusy
    from tui.cli.run_extras import read_config

    if any(event.type == "run_ended" for event in transcript.events):
        raise UsageError(RESUME_REFUSED.format(path=transcript.path))
    if args.policy:
        raise UsageError("--policy does not go with the resume of an ACP run: the agent is its policy (p swaps in the cockpit)")
    config = read_config(args.config)
    try:
        return resume_acp_run(transcript, interactive=interactive, approve=args.approve, operator_rules=config.rules,
                              follow_ups=_follow_ups(args))
    except AgentStartError as exc:
        raise UsageError(f"{transcript.path}: cannot resume: {exc}") from None
    except (ResumeError, TranscriptBusy) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the transcript: {os_error_text(exc)}") from None
