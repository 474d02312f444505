"""The calculator never evaluates code; the file reader never leaves its folder."""

from __future__ import annotations

import os

import pytest

from scenarios.safe import ConfinedReader, calculate
from engine.core.tools import ToolError


@pytest.mark.parametrize(
    "expression, result",
    [("17 * 23 - 100", "291"), ("5 - 3", "2"), ("-(2 + 3) * 4", "-20"), ("7 / 2", "3.5"), ("1e3 + 1", "1001")],
)
def test_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize(
    "expression",
    [
        '__import__("os").getcwd()',
        "os.system('true')",
        "x",
        "(1).__class__",
        "2 ** 10",
        "9 ** 9 ** 9",
        "[1, 2]",
        "lambda: 1",
        "1 if 1 else 2",
        "1/0",
        "",
        "1" * 600,
        "-" * 300 + "1",
        "99999999999999999999 * 99999999999999999999 * 99999999999999999999 * 99999999999999999999 * 99999999999999999999 * 99999999999999999999",
        "1e308 * 10",
    ],
)
def test_refused_expressions_raise_tool_errors(expression):
    with pytest.raises(ToolError):
        calculate(expression)


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("inside")
    (root / "sub" / "b.txt").write_text("deeper")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    os.symlink(tmp_path, root / "up")
    return root


def test_reads_inside(folder):
    reader = ConfinedReader(folder)
    assert reader.read("a.txt") == "inside"
    assert reader.read("sub/b.txt") == "deeper"


@pytest.mark.parametrize(
    "path", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", "link.txt", "up/secret.txt", "~/x", "a\x00.txt", ""]
)
def test_refuses_paths_that_leave(folder, path):
    with pytest.raises(ToolError, match="PermissionError"):
        ConfinedReader(folder).read(path)


def test_missing_file_lists_what_is_there(folder):
    with pytest.raises(ToolError, match="a.txt"):
        ConfinedReader(folder).read("nope.txt")


def _returns_quickly(call, *args):
    """Run `call(*args)` in a thread; fail (instead of hanging the suite) if it takes over 5 s."""
    import threading

    outcome: list[BaseException | str] = []

    def run() -> None:
        try:
            outcome.append(call(*args))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), f"{call.__name__} did not return within 5 s"
    return outcome[0]


@pytest.mark.parametrize(
    "expression",
    [
        "9" * 10_000,
        "1" + "0" * 9_999 + " * 2",
        "(" * 1_000 + "1" + ")" * 1_000,
        "-(" * 200 + "1" + ")" * 200,
        "9 ** 9 ** 9 ** 9",
        "9e9999",
        "(1e300 * 1e300) - (1e300 * 1e300)",
        "9" * 60 + " * " + "9" * 60,
        "1" + " + 1" * 120,
        "().__class__.__bases__[0].__subclasses__()",
        "__import__('os').system('true')",
        "open('/etc/passwd').read()",
        "a.b",
        "f(1)",
    ],
)
def test_hostile_expressions_return_an_error_quickly(expression):
    result = _returns_quickly(calculate, expression)
    assert isinstance(result, ToolError), f"{expression[:40]!r} gave {result!r}"


def test_calculator_tool_answers_hostile_input_with_an_error_observation(tmp_path):
    """Through the engine: the calculator scenario's tools refuse, the run goes on."""
    import scenarios
    from engine import Decision
    from engine.sessions.run import new_run
    from tests.support.helpers import script

    policy = script(
        Decision.act("huge", "calculator", expression="9" * 10_000),
        Decision.act("nested", "calculator", expression="(" * 1_000 + "1" + ")" * 1_000),
        Decision.act("escape", "read_file", path="../../../../etc/passwd"),
        Decision.act("absolute", "read_file", path="/etc/passwd"),
    )
    scenario = scenarios.get("calculator")
    run = new_run(scenario, None, policy, out=tmp_path / "calc.jsonl", repetition_threshold=None)
    _returns_quickly(run.engine.run)
    run.close()
    observed = [e for e in run.engine.events if e.type == "observation"]
    assert len(observed) == 4 and all(e.error for e in observed), [e.text for e in observed]
    assert "root:" not in " ".join(e.text for e in observed)
