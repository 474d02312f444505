"""The cockpit's keys are written once (tui/cockpit_actions.py KEYS): the bindings of every
cockpit (a local run's, the gateway's), the footer, the help dialog, the palette and the
headless prompt's list of answers are derived from that table, not kept equal by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.binding import Binding

import tui.cockpit_actions as cockpit_actions
from tests.support.cockpit_worlds import support_run, wait_until
from tui.app import CockpitApp
from tui.cockpit_actions import COMMANDS, HELP, KEYS, prompt_keys
from tui.gateway_cockpit import GatewayCockpit
from tui.keys import QUIT_ON_CTRL_C, approval_bindings
from tui.widgets.footer import CockpitFooter, FooterKeyLabel


def bound(app_class: type) -> set[tuple[str, str, str]]:
    return {(b.key, b.action, b.description) for b in app_class.BINDINGS if isinstance(b, Binding)}


@pytest.mark.parametrize("app_class", [CockpitApp, GatewayCockpit])
def test_every_cockpit_binds_each_row_of_the_table_and_nothing_else(app_class: type) -> None:
    rows = {(key, row.action, row.word) for row in KEYS if row.bound == "cockpit" for key in row.keys if key != "ctrl+c"}
    assert bound(app_class) - {(QUIT_ON_CTRL_C.key, QUIT_ON_CTRL_C.action, QUIT_ON_CTRL_C.description)} == rows
    assert QUIT_ON_CTRL_C in app_class.BINDINGS


def test_the_help_and_the_palette_have_a_line_for_each_row() -> None:
    lines = HELP.splitlines()
    for row in KEYS:
        if row.help:
            assert any(line.split("  ")[0].strip() and line.endswith(row.help) for line in lines), row
        if row.title:
            assert (row.action, row.title, row.palette_help) in COMMANDS
    assert [c[0] for c in COMMANDS] == [row.action for row in KEYS if row.title]


def test_the_approval_dialog_and_the_headless_prompt_use_the_tables_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    assert prompt_keys() == "[a]pprove, [A]pprove always, [r]eject, [e]dit, [x] abort"
    assert [(b.key, b.description) for b in approval_bindings()] == [("a", "approve"), ("A", "approve always"), ("r", "reject"), ("e", "edit")]
    changed = tuple(replace(row, keys=("y",), word="yes") if row.action == "approve" else row for row in KEYS)
    monkeypatch.setattr(cockpit_actions, "KEYS", changed)
    assert prompt_keys().startswith("[y]es, [A]pprove always")


@pytest.mark.anyio
async def test_the_footer_says_the_tables_words(tmp_path: Path) -> None:
    app = CockpitApp(support_run(tmp_path))
    words = {row.action: row.word for row in KEYS}
    async with app.run_test(size=(120, 40)) as pilot:
        footer = app.query_one(CockpitFooter)

        def shown() -> list[tuple[str, str]]:
            return [(key.action, key.description) for key in footer.query(FooterKeyLabel) if key.parent is footer]

        await wait_until(pilot, lambda: len(shown()) > 2, what="the footer's keys")
        assert all(words[action] == description for action, description in shown()), shown()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
