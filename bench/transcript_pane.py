"""Benchmark of the transcript pane at 1,000 and 100,000 events.

Prints: time to append one step and draw a frame (the pane's visible lines)
with 1,000 and 100,000 events already shown, time for reset() with 100,000
events (fresh, and as a replay seek to a prefix and back), time to re-wrap
after a width change, and memory. Run: python bench/transcript_pane.py
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult  # noqa: E402

from engine.core.events import (  # noqa: E402
    Action,
    ApprovalDecided,
    ApprovalRequested,
    BudgetWarning,
    DecisionMade,
    Event,
    Header,
    Observed,
)
from tui.widgets.rows import Prefix  # noqa: E402
from tui.widgets.transcript import TranscriptPane  # noqa: E402

HEADER = Header(scenario="support", task="return-1187", task_text="Return the headphones from order 1187.", policy="scripted")
SIZE = (120, 40)


def make_events(count: int) -> list[Event]:
    """A plausible mix: decisions, observations (one in ten long), approvals."""
    events: list[Event] = []
    step = 0
    while len(events) < count:
        step += 1
        events.append(
            DecisionMade(
                step=step,
                policy="scripted",
                thought=f"Step {step}: I check the order again and compare it with what the customer wrote earlier.",
                actions=[Action(tool="get_order_status", args={"order_id": str(1000 + step % 500)})],
            )
        )
        if step % 7 == 0:
            events.append(ApprovalRequested(step=step, index=0, tool="open_return_request", args={"order_id": "1187"}, reason="irreversible"))
            events.append(ApprovalDecided(step=step, index=0, choice="approve"))
        text = f"{1000 + step % 500} — delivered, 26 October"
        if step % 10 == 0:
            text = "\n".join(f"row {i}: " + "lorem ipsum dolor sit amet " * 6 for i in range(40))
        events.append(Observed(step=step, index=0, tool="get_order_status", text=text, executed=True))
        if step % 50 == 0:
            events.append(BudgetWarning(kind="tokens", used=step, limit=step + 100))
    return events[:count]


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="transcript")


def draw_frame(pane: TranscriptPane) -> None:
    for y in range(pane.size.height):
        pane.render_line(y)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def append_and_draw(pane: TranscriptPane, shown: list[Event], extra: list[Event], rounds: int = 200) -> float:
    """Median time of one more event (the pane reset to a Prefix of the growing log, as the
    cockpit does) + drawing every visible line, after `shown`."""
    log = list(shown)
    pane.reset(HEADER, Prefix(log, len(log)))  # counted once, untimed: the cockpit's pane starts so
    draw_frame(pane)
    times = []
    for event in extra[:rounds]:
        log.append(event)
        start = time.perf_counter()
        pane.reset(HEADER, Prefix(log, len(log)))
        draw_frame(pane)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def run() -> None:
    base = make_events(100_000)
    extra = make_events(400)
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(TranscriptPane)

        pane.reset(HEADER, base[:1_000])
        await pilot.pause()
        small = append_and_draw(pane, base[:1_000], extra)

        start = time.perf_counter()
        pane.reset(HEADER, base)
        draw_frame(pane)
        reset_fresh = time.perf_counter() - start

        await pane.remove()
        pane = TranscriptPane(id="transcript")
        await app.mount(pane)
        await pilot.pause()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        pane.reset(HEADER, base)
        draw_frame(pane)
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        pane_bytes = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        await pilot.pause()

        big = append_and_draw(pane, base, extra)

        start = time.perf_counter()
        pane.reset(HEADER, base[:50_000])
        draw_frame(pane)
        seek_back = time.perf_counter() - start
        start = time.perf_counter()
        pane.reset(HEADER, base)
        draw_frame(pane)
        seek_forward = time.perf_counter() - start

        start = time.perf_counter()
        pane.action_toggle_folds()
        draw_frame(pane)
        toggle = time.perf_counter() - start

        start = time.perf_counter()
        await pilot.resize_terminal(90, 40)
        await pilot.pause()
        draw_frame(pane)
        resize = time.perf_counter() - start

        start = time.perf_counter()
        pane.scroll_to(y=pane.max_scroll_y // 2, animate=False)
        draw_frame(pane)
        jump = time.perf_counter() - start

    events_bytes = measure_events_memory()
    print("transcript pane benchmark (terminal %dx%d)" % SIZE)
    print(f"append one event + draw a frame, 1,000 events shown:   {ms(small)}")
    print(f"append one event + draw a frame, 100,000 events shown: {ms(big)}")
    print(f"  ratio 100k / 1k: {big / small:.2f}")
    print(f"reset() with 100,000 new events + draw:                 {ms(reset_fresh)}")
    print(f"reset() to 50,000 (seek back, known prefix) + draw:     {ms(seek_back)}")
    print(f"reset() to 100,000 again (seek forward) + draw:         {ms(seek_forward)}")
    print(f"toggle all folds at 100,000 events + draw:              {ms(toggle)}")
    print(f"width change (re-wrap 100,000 events) + draw:           {ms(resize)}")
    print(f"jump to the middle + draw:                              {ms(jump)}")
    print(f"memory held by the pane for 100,000 events:            {pane_bytes / 1e6:8.1f} MB")
    print(f"memory of the 100,000 events themselves:                {events_bytes / 1e6:8.1f} MB")



def measure_events_memory() -> int:
    gc.collect()
    tracemalloc.start()
    events = make_events(100_000)
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del events
    return size


if __name__ == "__main__":
    asyncio.run(run())
