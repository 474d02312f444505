"""The API key never reaches the screen or a file, whatever way a server echoes it back.

A loopback fake server echoes the key it received (its Authorization header)
in each way a real one might: in an error body cut by agent-tui at 200
characters, in a reply that is not JSON (cut at 120), split by a newline, in
a reply's text (streamed in pieces or whole), in tool arguments, in a broken
stream line. After each run, every file the run wrote and everything it
printed is searched for any 10-character piece of the key.
"""

from __future__ import annotations


import pytest

from engine.model.keymask import KeyMask, MaskedStream
from tests.support.fake_openai import FakeOpenAI, Raw, Status, call, say
from tui.cli import main

KEY = "sk-test-3f9a1c7e5b2d4f6081a9c3e7b5d1f2a4c6e8b0d2f4a6c8e"
PIECES = {KEY[i : i + 10] for i in range(len(KEY) - 9)}


def _key(request) -> str:
    return request.headers["authorization"].removeprefix("Bearer ")


def _leaks(text: str) -> list[str]:
    return sorted(p for p in PIECES if p in text)


ECHOES = {
    "error body cut inside the key": lambda r: Status(400, "x" * 160 + " Authorization: " + r.headers["authorization"]),
    "error body, key split by a newline": lambda r: Status(400, f"bad key {_key(r)[:20]}\n{_key(r)[20:]} given"),
    "error body, key split by spaces": lambda r: Status(422, f"bad key {_key(r)[:25]}  {_key(r)[25:]}"),
    "404 body": lambda r: Status(404, "no route for " + r.headers["authorization"]),
    "a 200 reply that is not JSON": lambda r: Raw("<html>" + "y" * 100 + r.headers["authorization"] + "</html>", "text/plain"),
    "a broken stream line": lambda r: Raw("data: {\"choices\": [" + "z" * 80 + _key(r) + "\n\n", "text/event-stream"),
    "the reply's text": lambda r: say(f"Your key is {_key(r)}, keep it safe."),
    "the reply's text split by a newline": lambda r: say(f"Key: {_key(r)[:30]}\n{_key(r)[30:]}"),
    "tool arguments": lambda r: call("get_order_status", content=f"looking up {_key(r)}", order_id=_key(r)),
}


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("echo", list(ECHOES))
def test_an_echoed_key_is_nowhere_in_what_the_run_wrote_or_printed(tmp_path, capfd, monkeypatch, echo, stream):
    home = tmp_path / "home"
    monkeypatch.setenv("AGENT_TUI_HOME", str(home))
    monkeypatch.setenv("AGENT_TUI_API_KEY", KEY)
    out = tmp_path / "run.jsonl"
    with FakeOpenAI() as server:
        server.add(ECHOES[echo], ECHOES[echo], say("done"))
        argv = ["run", "support", "--headless", "--approve", "none", "--model", "m", "--base-url", server.url,
                "--out", str(out), "--max-steps", "3"]
        code = main(argv + ([] if stream else ["--no-stream"]))
        assert server.requests and server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    printed = "".join(capfd.readouterr())
    assert code in (0, 3), printed
    assert _leaks(printed) == [], f"the key was printed ({echo})"
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert out in files
    for path in files:
        assert _leaks(path.read_text(errors="replace")) == [], f"the key is in {path} ({echo})"
    assert "***" in out.read_text() + printed, "the echo never arrived: the test would prove nothing"


def test_the_streamed_preview_never_shows_a_piece_of_the_key():
    shown: list[str] = []
    stream = MaskedStream(KeyMask(KEY), shown.append)
    text = f"before {KEY} middle {KEY[:22]}\n{KEY[22:]} after"
    for ch in text:
        stream(ch)
        assert _leaks("".join(shown)) == []
    stream.close()
    assert "".join(shown) == "before *** middle *** after"


@pytest.mark.parametrize("gap", [" " * 8, "\n " * 4, "\\n" * 4, "\\r\\n\\t\\n", "\n\\n" * 2])
def test_a_key_with_the_widest_gaps_the_mask_allows_is_masked_in_a_stream_and_found_in_a_tail(gap):
    """The mask allows a gap of up to 8 characters between two of the key's characters (8
    whitespace, or 4 of them and JSON's escapes, two characters each): a key spelled with the
    widest is within one `span`, so a stream holds it back until it is whole and a tail sees all of it."""
    mask = KeyMask(KEY)
    spelled = gap.join(KEY)
    shown: list[str] = []
    stream = MaskedStream(mask, shown.append)
    for ch in f"before {spelled} after":
        stream(ch)
    stream.close()
    assert "".join(shown) == "before *** after"
    assert len(spelled) <= mask.span
    assert mask.tail_state("said " + spelled) == (True, False)
    assert mask.tail_state("said " + spelled[: len(spelled) // 2]) == (False, True)


@pytest.mark.parametrize("gap", ["", " ", " " * 8, " " * 9, "\\n" * 4, "\\n" * 5, "\\n" * 8, "\n\\n" * 4, "\\r\\n\\t\\n "])
def test_a_key_streamed_in_pieces_is_masked_as_the_same_text_whole(gap):
    """Whatever gaps spell the key, the stream's pieces are masked as the whole text is: the
    mask's span holds the longest match its pattern allows."""
    mask = KeyMask(KEY)
    text = f"before {gap.join(KEY)} after"
    shown: list[str] = []
    stream = MaskedStream(mask, shown.append)
    for ch in text:
        stream(ch)
    stream.close()
    assert "".join(shown) == mask(text)
