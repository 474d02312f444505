"""The one place a run's engine is made, for a new run, a resume, a fork and a gateway run.

The caller gives the header (sealed with `engine.sessions.seals.sealed_run` for a new file),
the transcript writer it is written to, and what seals its "approve always"; a
continued run also gives its saved events and their fold.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from engine.core.engine import ApproveMode, Engine, Listener
from engine.core.events import Header
from engine.core.policy import Policy
from engine.core.tools import Tool
from engine.sessions.seals import Sealer
from engine.stored.transcript import TranscriptWriter


def build_engine(
    header: Header,
    tools: Sequence[Tool],
    policy: Policy,
    *,
    writer: TranscriptWriter | None,
    sealer: Sealer | None,
    listeners: Sequence[Listener] = (),
    clock: Callable[[], float] = time.time,
    interactive: bool = False,
    approve: ApproveMode = "ask",
    **restored: Any,
) -> Engine:
    """The engine of a run that writes to `writer` (None: not saved) and seals with `sealer`
    (None: no key, or not saved). `restored`: the saved events, their fold and lines of a
    continued run, or `tools_elsewhere` for a gateway's (see `Engine`)."""
    engine = Engine(
        header, tools, policy, listeners=listeners, clock=clock, interactive=interactive, approve=approve, sink=writer, **restored
    )
    engine.seal_approval = sealer
    return engine
