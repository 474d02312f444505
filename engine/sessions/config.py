"""The configuration file: named model policies, MCP tool servers, default rules and budgets.

`agent-tui.toml` in the current folder, else `$XDG_CONFIG_HOME/agent-tui/config.toml`
(`~/.config/...` when the variable is unset); `--config FILE` overrides both.
Every value remembers where it came from (`FILE:LINE` or `default`) so
`agent-tui config` can say so, and every problem is a `ConfigError` naming
`FILE:LINE`. A key itself is never accepted in the file: a policy names the
environment variable that holds it (`api_key_env`).

    [[policy]]
    name = "cheap"
    model = "gpt-4o-mini"
    base_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"
    price_in = 0.00015          # dollars per 1,000 input tokens
    price_out = 0.0006
    mode = "tools"              # or "text"
    wire = "chat"               # the server's API: chat, anthropic, responses or gemini

    [[mcp]]
    name = "fs"
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp/notes"]
    trusted = false
    timeout = 30

    [[rule]]
    tool = "read_*"
    effect = "allow"

    [budget]
    max_steps = 30
    max_cost = 0.50

    [[agent]]                   # an ACP agent: agent-tui run --agent gemini -t TASK
    name = "gemini"
    command = "gemini"
    args = ["--acp"]

    [[edit_tool]]               # a tool that writes files: its approval shows a diff
    tool = "save_note"
    kind = "write"              # write, replace, edits or patch (engine/core/edits.py)
    path = "filename"
    content = "text"
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping
from urllib.parse import urlsplit

from engine.core.edits import EditTool, EditToolError, edit_tool
from engine.core.smallfile import SmallFileError, read_small_text
from engine.mcp.servers import DEFAULT_MCP_TIMEOUT, McpServerConfig

if TYPE_CHECKING:  # the events (pydantic) load only when a rule is read: `--help` stays light
    from engine.core.events import RuleInfo


CONFIG_NAME = "agent-tui.toml"
DEFAULT = "default"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_KEYS = ("api_key", "key", "token", "secret", "password", "authorization")
_RESERVED_POLICIES = ("human", "model")

_POLICY_KEYS = {
    "name", "model", "base_url", "api_key_env", "price_in", "price_out", "mode", "timeout", "stream", "temperature", "system",
    "wire",
}
_MCP_KEYS = {"name", "command", "args", "url", "env", "cwd", "trusted", "timeout"}
_AGENT_KEYS = {"name", "command", "args", "env", "cwd"}
_BUDGET_KEYS = {"max_steps": int, "max_tokens": int, "max_cost": float, "max_seconds": float}


class ConfigError(Exception):
    """A configuration file that cannot be used; the message starts with FILE:LINE."""


@dataclass(frozen=True)
class PolicyConfig:
    """A named model policy. The key is read from the environment variable `api_key_env` at use."""

    name: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    price_in_per_1k: float | None = None
    price_out_per_1k: float | None = None
    mode: Literal["tools", "text"] = "tools"
    timeout: float | None = None
    stream: bool = True
    temperature: float | None = None
    system: str | None = None
    wire: str = "chat"
    """The API of the model server (`engine.wires`): chat, anthropic, responses or gemini."""
    source: str = DEFAULT

    def model_config(self, env: Mapping[str, str] | None = None):  # -> engine.model.ModelConfig
        """The endpoint settings, with the key read from `api_key_env` (or the usual variables)."""
        from dataclasses import replace

        from engine.model.config import DEFAULT_BASE_URL, KEY_VARIABLES, ModelConfig, Secret

        env = os.environ if env is None else env
        names = (self.api_key_env,) if self.api_key_env else KEY_VARIABLES
        key = next((env[v] for v in names if env.get(v)), None)
        config = ModelConfig(
            model=self.model,
            base_url=self.base_url or DEFAULT_BASE_URL,
            api_key=Secret(key) if key else None,
            price_in_per_1k=self.price_in_per_1k,
            price_out_per_1k=self.price_out_per_1k,
            mode=self.mode,
            stream=self.stream,
            temperature=self.temperature,
            system=self.system,
            wire=self.wire,
        )
        return replace(config, timeout=self.timeout) if self.timeout is not None else config


@dataclass(frozen=True)
class AgentConfig:
    """A named ACP agent: the program, its arguments and environment, the folder it works in."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    source: str = DEFAULT

    def argv(self) -> list[str]:
        return [self.command, *self.args]


@dataclass
class Config:
    """The merged configuration; `sources` maps a dotted key to `FILE:LINE` or `default`."""

    path: Path | None = None
    found: str = "none"
    policies: list[PolicyConfig] = field(default_factory=list)
    mcp: list[McpServerConfig] = field(default_factory=list)
    rules: list[RuleInfo] = field(default_factory=list)
    budget: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    edit_tools: list[EditTool] = field(default_factory=list)
    """[[edit_tool]] rows, put before the built-in ones (engine.core.edits.edit_table)."""
    agents: list[AgentConfig] = field(default_factory=list)
    """[[agent]] tables: ACP agents by name (`run --agent NAME`)."""

    def agent(self, name: str) -> AgentConfig | None:
        return next((a for a in self.agents if a.name == name), None)

    def policy(self, name: str) -> PolicyConfig | None:
        return next((p for p in self.policies if p.name == name), None)

    def server(self, name: str) -> McpServerConfig | None:
        return next((s for s in self.mcp if s.name == name), None)

    def source(self, key: str) -> str:
        return self.sources.get(key, DEFAULT)


def default_path(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> tuple[Path | None, str]:
    """The file `load_config(None)` reads and why: (path, "current folder" | "XDG_CONFIG_HOME"), or (None, "none")."""
    env = os.environ if env is None else env
    local = (cwd or Path.cwd()) / CONFIG_NAME
    if local.is_file():
        return local, "the current folder"
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    user = Path(base) / "agent-tui" / "config.toml"
    if user.is_file():
        return user, "$XDG_CONFIG_HOME" if env.get("XDG_CONFIG_HOME") else "~/.config"
    return None, "none"


def load_config(path: str | Path | None = None, *, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read the configuration: `path` if given (it must exist), else the default places, else an empty Config."""
    if path is not None:
        p, found = Path(path), "--config"
    else:
        p, found = default_path(cwd, env)  # type: ignore[assignment]
        if p is None:
            return Config()
    try:
        text = read_small_text(p, "configuration file")
    except SmallFileError as exc:
        raise ConfigError(str(exc)) from None
    return parse_config(text, p, found)


def parse_config(text: str, path: Path, found: str = "--config") -> Config:
    """Parse and check a configuration file's text; ConfigError names FILE:LINE."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"at line (\d+)", str(exc))
        line = match.group(1) if match else "1"
        raise ConfigError(f"{path}:{line}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    return _Reader(text, path, found).read(data)


class _Reader:
    """Checks the parsed TOML and finds the line of each value in the text."""

    def __init__(self, text: str, path: Path, found: str) -> None:
        self.lines = text.splitlines()
        self.path = path
        self.config = Config(path=path, found=found)
        self.tables = self._table_lines()

    # -- where things are ---------------------------------------------------------

    def _table_lines(self) -> dict[str, list[int]]:
        """The line (1-based) of every `[name]` / `[[name]]` header, in order."""
        found: dict[str, list[int]] = {}
        for number, line in enumerate(self.lines, 1):
            m = re.match(r"^\s*\[\[?\s*([A-Za-z0-9_.-]+)\s*\]\]?", line)
            if m:
                found.setdefault(m.group(1), []).append(number)
        return found

    def line_of(self, table: str, index: int | None = None, key: str | None = None) -> int:
        starts = self.tables.get(table, [])
        if not starts:
            if key is None:
                return 1
            return self._key_line(0, len(self.lines), key) or 1
        start = starts[index or 0] if (index or 0) < len(starts) else starts[-1]
        if key is None:
            return start
        following = [n for lines in self.tables.values() for n in lines if n > start]
        end = min(following) - 1 if following else len(self.lines)
        return self._key_line(start, end, key) or start

    def _key_line(self, start: int, end: int, key: str) -> int | None:
        pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        for number in range(start + 1, end + 1):
            if pattern.match(self.lines[number - 1]):
                return number
        return None

    def at(self, table: str, index: int | None = None, key: str | None = None) -> str:
        return f"{self.path}:{self.line_of(table, index, key)}"

    def fail(self, table: str, index: int | None, key: str | None, message: str) -> ConfigError:
        return ConfigError(f"{self.at(table, index, key)}: {message}")

    # -- reading ------------------------------------------------------------------

    def read(self, data: dict[str, Any]) -> Config:
        unknown = set(data) - {"policy", "mcp", "rule", "budget", "edit_tool", "agent"}
        if unknown:
            key = sorted(unknown)[0]
            raise ConfigError(
                f"{self.path}:{self.line_of(key) if key in self.tables else self._key_line(0, len(self.lines), key) or 1}: "
                f"unknown section '{key}' (expected [[policy]], [[mcp]], [[rule]], [budget], [[edit_tool]], [[agent]])"
            )
        for index, item in enumerate(self._array(data, "policy")):
            self.config.policies.append(self._policy(index, item))
        for index, item in enumerate(self._array(data, "mcp")):
            self.config.mcp.append(self._server(index, item))
        for index, item in enumerate(self._array(data, "rule")):
            self.config.rules.append(self._rule(index, item))
        if "budget" in data:
            self._budget(data["budget"])
        for index, item in enumerate(self._array(data, "edit_tool")):
            try:
                self.config.edit_tools.append(edit_tool(item, f"{self.path.name}:{self.line_of('edit_tool', index)}"))
            except EditToolError as exc:
                raise self.fail("edit_tool", index, exc.key, str(exc)) from None
            self.config.sources[f"edit_tool.{index + 1}"] = self.at("edit_tool", index)
        for index, item in enumerate(self._array(data, "agent")):
            self.config.agents.append(self._agent(index, item))
        return self.config

    def _array(self, data: dict[str, Any], name: str) -> list[dict[str, Any]]:
        raw = data.get(name, [])
        if not isinstance(raw, list) or not all(isinstance(i, dict) for i in raw):
            raise self.fail(name, None, None, f"'{name}' must be an array of tables ([[{name}]])")
        return raw

    def _name(self, table: str, index: int, item: dict[str, Any], seen: list[str]) -> str:
        name = item.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise self.fail(table, index, "name", f"[[{table}]] needs a name of letters, digits, '.', '_' or '-' (got {name!r})")
        if name in seen:
            raise self.fail(table, index, "name", f"a second [[{table}]] named '{name}'")
        return name

    def _unknown(self, table: str, index: int, item: dict[str, Any], allowed: set[str]) -> None:
        for key in item:
            if key not in allowed:
                if table == "policy" and key.lower() in _SECRET_KEYS:
                    raise self.fail(
                        table, index, key,
                        f"'{key}': a key is never read from the file; put it in an environment variable "
                        "and name that variable with api_key_env",
                    )
                raise self.fail(table, index, key, f"unknown key '{key}' in [[{table}]] (keys: {', '.join(sorted(allowed))})")

    def _number(self, table: str, index: int | None, item: dict[str, Any], key: str) -> float | None:
        value = item.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise self.fail(table, index, key, f"'{key}' must be a finite number of 0 or more, not {value!r}")
        return float(value)

    def _timeout(self, table: str, index: int, item: dict[str, Any]) -> float | None:
        timeout = self._number(table, index, item, "timeout")
        if timeout is not None and timeout <= 0:
            raise self.fail(table, index, "timeout", "timeout must be above 0")
        return timeout

    def _string(self, table: str, index: int, item: dict[str, Any], key: str) -> str | None:
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise self.fail(table, index, key, f"'{key}' must be a non-empty string, not {value!r}")
        return value

    def _record(self, prefix: str, table: str, index: int, item: dict[str, Any]) -> str:
        for key in item:
            self.config.sources[f"{prefix}.{key}"] = self.at(table, index, key)
        where = self.at(table, index)
        self.config.sources[prefix] = where
        return where

    def _policy(self, index: int, item: dict[str, Any]) -> PolicyConfig:
        self._unknown("policy", index, item, _POLICY_KEYS)
        name = self._name("policy", index, item, [p.name for p in self.config.policies])
        if name in _RESERVED_POLICIES:
            raise self.fail("policy", index, "name", f"'{name}' is a built-in policy; choose another name")
        model = self._string("policy", index, item, "model")
        if model is None:
            raise self.fail("policy", index, None, f"policy '{name}' needs a model")
        key_env = self._string("policy", index, item, "api_key_env")
        if key_env is not None and not _ENV_NAME.match(key_env):
            raise self.fail(
                "policy", index, "api_key_env",
                "api_key_env names an environment variable (like OPENAI_API_KEY); it must not hold the key itself",
            )
        mode = item.get("mode", "tools")
        if mode not in ("tools", "text"):
            raise self.fail("policy", index, "mode", f"mode must be 'tools' or 'text', not {mode!r}")
        stream = item.get("stream", True)
        if not isinstance(stream, bool):
            raise self.fail("policy", index, "stream", "stream must be true or false")
        base_url = self._string("policy", index, item, "base_url")
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise self.fail("policy", index, "base_url", f"base_url must start with http:// or https://, not {base_url!r}")
        if base_url is not None and "@" in urlsplit(base_url).netloc:
            raise self.fail("policy", index, "base_url", "base_url must not carry credentials; use api_key_env")
        wire = self._string("policy", index, item, "wire") or "chat"
        try:
            from engine.wires import wire_named

            wire_named(wire)
        except ValueError as exc:
            raise self.fail("policy", index, "wire", str(exc)) from None
        source = self._record(f"policy.{name}", "policy", index, item)
        return PolicyConfig(
            name=name,
            model=model,
            base_url=base_url,
            api_key_env=key_env,
            price_in_per_1k=self._number("policy", index, item, "price_in"),
            price_out_per_1k=self._number("policy", index, item, "price_out"),
            mode=mode,
            timeout=self._timeout("policy", index, item),
            stream=stream,
            temperature=self._number("policy", index, item, "temperature"),
            system=self._string("policy", index, item, "system"),
            wire=wire,
            source=source,
        )

    def _server(self, index: int, item: dict[str, Any]) -> McpServerConfig:
        self._unknown("mcp", index, item, _MCP_KEYS)
        name = self._name("mcp", index, item, [s.name for s in self.config.mcp])
        command = self._string("mcp", index, item, "command")
        url = self._string("mcp", index, item, "url")
        if (command is None) == (url is None):
            raise self.fail("mcp", index, None, f"server '{name}' needs either command (stdio) or url (streamable HTTP)")
        if url is not None and not url.startswith(("http://", "https://")):
            raise self.fail("mcp", index, "url", f"url must start with http:// or https://, not {url!r}")
        args = item.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise self.fail("mcp", index, "args", "args must be an array of strings")
        if url is not None and args:
            raise self.fail("mcp", index, "args", "args go with command, not with url")
        env = item.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise self.fail("mcp", index, "env", "env must be a table of string values")
        trusted = item.get("trusted", False)
        if not isinstance(trusted, bool):
            raise self.fail("mcp", index, "trusted", "trusted must be true or false")
        timeout = self._timeout("mcp", index, item)
        source = self._record(f"mcp.{name}", "mcp", index, item)
        return McpServerConfig(
            name=name,
            command=command,
            args=tuple(args),
            url=url,
            env=dict(env),
            cwd=self._string("mcp", index, item, "cwd"),
            trusted=trusted,
            timeout=DEFAULT_MCP_TIMEOUT if timeout is None else timeout,
            source=source,
        )

    def _agent(self, index: int, item: dict[str, Any]) -> AgentConfig:
        self._unknown("agent", index, item, _AGENT_KEYS)
        name = self._name("agent", index, item, [a.name for a in self.config.agents])
        command = self._string("agent", index, item, "command")
        if command is None or not command.strip():
            raise self.fail("agent", index, "command", f"agent '{name}' needs a command (its program, e.g. \"gemini\")")
        args = item.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise self.fail("agent", index, "args", "args must be an array of strings")
        env = item.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise self.fail("agent", index, "env", "env must be a table of string values")
        source = self._record(f"agent.{name}", "agent", index, item)
        return AgentConfig(name=name, command=command, args=tuple(args), env=dict(env),
                           cwd=self._string("agent", index, item, "cwd"), source=source)

    def _rule(self, index: int, item: dict[str, Any]) -> RuleInfo:
        unknown = set(item) - {"tool", "effect", "args"}
        if unknown:
            key = sorted(unknown)[0]
            raise self.fail("rule", index, key, f"unknown key '{key}' in [[rule]] (keys: args, effect, tool)")
        tool, effect, args = item.get("tool"), item.get("effect"), item.get("args", {})
        if not isinstance(tool, str) or not tool:
            raise self.fail("rule", index, "tool", "'tool' must be a non-empty string pattern")
        if effect not in ("allow", "ask", "deny"):
            raise self.fail("rule", index, "effect", f"'effect' must be allow, ask or deny, not {effect!r}")
        if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
            raise self.fail("rule", index, "args", "'args' must map argument names to string patterns")
        from engine.core.events import RuleInfo

        self._record(f"rule.{index + 1}", "rule", index, item)
        return RuleInfo(tool=tool, effect=effect, args=args, source=f"{self.path.name}:{self.line_of('rule', index)}")

    def _budget(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            raise self.fail("budget", None, None, "[budget] must be a table")
        for key, value in raw.items():
            kind = _BUDGET_KEYS.get(key)
            if kind is None:
                raise self.fail("budget", None, key, f"unknown budget '{key}' (keys: {', '.join(_BUDGET_KEYS)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == math.inf:
                raise self.fail("budget", None, key, f"'{key}' must be a number above 0, not {value!r}")
            if kind is int and not float(value).is_integer():
                raise self.fail("budget", None, key, f"'{key}' must be a whole number, not {value!r}")
            self.config.budget[key] = kind(value)
            self.config.sources[f"budget.{key}"] = self.at("budget", None, key)
