"""Which approval rules of a stored run a resume or a fork believes.

A transcript grants permission in two places: the header's rules and each
"approve always". Both are believed only with a good seal by this machine's
key (`engine.sessions.seals`). Without one:

- the header's rules are the operator's as loaded now (the scenario's rules and
  those the caller gives, the configuration's), plus the file's ask and deny
  rules, which only ever hold a call back; the file's allow rules are not used;
- an "approve always" counts as a plain approval of the call it answered: its
  rule is not added.

The file itself is never changed: this is how its events are folded, and the
operator is told once which rules were not used.

A saved run's MCP servers are believed the same way (`vouched_servers`): the header
records each server's command line or URL, so that a reader knows what the run's
tools were, but a saved run is data: it never chooses a command to start, a URL to
connect to, a folder to start in, or which servers' hints to trust. Each recorded
server must match (by name and command line, or name and URL) one the operator gives
again with `--mcp` / `--mcp-url` or keeps in the configuration; the operator's entry
is then started as the operator wrote it (environment, folder, trust, timeout).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from engine.core.events import Event, Header, RuleInfo
from engine.core.urls import safe_url
from engine.sessions.seals import Sealer, header_sealed, key_or_problem, sealed_run

if TYPE_CHECKING:
    from engine.mcp.servers import McpServerConfig
    from engine.sessions.config import Config


class UnvouchedServers(Exception):
    """A saved run's MCP servers that the operator does not give again (or gives one it never had)."""


@dataclass
class Trust:
    """What a resume or a fork of one stored run believes."""

    header: Header
    """The header as believed: the file's own when its seal is good, else the same with the
    believed rules (see the module docstring)."""
    events: list[Event]
    """The events to fold: an "approve always" without a good seal stands without its rule."""
    key: bytes | None
    sealed: set[int] = field(default_factory=set)
    """Positions of the "approve always" lines with a good seal (a fork seals them again for itself)."""
    unused: list[str] = field(default_factory=list)
    """The rules not used, described for the operator."""
    problem: str | None = None
    """Why there is no key, when there is none."""
    events_whole: bool = True
    """No "approve always" lost its rule."""
    header_whole: bool = True
    """The header is believed as it is."""

    @property
    def whole(self) -> bool:
        """Everything the file grants is believed (its fold is the plain one)."""
        return self.header_whole and self.events_whole

    def warning(self, path: object) -> str | None:
        """The one message for the operator, or None when every rule is used."""
        if not self.unused:
            return None
        count = len(self.unused)
        rules = "1 approval rule" if count == 1 else f"{count} approval rules"
        were, they = ("was", "it") if count == 1 else ("were", "they")
        why = f"{they} cannot be checked: {self.problem}" if self.problem else "no valid seal"
        return (
            f"{rules} in {path} {were} not made on this machine ({why}): {they} {'is' if count == 1 else 'are'} not used, "
            f"and the calls {they} allowed are asked again ({'; '.join(self.unused)})"
        )

    def sealer(self, header: Header) -> Sealer | None:
        """What seals the "approve always" of a run whose file header is `header`."""
        return None if self.key is None else Sealer(self.key, header)

    def seal(self, header: Header) -> Header:
        """`header` sealed by this machine's key (without a seal when there is no key)."""
        return sealed_run(self.key, header)[0]

    def resealed(self, events: Sequence[Event], header: Header) -> list[Event]:
        """`events` (the first of the file's) for a fork whose header is `header`: each
        "approve always" with a good seal here is sealed again for the fork's run."""
        sealer = self.sealer(header)
        if sealer is None or not self.sealed:
            return list(events)
        return [sealer(e) if i in self.sealed else e for i, e in enumerate(events)]  # type: ignore[arg-type]


def believe(header: Header, events: Sequence[Event], operator_rules: Sequence[RuleInfo]) -> Trust:
    """What to believe of a stored run (`header` and its `events`); `operator_rules`: the rules
    the operator loads now (the scenario's, the configuration's), used when the header's are not."""
    trust = trust_in(header, operator_rules)
    trust.events = list(believed(trust, header, events))
    return trust


def trust_in(header: Header, operator_rules: Sequence[RuleInfo]) -> Trust:
    """`believe` of the header alone (no events yet: `believed` gives them, one by one)."""
    key, problem = key_or_problem()
    trust = Trust(header=header, events=[], key=key, problem=problem)
    if key is None or not header_sealed(key, header):
        trust.header = _unsealed_header(header, operator_rules, trust.unused)
        trust.header_whole = False
    return trust


def believed(trust: Trust, header: Header, events: Iterable[Event]) -> Iterator[Event]:
    """Each of `events` (the run's, in order, under the file's `header`) as `trust` believes it,
    noting in `trust` which were sealed and which rules are not used (a resume's one pass)."""
    sealer = trust.sealer(header)
    pending: tuple[int, int, str] | None = None
    for position, event in enumerate(events):
        if event.type == "approval_requested":
            pending = (event.step, event.index, event.tool)
        elif event.type == "approval_decided":
            answered, pending = pending, None
            if event.choice == "approve_always" and event.rule is not None:
                if sealer is not None and sealer.sealed(event):
                    trust.sealed.add(position)
                else:
                    event = event.model_copy(update={"rule": None})
                    trust.events_whole = False
                    if answered is not None and answered[:2] == (event.step, event.index):
                        trust.unused.append(f"approve always for {answered[2]} at step {event.step}")
        yield event


def _unsealed_header(header: Header, operator_rules: Sequence[RuleInfo], unused: list[str]) -> Header:
    rules = list(operator_rules)
    for rule in header.rules:
        if rule in rules:
            continue
        if rule.effect == "allow":
            shown = rule.tool + (f" {rule.args}" if rule.args else "")
            unused.append(f"allow {shown} in the header")
        else:
            rules.append(rule)
    return header.model_copy(update={"rules": rules, "seal": None})


def _server_key(name: Any, command: Any, args: Any, url: Any) -> tuple[str, ...] | None:
    """What identifies a server: its name and its URL, or its name and its whole command line."""
    if isinstance(url, str) and url:
        return ("url", str(name), safe_url(url))  # a header records the URL without its credentials
    if not isinstance(command, str) or not isinstance(args, (list, tuple)):
        return None
    return ("stdio", str(name), command, *(str(a) for a in args))


def _server_flag(data: dict[str, Any]) -> str:
    """The flag that starts a recorded server again, cleaned for the terminal."""
    from engine.core.text import clean

    url = data.get("url")
    if isinstance(url, str) and url:
        return clean(f"--mcp-url {shlex.quote(safe_url(url))}")
    words = [str(data.get("command")), *(str(a) for a in data.get("args", []) if isinstance(data.get("args"), list))]
    return clean(f"--mcp {shlex.quote(shlex.join(words))}")


def vouched_servers(saved: list[dict[str, Any]], config: Config, given: list[McpServerConfig], path: str) -> list[McpServerConfig]:
    """The operator's servers that stand for the ones `saved` (a header's `mcp` list) names, in its order.

    `given`: the servers of this command's `--mcp` / `--mcp-url`; the configuration's servers
    vouch too. A recorded server nobody vouches for, or a given one the run never had,
    is an UnvouchedServers error."""
    known: dict[tuple[str, ...], McpServerConfig] = {}
    for server in [*config.mcp, *given]:
        key = _server_key(server.name, server.command, list(server.args), server.url)
        if key is not None:
            known[key] = server
    servers: list[McpServerConfig] = []
    missing: list[str] = []
    for data in saved:
        if not isinstance(data, dict):
            raise UnvouchedServers(f"{path}: the transcript's MCP server entry cannot be read: {data!r}")
        key = _server_key(data.get("name"), data.get("command"), data.get("args", []), data.get("url"))
        server = known.get(key) if key is not None else None
        if server is None:
            missing.append(_server_flag(data))
        else:
            servers.append(server)
    if missing:
        raise UnvouchedServers(
            f"{path}: the run used MCP servers started from its own command lines; a saved run never chooses a "
            f"command to start: give them again to continue it ({' '.join(missing)}), or name them in your configuration"
        )
    extra = [s for s in given if s not in servers]
    if extra:
        from engine.core.text import clean

        names = ", ".join(clean(safe_url(s.url) if s.url else shlex.join([s.command or "", *s.args])) for s in extra)
        raise UnvouchedServers(f"{path}: the run had no MCP server {names}; a continued run keeps the servers it had")
    return servers
