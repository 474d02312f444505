"""A file edit drawn for the operator who approves it (engine.core.edits computes it, this draws it):
the note saying what was compared, then the diff or patch in the diff lexer's colours, or the
new content in its language's, guessed from the file name only. The lines are untrusted text
already made safe to show; they go to Syntax as code, never as markup."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.widgets import Static

from engine.core.edits import EditPreview

THEME = "ansi_dark"
"""The terminal's own colours: green and red for added and removed lines, whatever its palette."""


def lexer_for(path: str) -> str:
    """The language of a file by its extension ("default", plain text, when none is known);
    its content is never read for this."""
    return Syntax.guess_lexer(path)


def preview_text(preview: EditPreview) -> Text:
    """The note, then the lines coloured by their lexer (token colours only: the dialog's own
    background shows through, and long lines wrap rather than being cut)."""
    text = Text()
    text.append(preview.note, style="italic")
    if preview.lines:
        lexer = lexer_for(preview.path) if preview.shows == "content" else "diff"
        code = "\n".join(preview.lines)
        text.append("\n")
        text.append_text(Syntax(code, lexer, theme=THEME).highlight(code))
        if text.plain.endswith("\n"):  # the one highlight adds
            text.right_crop(1)
    return text


class DiffView(Static):
    """An `EditPreview` drawn whole (the dialog's scroll view around it scrolls a long one)."""

    DEFAULT_CSS = "DiffView { height: auto; }"

    def __init__(self, preview: EditPreview, *, id: str | None = None) -> None:
        super().__init__(preview_text(preview), id=id, markup=False)
        self.preview = preview
