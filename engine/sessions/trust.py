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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from engine.core.events import Event, Header, RuleInfo
from engine.sessions.seals import Sealer, header_sealed, key_or_problem, seal_header


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
        plain = header.model_copy(update={"seal": None})
        return plain if self.key is None else seal_header(self.key, plain)

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
    key, problem = key_or_problem()
    trust = Trust(header=header, events=list(events), key=key, problem=problem)
    if key is None or not header_sealed(key, header):
        trust.header = _unsealed_header(header, operator_rules, trust.unused)
        trust.header_whole = False
    sealer = trust.sealer(header)
    pending: tuple[int, int, str] | None = None
    for position, event in enumerate(events):
        if event.type == "approval_requested":
            pending = (event.step, event.index, event.tool)
            continue
        if event.type != "approval_decided":
            continue
        answered, pending = pending, None
        if event.choice != "approve_always" or event.rule is None:
            continue
        if sealer is not None and sealer.sealed(event):
            trust.sealed.add(position)
            continue
        trust.events[position] = event.model_copy(update={"rule": None})
        trust.events_whole = False
        if answered is not None and answered[:2] == (event.step, event.index):
            trust.unused.append(f"approve always for {answered[2]} at step {event.step}")
    return trust


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
