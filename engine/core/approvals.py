"""Approval rules: allow / ask / deny by tool-name pattern and argument patterns.

Patterns are shell-style globs (`*` any run of characters, `?` one
character, `[abc]` one of them), matched case-sensitively against the whole
tool name or the whole argument value. An argument pattern is matched against
the value the tool will receive (after validation and coercion: an integer
argument as its digits) and, when they differ, also against the value as the
policy proposed it and both without surrounding whitespace: a deny or ask rule
applies when any of these matches, an allow rule only when all of them do.
Among the rules that match a call, deny beats ask beats allow. With no
matching rule an irreversible tool asks and any other tool is allowed.

A rules file is TOML:

    [[rule]]
    tool = "open_return_request"
    effect = "allow"
    args = { order_id = "11*" }
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

from engine.core.events import RuleInfo
from engine.core.smallfile import SmallFileError, read_small_text
from engine.core.tools import Tool

Effect = Literal["allow", "ask", "deny"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}


def always_rule(tool: str) -> RuleInfo:
    """The rule "approve always" adds: allow exactly this tool. A name holding glob characters
    (a tool an agent or a server called `*` or `write_*`) is matched as written, never as a pattern."""
    return RuleInfo(tool=re.sub(r"([*?\[])", r"[\1]", tool), effect="allow", source="approve always")


class RulesError(Exception):
    """A rules file that cannot be used; the message names the file and the problem."""


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _variants(key: str, args: dict[str, Any], proposed: dict[str, Any] | None) -> set[str]:
    """The texts an argument pattern is matched against (see the module docstring)."""
    texts = {_value_text(args[key])}
    if proposed is not None and key in proposed:
        texts.add(_value_text(proposed[key]))
    return texts | {t.strip() for t in texts}


def rule_matches(rule: RuleInfo, tool: str, args: dict[str, Any], proposed: dict[str, Any] | None = None) -> bool:
    """Whether `rule` applies to a call of `tool` with (validated) `args`; `proposed`
    are the arguments as the policy wrote them, before validation."""
    if not fnmatch.fnmatchcase(tool, rule.tool):
        return False
    needs_all = rule.effect == "allow"
    for key, pattern in rule.args.items():
        if key not in args:
            return False
        hits = [fnmatch.fnmatchcase(text, pattern) for text in _variants(key, args, proposed)]
        if not (all(hits) if needs_all else any(hits)):
            return False
    return True


def decide_effect(
    rules: Iterable[RuleInfo], tool: Tool, args: dict[str, Any], proposed: dict[str, Any] | None = None
) -> tuple[Effect, str]:
    """The effect for one call and why, e.g. ("ask", "irreversible tool")."""
    best: RuleInfo | None = None
    for rule in rules:
        if rule_matches(rule, tool.name, args, proposed) and (best is None or _RANK[rule.effect] > _RANK[best.effect]):
            best = rule
    if best is not None:
        where = f" from {best.source}" if best.source else ""
        shown = best.tool + (f" {best.args}" if best.args else "")
        return best.effect, f"rule {best.effect} {shown}{where}"
    if tool.kind == "irreversible":
        return "ask", "irreversible tool"
    return "allow", "ordinary tool"


def rule_warnings(rules: Iterable[RuleInfo], tools: Iterable[Tool]) -> list[str]:
    """Rules that can never apply in this run: no tool matches, or an argument no matching tool has."""
    tools = list(tools)
    names = ", ".join(t.name for t in tools)
    warnings: list[str] = []
    for rule in rules:
        where = f"{rule.source}: " if rule.source else ""
        matching = [t for t in tools if fnmatch.fnmatchcase(t.name, rule.tool)]
        if not matching:
            warnings.append(
                f"{where}rule {rule.effect} '{rule.tool}' matches no tool of this run (tools: {names}; "
                "patterns are case-sensitive globs)"
            )
            continue
        for key in rule.args:
            if not any(key in {p.name for p in t.params} for t in matching):
                warnings.append(f"{where}rule {rule.effect} '{rule.tool}': no matching tool has an argument '{key}'")
    return warnings


_RULE_KEYS = ("tool", "effect", "args")
_TABLE = re.compile(r"^\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?")


def _hint(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" (expected: {', '.join(choices)})"


class _Lines:
    """Where things are in a rules file, for FILE:LINE messages (tomllib gives no positions)."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def _find(self, pattern: str, start: int = 0, stop: int | None = None) -> int | None:
        regex = re.compile(pattern)
        for n in range(start, len(self.lines) if stop is None else stop):
            if regex.search(self.lines[n]):
                return n
        return None

    def top_level(self, key: str) -> int | None:
        quoted = re.escape(key)
        return self._find(rf'^\s*(\[\[?\s*"?{quoted}"?\s*[\].]|"?{quoted}"?\s*=)')

    def rule_block(self, n: int) -> tuple[int | None, int | None]:
        """The lines of the n-th [[rule]] table (1-based): from its header to the next table."""
        seen = 0
        for index, line in enumerate(self.lines):
            match = _TABLE.match(line)
            if match and match.group("name").strip('"') == "rule" and line.lstrip().startswith("[["):
                seen += 1
                if seen == n:
                    end = next(
                        (j for j in range(index + 1, len(self.lines)) if _TABLE.match(self.lines[j])
                         and not _TABLE.match(self.lines[j]).group("name").startswith("rule.")),
                        len(self.lines),
                    )
                    return index, end
        return self.top_level("rule"), None

    def where(self, n: int, key: str | None = None) -> str:
        start, stop = self.rule_block(n)
        line = start
        if key is not None and start is not None:
            found = self._find(rf'(^|[{{,\s])"?{re.escape(key)}"?\s*=', start, stop)
            line = found if found is not None else start
        return f"{self.path}:{line + 1}" if line is not None else f"{self.path}"


def load_rules(path: str | Path) -> list[RuleInfo]:
    """Read a TOML rules file; RulesError names FILE:LINE, the problem and a hint.

    Anything it does not know (a table other than [[rule]], a key other than
    tool, effect and args) is an error, so a typo cannot silently drop a rule.
    """
    p = Path(path)
    try:
        text = read_small_text(p, "rules file")
        data = tomllib.loads(text)
    except SmallFileError as exc:
        raise RulesError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{p}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion
        raise RulesError(f"{p}: not valid TOML: nested too deeply") from None
    at = _Lines(p, text)
    for key in data:
        if key != "rule":
            line = at.top_level(key)
            place = f"{p}:{line + 1}" if line is not None else str(p)
            raise RulesError(f"{place}: unknown table or key '{key}'{_hint(key, ['rule'])}; rules are [[rule]] tables")
    raw = data.get("rule", [])
    if not isinstance(raw, list):
        raise RulesError(f"{at.where(1)}: 'rule' must be an array of tables ([[rule]])")
    rules: list[RuleInfo] = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise RulesError(f"{at.where(n)}: rule {n}: expected a table")
        for key in item:
            if key not in _RULE_KEYS:
                raise RulesError(f"{at.where(n, key)}: rule {n}: unknown key '{key}'{_hint(key, _RULE_KEYS)}")
        tool = item.get("tool")
        effect = item.get("effect")
        args = item.get("args", {})
        if not isinstance(tool, str) or not tool:
            raise RulesError(f"{at.where(n, 'tool')}: rule {n}: 'tool' must be a non-empty string pattern")
        if effect not in _RANK:
            shown = _hint(effect, list(_RANK)) if isinstance(effect, str) else ""
            raise RulesError(f"{at.where(n, 'effect')}: rule {n}: 'effect' must be allow, ask or deny, not {effect!r}{shown}")
        if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
            raise RulesError(f"{at.where(n, 'args')}: rule {n}: 'args' must map argument names to string patterns")
        rules.append(RuleInfo(tool=tool, effect=effect, args=args, source=f"{p.name}:{(at.rule_block(n)[0] or 0) + 1}"))
    return rules
