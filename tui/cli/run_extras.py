"""The `run` flags that come from the configuration file, MCP servers and the operator's own task.

`make_run` asks `RunExtras.from_args` for the loaded configuration, the named
model policies, the MCP servers to start and a task the operator wrote; every
problem is a `UsageError` (exit 2).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tui.cli.common import file_name
from tui.cli.secrets import url_argument
from tui.exits import UsageError

if TYPE_CHECKING:  # engine modules load in the handlers: `--help` imports no engine
    from engine.mcp.servers import McpServerConfig
    from engine.sessions.config import Config
    from engine.core.events import Budget
    from engine.core.scenario import Task
    from engine.model.policy import ModelConfig

CUSTOM_TASK = "custom"


def add_arguments(run: argparse.ArgumentParser) -> None:
    """--config, --mcp, --mcp-url and --task-text for `run`."""
    run.add_argument("-t", "--task-text", metavar="TEXT", help="your own task for the run (instead of --task)")
    run.add_argument("--config", type=file_name, metavar="FILE", help="configuration file (default: ./agent-tui.toml, else $XDG_CONFIG_HOME/agent-tui/config.toml)")
    group = run.add_argument_group("MCP tool servers", "without a scenario, the run's tools are the servers' tools")
    group.add_argument(
        "--mcp", action="append", default=[], metavar="'COMMAND ARGS...'",
        help="start an MCP server on stdio (repeatable), or name a configured [[mcp]] server",
    )
    group.add_argument(
        "--mcp-url", action="append", default=[], metavar="URL", help="connect to an MCP server over streamable HTTP (repeatable)",
        type=url_argument("--mcp-url", "give the server in the configuration file instead ([[mcp]] url)"),
    )


@dataclass
class RunExtras:
    config: Config
    named: dict[str, ModelConfig] = field(default_factory=dict)
    servers: list[McpServerConfig] = field(default_factory=list)
    task: Task | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunExtras:
        config = read_config(getattr(args, "config", None))
        extras = cls(config=config, named=named_policies(config))
        extras.servers = servers_from_args(config, getattr(args, "mcp", []), getattr(args, "mcp_url", []))
        text = getattr(args, "task_text", None)
        if text is not None:
            from engine.core.scenario import Task

            if not text.strip():
                raise UsageError("--task-text is empty")
            if getattr(args, "task", None):
                raise UsageError("give --task or --task-text, not both")
            extras.task = Task(CUSTOM_TASK, text.strip())
            if not extras.servers and getattr(args, "scenario", None) is None:
                extras.servers = list(config.mcp)  # your own task on your configured tools
        return extras

    def pick_task(self, scenario: Any, task_id: str | None) -> Task:
        """The operator's task, else the scenario's; a scenario without tasks (MCP tools only)
        gets an empty one that the cockpit asks for. KeyError for an unknown task id."""
        if self.task is not None:
            return self.task
        if scenario.tasks or task_id is not None:
            return scenario.task(task_id)
        from engine.core.scenario import Task

        return Task(CUSTOM_TASK, "")

    def budget(self, budget: Budget) -> Budget:
        """The scenario's budget with the configuration's [budget] over it."""
        return budget.model_copy(update=self.config.budget) if self.config.budget else budget

    def restart(self, saved: list[dict[str, Any]], args: argparse.Namespace, path: str):
        """Start again the servers a transcript's header names, as the operator gives them again
        (`--mcp`, `--mcp-url`, the configuration; engine/sessions/trust.py): (hub, tools), or (None, [])."""
        from engine.sessions.trust import UnvouchedServers, vouched_servers

        given = servers_from_args(self.config, getattr(args, "mcp", []), getattr(args, "mcp_url", []))
        try:
            servers = vouched_servers(saved, self.config, given, path)
        except UnvouchedServers as exc:
            raise UsageError(str(exc)) from None
        return start_servers(servers, withheld=self.key_variables)

    @property
    def key_variables(self) -> list[str]:
        """The variables the configured model policies read their keys from (`api_key_env`)."""
        return [p.api_key_env for p in self.config.policies if p.api_key_env]

    def attach(self, run: Any, hub: Any) -> None:
        """Give a run the configured policies, edit tools and its servers (stopped when it closes),
        and the servers' warnings."""
        from engine.core.edits import edit_table

        run.named = {**self.named, **run.named}
        run.edit_tools = edit_table(self.config.edit_tools)
        for name, model in self.named.items():
            if model.prices is not None:
                run.engine.prices[name] = model.prices
        if hub is not None:
            run.mcp = hub
            run.closers.append(hub.close)
            run.warnings.extend(w for w in hub.warnings if w not in run.warnings)


def read_config(path: str | None) -> Config:
    from engine.sessions.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def named_policies(config: Config) -> dict[str, ModelConfig]:
    try:
        return {p.name: p.model_config() for p in config.policies}
    except ValueError as exc:
        raise UsageError(f"{config.path}: {exc}") from None


def default_policy(scenario, extras: RunExtras) -> str:
    """The policy a run starts with when neither --policy nor --model is given."""
    if scenario.policies:
        return scenario.default_policy
    return next(iter(extras.named), "human")


def start_servers(servers: list[McpServerConfig], withheld: list[str] = ()) -> tuple[Any, list[Any]]:
    """`engine.mcp.start.start_servers` with the servers' logs in the data folder; UsageError when one cannot start."""
    from engine.core.text import clean
    from engine.mcp.hub import McpStartError
    from engine.mcp.start import start_servers as start
    from engine.sessions.folders import user_data_dir

    try:
        return start(servers, user_data_dir() / "logs", withheld=withheld)
    except McpStartError as exc:
        raise UsageError(clean(str(exc))) from None


def servers_from_args(config: Config, commands: list[str], urls: list[str]) -> list[McpServerConfig]:
    """`engine.mcp.servers.servers_from_flags` over the configuration's servers; UsageError for a bad flag."""
    from engine.mcp.servers import McpFlagError, servers_from_flags

    try:
        return servers_from_flags(config.mcp, commands, urls)
    except McpFlagError as exc:
        raise UsageError(str(exc)) from None


def continued_extras(args: argparse.Namespace) -> RunExtras:
    """The configuration for `run --resume` / `--fork` (its named policies and servers' settings)."""
    config = read_config(getattr(args, "config", None))
    return RunExtras(config=config, named=named_policies(config))
