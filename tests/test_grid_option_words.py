"""A grid option that is not a number says which option and what was given, in words
(it used to print Python's "invalid literal for int() with base 10")."""

from __future__ import annotations

import pytest

from tui.cli import main


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("size=abc", "the grid size must be a whole number, not 'abc'"),
        ("size=[1]", "the grid size must be a whole number, not [1]"),
        ("size=true", "the grid size must be a whole number, not true"),
        ("density=dense", "the grid density must be a number, not 'dense'"),
        ("seed={}", "the grid seed must be a whole number, not {}"),
    ],
)
def test_a_grid_option_that_is_not_a_number_is_named(capsys, option, said):
    code = main(["run", "grid", "--policy", "planner", "--headless", "--option", option])
    err = capsys.readouterr().err
    assert code == 2 and said in err and "int()" not in err and "Traceback" not in err
