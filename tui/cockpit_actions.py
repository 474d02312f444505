"""The cockpit's actions: their palette words, and which apply in which state of the run.

Pure: no Textual. The app's bindings, footer, command palette and
`check_action` all ask `action_applies`.
"""

from __future__ import annotations

# (action, palette title, palette help); the bindings below use the same names.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("step", "Step", "Let the policy decide once and run its action"),
    ("continue_run", "Continue", "Step until a pause, the end, or escape"),
    ("interrupt", "Interrupt", "Stop the running continue after the current step"),
    ("approve", "Approve", "Run the pending action"),
    ("approve_always", "Approve always", "Run it, and never ask again for this tool"),
    ("reject", "Reject", "Refuse the pending action with a reason the policy reads"),
    ("edit", "Edit arguments", "Change the pending action's arguments, then run it"),
    ("review", "Review approval", "Show the pending approval again"),
    ("budget", "Budget", "Extend the exhausted limit or end the run"),
    ("pick_policy", "Pick policy", "Choose the policy for the next step"),
    ("take_over", "Take over", "Type the next thought and action yourself"),
    ("hand_back", "Hand back", "Give control back to the policy you took over from"),
    ("abort", "Abort", "End the run now"),
    ("save", "Save a copy", "Write the transcript to another file"),
    ("help", "Help", "The keys and what they do"),
    ("set_task", "Set the task", "Write the task of a run of MCP tools started without one"),
)
FOLD_COMMAND = ("toggle_folds", "Expand / fold", "Expand every folded observation, or fold them again")
"""The transcript pane's own `o`, which the cockpit's palette and the replay viewer's offer too."""
COCKPIT_ACTIONS = frozenset(name for name, _, _ in COMMANDS)
WHILE_BUSY = frozenset({"interrupt", "abort", "save", "help"})


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
    if action in ("approve", "approve_always", "reject", "edit", "review"):
        return status == "awaiting_approval"
    if action == "budget":
        return status == "awaiting_budget"
    if action == "take_over":
        return not human_in_control and status in ("ready", "policy_failed")
    if action == "hand_back":
        return human_in_control
    return action in ("pick_policy", "abort")
