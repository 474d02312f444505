"""What seals cost: sealing a header and an "approve always", and judging a long run on resume.

    python bench/seal_bench.py [--events 100000] [--always 1000]

Prints the time to seal one header and one "approve always", the time
`engine.sessions.trust.believe` takes over a run of --events events holding
--always sealed "approve always" lines, next to the fold of the same events
(what resume does anyway), and their ratio. The key is made in a temporary
folder, never the real data folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.options import at_least  # noqa: E402


def _best(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=at_least(10), default=100_000)
    parser.add_argument("--always", type=at_least(1), default=1_000)
    args = parser.parse_args()
    os.environ["AGENT_TUI_HOME"] = tempfile.mkdtemp(prefix="seal-bench-")

    from engine.core.events import Action, ApprovalDecided, ApprovalRequested, DecisionMade, Header, Observed, RuleInfo
    from engine.core.state import fold
    from engine.sessions.seals import Sealer, load_key, seal_header
    from engine.sessions.trust import believe

    key = load_key()
    header = seal_header(key, Header(scenario="s", task="t", task_text="a task", policy="p", started_at=1.0))
    sealer = Sealer(key, header)
    rule = RuleInfo(tool="pay", effect="allow", source="approve always")
    events: list = []
    step = 0
    every = max(1, args.events // (2 * args.always))  # about two events a step
    while len(events) < args.events:
        step += 1
        action = Action(tool="pay", args={"n": step})
        events.append(DecisionMade(at=1.0, step=step, policy="p", thought="pay", actions=[action]))
        if step % every == 0:
            events.append(ApprovalRequested(at=1.0, step=step, index=0, tool="pay", args=action.args, reason="irreversible tool"))
            events.append(sealer(ApprovalDecided(at=1.0, step=step, index=0, choice="approve_always", rule=rule)))
        events.append(Observed(at=1.0, step=step, index=0, tool="pay", args=action.args, text="paid", executed=True))
    always = sum(e.type == "approval_decided" for e in events)
    one_approval = next(e for e in events if e.type == "approval_decided")

    header_s = _best(lambda: [seal_header(key, header) for _ in range(100)]) / 100
    approval_s = _best(lambda: [sealer(one_approval) for _ in range(100)]) / 100
    believe_s = _best(lambda: believe(header, events, ()), repeat=3)
    fold_s = _best(lambda: fold(header, events), repeat=3)
    print(f"seal one header:           {header_s * 1e6:8.1f} us")
    print(f"seal one approve always:   {approval_s * 1e6:8.1f} us")
    print(f"believe, {len(events):,} events with {always:,} sealed approve always: {believe_s * 1e3:8.1f} ms")
    print(f"fold of the same events:   {fold_s * 1e3:8.1f} ms")
    print(f"believe / fold:            {believe_s / fold_s:8.2f}")


if __name__ == "__main__":
    main()
