"""The transcript pane: every event of the run as styled lines, drawn on demand.

INTERFACE (the cockpit and the replay viewer use only this):

    pane = TranscriptPane(id="transcript")
    pane.reset(header, events)    # show exactly these events (replay seek, resume)
    pane.append(event)            # one more event (live run); follows the end
                                  # unless the operator has scrolled up
    pane.stream(text)             # the thought a model is streaming right now,
                                  # shown below the last event; cleared by the
                                  # next append of a decision or by stream("")
    pane.event_count              # how many events are shown
    pane.follow                   # True while the pane sticks to the newest line

Untrusted text (thoughts, arguments, observations) is drawn as data: never
parsed as markup, control characters replaced (engine.text.clean).
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.widgets import RichLog

from engine.events import Event, Header
from engine.text import clean
from tui.plain import event_lines


class TranscriptPane(RichLog):
    """Placeholder implementation with the final interface."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, wrap=True, markup=False, highlight=False)
        self.event_count = 0
        self.follow = True

    def reset(self, header: Header, events: Sequence[Event]) -> None:
        self.clear()
        self.event_count = 0
        for event in events:
            self.append(event)

    def append(self, event: Event) -> None:
        self.event_count += 1
        for line in event_lines(event):
            self.write(Text(clean(line)))

    def stream(self, text: str) -> None:
        pass
