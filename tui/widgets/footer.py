"""A footer that lists keys by what a user needs first, shows only keys it can draw
whole, and always shows help and quit.

Textual's Footer lists the focused widget's keys before the app's, and lays
every key out in one row that scrolls, invisibly, past the right edge: at 80
columns the last keys were cut mid-word (`o expa`, `p pol`) under the keys docked
on the right. This footer orders the keys by the app's list (`order`, by action
name; keys not in it keep their place after), docks the `always` keys on the
right, where they stay visible at any width, and leaves out each key that would
not fit whole in the columns left of them (help, `?`, lists every key). It lays
itself out again when its width changes.

Its keys are `FooterKeyLabel`s built from the screen's active bindings (Textual's
own key widget is not public API).
"""

from __future__ import annotations

from typing import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.events import Resize
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Footer

AlwaysKey = tuple[str, str, str, str]
"""(key, what the footer shows for it, description, action)."""

HELP_AND_QUIT: tuple[AlwaysKey, ...] = (
    ("question_mark", "?", "help", "help"),
    ("q", "q", "quit", "quit"),
)
PALETTE: AlwaysKey = ("ctrl+p", "^p", "palette", "command_palette")


def key_width(key_display: str, description: str) -> int:
    """Columns a FooterKeyLabel takes in the footer's normal (not compact) style: the key
    padded by one on each side, then the description and one space."""
    return cell_len(key_display) + 2 + (cell_len(description) + 1 if description else 0)


class FooterKeyLabel(Widget):
    """One key in the footer: the key, then what it does; a click presses the key."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer-key--key", "footer-key--description"}
    DEFAULT_CSS = """
    FooterKeyLabel {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
            padding: 0 1;
        }
        .footer-key--description {
            padding: 0 1 0 0;
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        &:hover {
            pointer: pointer;
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        &.-disabled {
            text-style: dim;
        }
        &.-compact {
            margin-right: 1;
            .footer-key--key {
                padding: 0;
            }
            .footer-key--description {
                padding: 0 0 0 1;
            }
        }
    }
    """

    compact = reactive(True)

    def __init__(self, key: str, key_display: str, description: str, action: str, *, disabled: bool = False, tooltip: str = "", classes: str = "") -> None:
        super().__init__(classes=f"{classes} -disabled" if disabled else classes)
        self.key = key
        self.key_display = key_display
        self.description = description
        self.action = action
        self.key_disabled = disabled
        self.set_reactive(Widget.shrink, False)
        if tooltip:
            self.tooltip = tooltip

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        key_padding = self.get_component_styles("footer-key--key").padding
        key = (" " * key_padding.left + self.key_display + " " * key_padding.right, key_style)
        if self.description:
            description_style = self.get_component_rich_style("footer-key--description")
            padding = self.get_component_styles("footer-key--description").padding
            label = Text.assemble(key, (" " * padding.left + self.description + " " * padding.right, description_style))
        else:
            label = Text.assemble((self.key_display, key_style))
        label.stylize_before(self.rich_style)
        return label

    def on_mouse_down(self) -> None:
        if self.key_disabled:
            self.app.bell()
        else:
            self.app.simulate_key(self.key)

    def watch_compact(self, compact: bool) -> None:
        self.set_class(compact, "-compact")


class CockpitFooter(Footer):
    DEFAULT_CSS = """
    CockpitFooter #always-keys {
        dock: right;
        width: auto;
        height: 1;
        padding-left: 1;
    }
    """

    def __init__(self, order: Sequence[str], always: Sequence[AlwaysKey]) -> None:
        super().__init__(show_command_palette=False)
        self.order = {action: n for n, action in enumerate(order)}
        self.always = list(always)
        self.laid_out_for = 0
        """The width the keys were chosen for (0: not yet)."""

    def _palette_shown(self) -> bool:
        """The palette key shows in the wide layout only (the stylesheet hides it in the narrow one)."""
        return self.app.ENABLE_COMMAND_PALETTE and not self.screen.has_class("-narrow")

    def compose(self) -> ComposeResult:
        width = self.size.width or self.app.size.width
        self.laid_out_for = width
        always_actions = {action for _, _, _, action in self.always}
        keys = self.binding_keys(exclude=always_actions)
        last = len(self.order)
        keys.sort(key=lambda key: self.order.get(key.action, last))
        always = [*self.always, *([PALETTE] if self._palette_shown() else [])]
        room = width - 1 - sum(key_width(shown, description) for _, shown, description, _ in always)
        for key in keys:
            needed = key_width(key.key_display, key.description)
            if needed <= room:
                room -= needed
                yield key
        with HorizontalGroup(id="always-keys"):
            for key, shown, description, action in self.always:
                yield FooterKeyLabel(key, shown, description, action).data_bind(compact=Footer.compact)
            if self.app.ENABLE_COMMAND_PALETTE:
                key, shown, description, action = PALETTE
                yield FooterKeyLabel(key, shown, description, action, classes="palette-key").data_bind(compact=Footer.compact)

    def binding_keys(self, exclude: set[str]) -> list[FooterKeyLabel]:
        """A key for each action the screen's shown bindings offer (its first binding), in their order."""
        keys: dict[str, FooterKeyLabel] = {}
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in exclude and binding.action not in keys:
                key = FooterKeyLabel(
                    binding.key, self.app.get_key_display(binding), binding.description, binding.action, disabled=not enabled, tooltip=tooltip
                )
                keys[binding.action] = key.data_bind(compact=Footer.compact)
        return list(keys.values())

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self.laid_out_for:
            self.call_after_refresh(self.recompose)
