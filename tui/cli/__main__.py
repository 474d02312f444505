"""`python -m tui.cli`: the same as the `agent-tui` command."""

from tui.cli import console_main

console_main()
