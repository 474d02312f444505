"""`agent-tui gateway ... -- COMMAND`: the agent started as the gateway's child, pointed at it.

The command after `--` is started once the gateway listens, with the settings
its agent needs (engine/gateway/agents.py) and the gateway's per-run token as
its key; the upstream keys are never in its environment. The gateway ends
when the agent ends (its exit code is the command's). An agent that wants the
terminal (no prompt on its command line), or any agent with `--paste`, is not
started: the lines to start it in another terminal are printed instead.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from typing import Any

from tui.exits import UsageError


def add_agent_arguments(gw: Any) -> None:
    gw.add_argument(
        "--agent", metavar="KIND",
        help="which agent the command after -- is (claude, codex, gemini, opencode, openai); default: known by its name",
    )
    gw.add_argument("--paste", action="store_true", help="print the lines that start the agent in another terminal instead of starting it")
    gw.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
        help="the agent to start pointed at the gateway, e.g. -- claude -p 'fix the tests'; the gateway ends when it ends",
    )


def agent_command(args: argparse.Namespace) -> list[str]:
    """The command after `--` (empty: no agent to start)."""
    command = list(args.command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if not command and (args.agent or args.paste):
        raise UsageError("--agent and --paste need the agent's command after --, e.g. -- claude -p 'fix the tests'")
    return command


def gateway_token(command: list[str], given: str | None) -> str | None:
    """The token agents must send: the one given, else a fresh one for a started agent."""
    return given if given or not command else secrets.token_urlsafe(24)


def launch_for(args: argparse.Namespace, command: list[str], server: Any, key: str | None):
    from engine.gateway.agents import agent_launch, private_folder

    try:
        return agent_launch(
            command, host=server.host, port=server.port, token=server.token, folder=private_folder(),
            environ=os.environ, secrets=[key] if key else [], kind=args.agent, model=args.model,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def print_paste_lines(launch: Any) -> None:
    """The lines to paste in another terminal, on stdout (the token in them is this gateway's own)."""
    why = "it wants the terminal" if launch.interactive else "as asked"
    print(f"agent-tui gateway: start the agent in another terminal ({why}) with:", file=sys.stderr, flush=True)
    for line in launch.paste_lines():
        print(line, flush=True)


def start_child(launch: Any, on_output, on_exit):
    """Start the agent as a child; a command that cannot start is a one-line usage error."""
    from engine.gateway.agents import AgentChild

    child = AgentChild(launch, on_output)
    try:
        child.start(on_exit)
    except OSError as exc:
        raise UsageError(f"cannot start {launch.argv[0]}: {exc.strerror or exc}") from None
    return child
