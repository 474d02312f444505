"""The replay viewer's help (`?`) lists every key it binds, the palette's ctrl+p and `?`
itself included (they were missing, though the README promises the palette)."""

from __future__ import annotations

from textual.binding import Binding

from tui.replay_app import REPLAY_HELP, ReplayApp

SHOWN = {"pageup": "pgup", "pagedown": "pgdn", "right_square_bracket": "]", "left_square_bracket": "[",
         "slash": "/", "plus": "+", "minus": "-", "question_mark": "?"}


def help_keys() -> set[str]:
    """The keys in the help's first column: `up / down, pgup / pgdn` is four of them."""
    keys: set[str] = set()
    for line in REPLAY_HELP.splitlines():
        column = line.split("  ")[0].strip()
        keys |= {part.strip() for chunk in column.split(", ") for part in chunk.split(" / ")}
    return keys - {""}


def test_every_bound_key_and_the_palette_are_in_the_help() -> None:
    listed = help_keys()
    bound = {SHOWN.get(key, key) for b in ReplayApp.BINDINGS if isinstance(b, Binding) for key in b.key.split(",")}
    bound -= {"equals_sign"}  # the unshifted `+` key, listed as +
    assert bound <= listed, bound - listed
    assert "ctrl+p" in listed and "?" in listed
