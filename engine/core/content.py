"""A chat message's content as text: the one reader, for a client's messages (the
gateway) and a model's reply (the model client).

Chat completions content is a string, or a list of parts whose text parts are one
text cut in pieces (joined as they are, not as paragraphs). A foreign trace's
content blocks, read as paragraphs with media named, are the importers' own
(`engine.stored.importers.build.text_of`).
"""

from __future__ import annotations

from typing import Any


def content_text(content: Any) -> str | None:
    """The text of `content`: "" for none, a string as it is, a list's text parts joined;
    None for anything else (the caller says what that is: an error, or kept whole)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return None
