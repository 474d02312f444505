"""Hostile text in a real terminal: the installed agent-tui under tmux runs
tests/data/hostile_world.py, whose task, policy name, tool descriptions, thoughts,
arguments, observations, approval, policy error and final answer carry a corpus of
hostile strings (markup, click actions, unbalanced brackets, ESC / CSI / OSC title
and hyperlink sequences, BEL, NUL, bidi overrides, wide characters, 1 MB lines).

The app stays up until q, the text shows literally, the pane title and the window
name tmux keeps do not change (an OSC 0/2 or ESC k that reached the terminal would
change them), no action fires (the transcript holds exactly the expected events),
and after q the exit status is 0.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import time
from pathlib import Path

import pytest

from tests.support.tmux import Tmux, installed_agent_tui, recording_exit

pytestmark = pytest.mark.tmux

WORLD = Path(__file__).parent / "data" / "hostile_world.py"
SENTINEL_TITLE = "sentinel"
WINDOW_NAME = "cockpit-window"


def hostile_world():
    spec = importlib.util.spec_from_file_location("hostile_world_corpus", WORLD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def titles(tmux: Tmux) -> tuple[str, str]:
    return tuple(tmux("display-message", "-p", "-t", "cockpit", "#{pane_title}\t#{window_name}").rstrip("\n").split("\t"))  # type: ignore[return-value]


BORDERS = "│█▌▐┃"


def flat(screen: str) -> str:
    """Text with box borders and runs of spaces folded, so wrapped text reads on."""
    for border in BORDERS:
        screen = screen.replace(border, " ")
    return " ".join(screen.split())


def readings(screen: str) -> list[str]:
    """The screen read whole, and each boxed column read on its own (the transcript pane,
    the modal, a toast): the k-th field between a border character, line after line."""
    lines = screen.splitlines()
    found = [flat(screen)]
    for border in BORDERS:
        for k in (1, 2):
            column = [line.split(border)[k] for line in lines if line.count(border) > k]
            if column:
                found.append(flat("\n".join(column)))
    return found


def test_hostile_text_in_a_real_terminal(tmux: Tmux, tmp_path: Path) -> None:
    world = hostile_world()
    out = tmp_path / "hostile.jsonl"
    command = (
        f"env -u COLUMNS -u LINES TERM=xterm-256color {shlex.quote(installed_agent_tui())} "
        f"run {shlex.quote(str(WORLD))} --out {shlex.quote(str(out))}"
    )
    tmux("new-session", "-d", "-s", "cockpit", "-n", WINDOW_NAME, "-x", "120", "-y", "40", "sleep 600")
    tmux("set-option", "-t", "cockpit", "remain-on-exit", "on")
    # Let a leak show: programs may rename the window (ESC k) and set the pane title (OSC 0/2).
    tmux("set-option", "-g", "allow-rename", "on")
    tmux("set-option", "-g", "set-titles", "on")
    tmux("set-window-option", "-g", "automatic-rename", "off")
    tmux("select-pane", "-t", "cockpit", "-T", SENTINEL_TITLE)
    assert titles(tmux) == (SENTINEL_TITLE, WINDOW_NAME)
    rc_file = tmp_path / "rc"
    tmux("respawn-pane", "-k", "-t", "cockpit", recording_exit(command, rc_file))
    screens: list[str] = []

    def wait_for(text: str, timeout: float = 20.0) -> str:
        screen = tmux.wait_for(text, timeout)
        screens.append(screen)
        return screen

    def shows(*pieces: str, timeout: float = 20.0) -> str:
        """Wait until every piece is on the screen, read whole or by boxed column."""
        deadline = time.monotonic() + timeout
        while True:
            screen = tmux.screen()
            found = readings(screen)
            missing = [p for p in pieces if not any(p in text for text in found)]
            if not missing:
                screens.append(screen)
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"not shown literally: {missing}; the screen:\n{screen}")
            time.sleep(0.1)

    # the header: task text and policy name; the pane's task line
    shows("n step", "policy: pol [bold]x[/] [@click=app.quit]quit[/] [link=https://evil.example]link[/link] [/]")
    shows("Task Task [bold]x[/] [@click=app.quit]quit[/] [link=https://evil.example]link[/link] [/] [bold", "rtl:<U+202E>abc")

    # step 1: a corpus thought, an observation with a 1 MB line (capped, folded)
    tmux.keys("n")
    shows(
        "step-one [bold]x[/] [@click=app.quit]quit[/] [link=https://evil.example]link[/link] [/] [bold",
        "«t0 [bold]x[/]»",
        "«t1 [@click=app.quit]quit[/]»",
        "«t2 [@click=app.exit]»",
        "«t4 [/]»",
        "huge observation [bold]x[/] [@click=app.quit]quit[/]",
        "OOOOOOOOOO",
        "more lines (o to expand)",
    )

    # continue: step 2 (a 1 MB thought) and step 3 up to the approval modal
    tmux.keys("c")
    shows(
        "Approve wire (irreversible)",
        "Wires money. [bold]x[/] [@click=app.quit]quit[/] [link=https://evil.example]link[/link] [/] [bold",
        # the title sequences after "[bold" are drawn with their escapes (their text is not hidden), not run
        "[/] [bold \\x1b]0;PWNED-TITLE-0\\x07\\x1b]2;PWNED-TITLE-2\\x1b\\kPWNED-WINDOW\\x9d0;PWNED-TITLE-8\\x9c",
        "desc-rtl:<U+202E>evil",
        "pay-thought [bold]x[/] [@click=app.quit]quit[/]",
        "to = acct [@click=app.quit]",
        "«a0 [bold]x[/]»",
        "«a1 [@click=app.quit]quit[/]»",
        "«a3 [link=https://evil.example]link[/link]»",
        "«a5 [/] [bold»",
        "«a6 ]]][[[red»",
        "«a7 [on red blink]loud[/on red blink]»",
        "«a8 $accent $text [b]$x[/b]»",
        "«a9 \\[not-a-tag]»",
        timeout=30,
    )
    tmux.keys("a")
    shows("wired to acct [@click=app.quit]")

    # step 4: the operator rejects with a reason full of markup, typed literally
    tmux.keys("c")
    shows("Approve wire", "to = acct-2 [bold]x[/]")
    tmux.keys("r")
    wait_for("reason")
    tmux("send-keys", "-t", "cockpit", "-l", "no [bold]way[/] [@click=app.quit]")
    tmux.keys("Enter")
    shows("REJECTED by the operator: no [bold]way[/] [@click=app.quit]")

    # the policy raises (its message carries the corpus): a notification, the run pauses
    tmux.keys("c")
    shows("policy failed", "backend-fault [bold]x[/] [@click=app.quit]quit[/]")

    # retry: the final answer
    tmux.keys("n")
    shows("ended: answer", "final-answer [bold]x[/] [@click=app.quit]quit[/]", "«f0 [bold]x[/]»")

    # still answering keys after all of it
    tmux.keys("?")
    wait_for("agent-tui keys")
    tmux.keys("Escape")
    deadline = time.monotonic() + 20
    while "agent-tui keys" in tmux.screen():  # an escape followed at once by q would read as alt+q
        assert time.monotonic() < deadline, "the help screen did not close"
        time.sleep(0.1)

    assert titles(tmux) == (SENTINEL_TITLE, WINDOW_NAME), "a title or rename sequence reached the terminal"
    assert not (rc_file.exists() and rc_file.read_text().strip()), "the app quit before q"

    tmux.keys("q")
    assert tmux.wait_for_exit(rc_file) == "0"
    assert titles(tmux)[0] == SENTINEL_TITLE

    lines = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    lines = [d for d in lines if d["type"] != "tool_started"]
    events = [(d["type"], d.get("choice")) for d in lines]
    assert events == [
        ("decision", None),
        ("observation", None),
        ("decision", None),
        ("observation", None),
        ("decision", None),
        ("approval_requested", None),
        ("approval_decided", "approve"),
        ("observation", None),
        ("decision", None),
        ("approval_requested", None),
        ("approval_decided", "reject"),
        ("observation", None),
        ("policy_error", None),
        ("decision", None),
        ("run_ended", None),
    ], "an unexpected action fired"
    assert lines[-1]["outcome"] == "answer"
    thought = lines[2]["thought"]
    assert len(thought) > world.MEGABYTE and thought.endswith("end-of-long-thought")
    observation = lines[1]["text"]
    assert "[... truncated:" in observation and len(observation) < 4100
