"""Approval rules: allow / ask / deny by tool-name pattern and argument patterns.

Patterns are shell-style globs (`open_*`, `*`). Among the rules that match a
call, deny beats ask beats allow. With no matching rule an irreversible tool
asks and any other tool is allowed.

A rules file is TOML:

    [[rule]]
    tool = "open_return_request"
    effect = "allow"
    args = { order_id = "11*" }
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path
from typing import Any, Iterable, Literal

from engine.core.events import RuleInfo
from engine.core.tools import Tool

Effect = Literal["allow", "ask", "deny"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}


class RulesError(Exception):
    """A rules file that cannot be used; the message names the file and the problem."""


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def rule_matches(rule: RuleInfo, tool: str, args: dict[str, Any]) -> bool:
    if not fnmatch.fnmatchcase(tool, rule.tool):
        return False
    for key, pattern in rule.args.items():
        if key not in args or not fnmatch.fnmatchcase(_value_text(args[key]), pattern):
            return False
    return True


def decide_effect(rules: Iterable[RuleInfo], tool: Tool, args: dict[str, Any]) -> tuple[Effect, str]:
    """The effect for one call and why, e.g. ("ask", "irreversible tool")."""
    best: RuleInfo | None = None
    for rule in rules:
        if rule_matches(rule, tool.name, args) and (best is None or _RANK[rule.effect] > _RANK[best.effect]):
            best = rule
    if best is not None:
        where = f" from {best.source}" if best.source else ""
        shown = best.tool + (f" {best.args}" if best.args else "")
        return best.effect, f"rule {best.effect} {shown}{where}"
    if tool.kind == "irreversible":
        return "ask", "irreversible tool"
    return "allow", "ordinary tool"


def load_rules(path: str | Path) -> list[RuleInfo]:
    """Read a TOML rules file; raises RulesError with a clear message."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RulesError(f"{p}: no such rules file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"{p}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{p}: not valid TOML: {exc}") from None
    raw = data.get("rule", [])
    if not isinstance(raw, list):
        raise RulesError(f"{p}: 'rule' must be an array of tables ([[rule]])")
    rules: list[RuleInfo] = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise RulesError(f"{p}: rule {n}: expected a table")
        tool = item.get("tool")
        effect = item.get("effect")
        args = item.get("args", {})
        if not isinstance(tool, str) or not tool:
            raise RulesError(f"{p}: rule {n}: 'tool' must be a non-empty string pattern")
        if effect not in _RANK:
            raise RulesError(f"{p}: rule {n}: 'effect' must be allow, ask or deny, not {effect!r}")
        if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
            raise RulesError(f"{p}: rule {n}: 'args' must map argument names to string patterns")
        unknown = set(item) - {"tool", "effect", "args"}
        if unknown:
            raise RulesError(f"{p}: rule {n}: unknown keys {', '.join(sorted(unknown))}")
        rules.append(RuleInfo(tool=tool, effect=effect, args=args, source=f"{p.name}:{n}"))
    return rules
