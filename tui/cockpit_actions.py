"""The cockpit's keys, written once, and which of its actions apply in which state of the run.

`KEYS` is the one table: each row a key, its action, the footer's word, the
palette's title and help, and the line of the help dialog. The app's
bindings and footer order (`tui.keys`), the command palette (`COMMANDS`),
the help dialog (`HELP`) and the headless prompt's list of answers
(`prompt_keys`) are all derived from it; `action_applies` says when each
applies. Pure: no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    """One row of the keys table."""

    keys: tuple[str, ...]
    """Textual's names of the keys (the first is the one shown); empty for a help line only."""
    action: str
    word: str
    """What the footer says (and the headless prompt)."""
    help: str
    """The help dialog's line; empty: the row has none (another row's line covers it)."""
    title: str = ""
    """The palette's title; empty: the action is not in the cockpit's palette list."""
    palette_help: str = ""
    bound: str = "cockpit"
    """Where the key is bound: "cockpit" (the app's bindings), else where it lives ("approval"
    dialog, transcript "pane", the "app" itself, the "runs" screen)."""
    shown: tuple[bool, ...] = ()
    """Per key, whether the footer shows it (default: the first only)."""
    help_keys: str = ""
    """The help dialog's key column when it is not the keys' names joined."""


KEY_NAMES = {"question_mark": "?", "space": "space", "escape": "escape"}
"""How the help dialog writes a key Textual names otherwise."""

KEYS: tuple[Key, ...] = (
    Key(("n", "space"), "step", "step", "one step: the policy decides once, then its action runs (or pauses for approval); "
        "pressed while a step runs, one more after it (a pause stops them, escape drops them)",
        "Step", "Let the policy decide once and run its action", help_keys="n / space"),
    Key(("c",), "continue_run", "continue", "continue until a pause, the end, or escape",
        "Continue", "Step until a pause, the end, or escape"),
    Key(("escape",), "interrupt", "interrupt", "interrupt a continue after the current step",
        "Interrupt", "Stop the running continue after the current step"),
    Key(("a",), "approve", "approve", "approve the pending action", "Approve", "Run the pending action"),
    Key(("A",), "approve_always", "approve always", "approve, and approve this tool always from now on",
        "Approve always", "Run it, and never ask again for this tool"),
    Key(("r",), "reject", "reject", "reject the pending action with a reason the policy reads",
        "Reject", "Refuse the pending action with a reason the policy reads"),
    Key(("e",), "edit", "edit", "edit the pending action's arguments; ctrl+r runs it with them (enter never does)",
        "Edit arguments", "Change the pending action's arguments, then run it"),
    Key(("v",), "review", "review", "view the pending approval again", "Review approval", "Show the pending approval again"),
    Key(("d",), "toggle_body", "diff/arguments", "in the approval of a file edit: its diff, or the call's raw arguments",
        bound="approval"),
    Key(("b",), "budget", "budget", "the budget pause: extend the limit or end the run",
        "Budget", "Extend the exhausted limit or end the run"),
    Key(("p",), "pick_policy", "policy", "pick the policy for the next step (scripted, human, model, configured ones)",
        "Pick policy", "Choose the policy for the next step"),
    Key(("h",), "take_over", "take over", "take over: type the next step yourself; h again hands back",
        "Take over", "Type the next thought and action yourself"),
    Key(("h",), "hand_back", "hand back", "", "Hand back", "Give control back to the policy you took over from"),
    Key(("x",), "abort", "abort", "abort the run", "Abort", "End the run now"),
    Key(("s",), "save", "save", "save a copy of the transcript (an existing file is replaced only if you say y)",
        "Save a copy", "Write the transcript to another file"),
    Key(("o",), "toggle_folds", "expand/fold", "expand every folded observation, or fold them again (a click opens one)",
        bound="pane"),
    Key(("t",), "set_task", "task", "write the task of a run of MCP tools started without one",
        "Set the task", "Write the task of a run of MCP tools started without one"),
    Key(("l",), "runs", "your runs", "your runs: replay, resume or fork one (it opens beside this run)", shown=(False,)),
    Key(("ctrl+p",), "command_palette", "palette", "every command of this screen, searchable", bound="app"),
    Key(("question_mark",), "help", "help", "this help", "Help", "The keys and what they do"),
    Key(("q", "ctrl+c"), "quit", "quit",
        "quit (the transcript is already saved; a run that can go on asks first: y leaves it resumable)", help_keys="q, ctrl+c"),
)

HELP_FOOTNOTE = "Keys that do not apply right now are hidden from the footer, and so are those it has no room for."
HELP_KEY_WIDTH = 11


def _help_keys(row: Key) -> str:
    return row.help_keys or " / ".join(KEY_NAMES.get(key, key) for key in row.keys)


HELP = "\n".join(f"{_help_keys(row):<{HELP_KEY_WIDTH - 1}} {row.help}" for row in KEYS if row.help) + "\n\n" + HELP_FOOTNOTE
"""The cockpit's help dialog: a line per key."""

COMMANDS: tuple[tuple[str, str, str], ...] = tuple((row.action, row.title, row.palette_help) for row in KEYS if row.title)
"""(action, palette title, palette help) of each action the cockpit's palette offers."""
FOLD_COMMAND = ("toggle_folds", "Expand / fold", "Expand every folded observation, or fold them again")
"""The transcript pane's own `o`, which the cockpit's palette and the replay viewer's offer too."""
COCKPIT_ACTIONS = frozenset(name for name, _, _ in COMMANDS)
WHILE_BUSY = frozenset({"interrupt", "abort", "save", "help"})
APPROVAL_ANSWERS = ("approve", "approve_always", "reject", "edit")
"""The actions that answer a pending call, as the approval dialog offers them."""


def key_of(action: str) -> Key:
    return next(row for row in KEYS if row.action == action)


def prompt_keys(actions: tuple[str, ...] = (*APPROVAL_ANSWERS, "abort")) -> str:
    """The headless prompt's list of answers: `[a]pprove, [A]pprove always, ..., [x] abort`."""
    words = []
    for action in actions:
        row = key_of(action)
        key, word = row.keys[0], row.word
        words.append(f"[{key}]{word[1:]}" if word[:1].lower() == key.lower() else f"[{key}] {word}")
    return ", ".join(words)


def action_applies(action: str, status: str, *, human_in_control: bool, needs_task: bool = False) -> bool:
    """Whether cockpit action `action` applies when the run is in `status` (a RunStatus).

    `needs_task`: a run of MCP tools started without a task; until the operator
    writes one, only setting it, picking the policy, abort, save and help apply.
    """
    if status == "running":
        return action in WHILE_BUSY
    ended = status in ("ended", "halted")
    if action in ("save", "help"):
        return True
    if action == "interrupt":
        return False
    if ended:
        return False
    if needs_task:
        return action in ("set_task", "pick_policy", "abort")
    if action == "set_task":
        return False
    if action == "step":
        return status in ("ready", "policy_failed", "awaiting_input")
    if action == "continue_run":
        return status in ("ready", "policy_failed")
    if action in (*APPROVAL_ANSWERS, "review"):
        return status == "awaiting_approval"
    if action == "budget":
        return status == "awaiting_budget"
    if action == "take_over":
        return not human_in_control and status in ("ready", "policy_failed")
    if action == "hand_back":
        return human_in_control
    return action in ("pick_policy", "abort")
