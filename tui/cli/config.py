"""`agent-tui config`: the merged configuration and where each value came from."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from tui.cli.common import add_command, file_name

if TYPE_CHECKING:  # loaded in the handler: `--help` imports no engine
    from engine.sessions.config import Config


def register(sub: Any) -> None:
    config = add_command(sub, "config", run)
    config.add_argument("--config", type=file_name, metavar="FILE", help="configuration file (default: ./agent-tui.toml, else $XDG_CONFIG_HOME/agent-tui/config.toml)")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _line(key: str, value: Any, source: str) -> str:
    text = f"{key} = {_value(value)}"
    return f"{text:<48} # {source}"


def config_lines(config: Config) -> list[str]:
    """The configuration as TOML with a `# FILE:LINE` or `# default` comment on every value."""
    from engine.model.config import DEFAULT_BASE_URL, KEY_VARIABLES
    from engine.sessions.config import DEFAULT

    if config.path is None:
        lines = ["# no configuration file (looked for ./agent-tui.toml, then $XDG_CONFIG_HOME/agent-tui/config.toml)"]
    else:
        lines = [f"# configuration file: {config.path} (from {config.found})"]
    lines.append("# policies always available: the scenario's scripted policies, human")
    for p in config.policies:
        at = f"policy.{p.name}"
        lines += ["", f"{'[[policy]]':<48} # {config.source(at)}"]
        values: list[tuple[str, Any, Any]] = [
            ("name", p.name, None),
            ("model", p.model, None),
            ("base_url", p.base_url, DEFAULT_BASE_URL),
            ("api_key_env", p.api_key_env, " or ".join(KEY_VARIABLES)),
            ("price_in", p.price_in_per_1k, 0.0),
            ("price_out", p.price_out_per_1k, 0.0),
            ("mode", p.mode, None),
            ("timeout", p.timeout, 60.0),
            ("stream", p.stream, None),
        ]
        for key, value, default in values:
            lines.append(_line(key, default if value is None else value, config.sources.get(f"{at}.{key}", DEFAULT)))
    for s in config.mcp:
        at = f"mcp.{s.name}"
        lines += ["", f"{'[[mcp]]':<48} # {config.source(at)}"]
        shown: list[tuple[str, Any]] = [("name", s.name)]
        shown += [("url", s.url)] if s.url else [("command", s.command), ("args", list(s.args))]
        if s.env:
            shown.append(("env", {k: "(set)" for k in s.env}))
        shown += [("cwd", s.cwd or "."), ("trusted", s.trusted), ("timeout", s.timeout)]
        for key, value in shown:
            lines.append(_line(key, value, config.sources.get(f"{at}.{key}", DEFAULT)))
    for n, rule in enumerate(config.rules, 1):
        lines += ["", f"{'[[rule]]':<48} # {config.source(f'rule.{n}')}"]
        lines.append(_line("tool", rule.tool, config.source(f"rule.{n}.tool")))
        lines.append(_line("effect", rule.effect, config.source(f"rule.{n}.effect")))
        if rule.args:
            lines.append(_line("args", rule.args, config.source(f"rule.{n}.args")))
    lines += ["", "[budget]"]
    for key in ("max_steps", "max_tokens", "max_cost", "max_seconds"):
        if key in config.budget:
            lines.append(_line(key, config.budget[key], config.source(f"budget.{key}")))
        else:
            lines.append(f"# {key} not set: the scenario's default or the --{key.replace('_', '-')} flag")
    return lines


def run(args: argparse.Namespace) -> int:
    """Print the merged configuration and where each value came from.

    Print the configuration agent-tui uses (agent-tui.toml in the current folder, else
    $XDG_CONFIG_HOME/agent-tui/config.toml, or --config FILE) with the origin of every value.
    """
    from engine.sessions.config import ConfigError, load_config
    from tui.exits import UsageError

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    for line in config_lines(config):
        print(line)
    return 0
