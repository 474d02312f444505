"""A scenario whose every untrusted text carries a corpus of hostile strings.

Used by tests/test_tmux_hostile.py (the installed agent-tui under tmux). The task
text, the policy's name, the tool descriptions, the thoughts, the action
arguments, the observations, an irreversible tool's arguments (the approval
modal shows them), a policy error (a notification) and the final answer all
carry the corpus: markup of every kind, unbalanced brackets, ESC / CSI / OSC
sequences (window and pane titles, hyperlinks, screen clears, terminal resets,
status reports that make a terminal type), BEL, NUL, carriage return,
bidirectional overrides, wide and combining characters. Step 1's observation
carries a 1 MB line (the engine caps it at 4,000 characters); step 2's thought
carries a 1 MB line (thoughts are not capped).

Tool names stay identifiers (the policy calls them by name).

The run: 1 `echo` (corpus) · 2 `echo` after a 1 MB thought · 3 `wire` (the
operator approves) · 4 `wire` (the operator rejects) · the policy raises once ·
5 a final answer.
"""

from __future__ import annotations

from engine import Budget, Decision, Param, PolicyError, Scenario, Task, Tool
from engine.core.policy import RunView

# (what it is, the string); every entry reaches the terminal through the cockpit.
CORPUS: tuple[tuple[str, str], ...] = (
    ("rich markup", "[bold]x[/]"),
    ("click action", "[@click=app.quit]quit[/]"),
    ("click action, bare", "[@click=app.exit]"),
    ("link markup", "[link=https://evil.example]link[/link]"),
    ("closing tag alone", "[/]"),
    ("unclosed tag", "[/] [bold"),
    ("unbalanced brackets", "]]][[[red"),
    ("style markup", "[on red blink]loud[/on red blink]"),
    ("content variable", "$accent $text [b]$x[/b]"),
    ("escaped bracket", "\\[not-a-tag]"),
    ("OSC 0 title", "\x1b]0;PWNED-TITLE-0\x07"),
    ("OSC 2 title, ST", "\x1b]2;PWNED-TITLE-2\x1b\\"),
    ("tmux window name", "\x1bkPWNED-WINDOW\x1b\\"),
    ("OSC 8 hyperlink", "\x1b]8;;https://evil.example\x07osc8-link\x1b]8;;\x07"),
    ("OSC 52 clipboard", "\x1b]52;c;cHduZWQ=\x07"),
    ("CSI clear screen", "\x1b[2J\x1b[H"),
    ("CSI colour", "\x1b[31;1mred\x1b[0m"),
    ("leave alternate screen", "\x1b[?1049l"),
    ("hide cursor", "\x1b[?25l"),
    ("full reset", "\x1bc"),
    ("device status report", "\x1b[6n"),
    ("8-bit CSI", "\x9b2J"),
    ("8-bit OSC title", "\x9d0;PWNED-TITLE-8\x9c"),
    ("DCS", "\x1bPq#0;2;0;0;0\x1b\\"),
    ("BEL", "bell\x07bell"),
    ("NUL", "nul\x00nul"),
    ("carriage return", "overwrite\rOK"),
    ("backspace and DEL", "bs\x08\x08del\x7f"),
    ("right-to-left override", "abc\u202etxt.exe"),
    ("bidi isolate", "\u2066isolate\u2069"),
    ("wide characters", "漢字テスト全角"),
    ("emoji", "🚀🔥"),
    ("combining and zero-width", "e\u0301 a\u200db"),
)

MEGABYTE = 1_000_000
HUGE_OBSERVATION = "O" * MEGABYTE
HUGE_THOUGHT = "T" * MEGABYTE


def corpus(tag: str) -> str:
    """The whole corpus on one line, each entry fenced so it can be found: «tag:n ...»."""
    return " ".join(f"«{tag}{n} {text}»" for n, (_, text) in enumerate(CORPUS))


MARKUP = "[bold]x[/] [@click=app.quit]quit[/] [link=https://evil.example]link[/link] [/] [bold"
TITLES = "\x1b]0;PWNED-TITLE-0\x07\x1b]2;PWNED-TITLE-2\x1b\\\x1bkPWNED-WINDOW\x1b\\\x9d0;PWNED-TITLE-8\x9c"


class HostileWorld:
    def __init__(self) -> None:
        self.wired: list[dict[str, str]] = []
        self.tools = [
            Tool(
                "echo",
                f"Echoes {MARKUP} {TITLES}",
                (Param("text", description=MARKUP),),
                self._echo,
                timeout=None,
            ),
            Tool(
                "wire",
                f"Wires money. {MARKUP} {TITLES} desc-rtl:\u202eevil",
                (Param("to", description=MARKUP), Param("memo")),
                self._wire,
                kind="irreversible",
                timeout=None,
            ),
        ]

    def _echo(self, text: str) -> str:
        if text == "huge":
            return f"huge observation {MARKUP} {TITLES} {HUGE_OBSERVATION}"
        return f"echoed {text}"

    def _wire(self, to: str, memo: str) -> str:
        self.wired.append({"to": to, "memo": memo})
        return f"wired to {to} {TITLES} memo {memo}"


class HostilePolicy:
    """Plays the run above; raises once (with the corpus) before its final answer."""

    def __init__(self) -> None:
        self.name = f"pol {MARKUP} {TITLES}"
        self.raised = False

    def decide(self, view: RunView) -> Decision:
        if view.step == 1:
            return Decision.act(f"step-one {MARKUP} {corpus('t')}", "echo", text="huge")
        if view.step == 2:
            return Decision.act(f"long-thought {TITLES} {HUGE_THOUGHT} end-of-long-thought", "echo", text="after")
        if view.step == 3:
            return Decision.act(f"pay-thought {MARKUP} {TITLES}", "wire", to="acct [@click=app.quit]", memo=corpus("a"))
        if view.step == 4:
            return Decision.act(f"pay-again {MARKUP}", "wire", to="acct-2 [bold]x[/]", memo=f"again {TITLES}")
        if not self.raised:
            self.raised = True
            raise PolicyError(f"backend-fault {MARKUP} {TITLES}")
        return Decision.final(f"done {MARKUP}", f"final-answer {MARKUP} {corpus('f')}")


SCENARIO = Scenario(
    name="hostile",
    description="every untrusted text is hostile",
    tasks={"t": Task("t", f"Task {MARKUP} {TITLES} rtl:\u202eabc {corpus('k')}")},
    policies={"hostile": lambda world, task: HostilePolicy()},
    make_world=lambda task, options: HostileWorld(),
    budget=Budget(max_steps=10),
)
