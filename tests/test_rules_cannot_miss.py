"""Approval rules that cannot silently miss: unknown tables and keys, rules for tools a run
does not have, and argument patterns matched against what the tool will receive."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from engine import Decision
from engine.core.approvals import RulesError, load_rules
from engine.sessions.run import new_run
from tests.support.helpers import CountingWorld, counting_scenario, script
from tui.cli import main


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, line, words",
    [
        ('[[rules]]\ntool = "open_return_request"\neffect = "deny"\n', 1, "did you mean 'rule'"),
        ('# two rules\n[[rule]]\ntool = "a"\neffect = "deny"\n\n[[rule]]\ntool = "b"\nefect = "deny"\n', 8, "did you mean 'effect'"),
        ('[[rule]]\ntool = "a"\neffect = "deni"\n', 3, "did you mean 'deny'"),
        ('[[rule]]\ntool = "a"\neffect = "deny"\nargs = { order_id = 1187 }\n', 4, "string patterns"),
        ('tool = "a"\neffect = "deny"\n', 1, "unknown table or key 'tool'"),
        ('[[rule]]\ntool = "a"\neffect = "deny"\n[rule.args]\norder = "1"\nwhen = "now"\n', None, None),
    ],
)
def test_a_rules_file_with_unknown_names_is_an_error_at_its_line(tmp_path, text, line, words):
    path = write(tmp_path, text)
    if line is None:
        assert load_rules(path)[0].args == {"order": "1", "when": "now"}
        return
    with pytest.raises(RulesError) as caught:
        load_rules(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message


def _rules(text: str):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return load_rules(write(Path(tmp), text))


def test_a_rule_for_a_tool_the_run_does_not_have_is_a_warning():
    rules = [
        *_rules('[[rule]]\ntool = "Open_Return_Request"\neffect = "deny"\n'),
        *_rules('[[rule]]\ntool = "open_*"\neffect = "deny"\nargs = { order = "1" }\n'),
        *_rules('[[rule]]\ntool = "open_*"\neffect = "deny"\nargs = { order_id = "1" }\n'),
    ]
    support = scenarios.get("support")
    run = new_run(support, None, None, rules=rules, save=False)
    assert len(run.warnings) == 2, run.warnings
    assert "'Open_Return_Request' matches no tool" in run.warnings[0] and "case-sensitive" in run.warnings[0]
    assert "no matching tool has an argument 'order'" in run.warnings[1]


def test_headless_says_the_warning_on_stderr(capsys, tmp_path):
    path = write(tmp_path, '[[rule]]\ntool = "open_return"\neffect = "deny"\n')
    main(["run", "support", "--headless", "--rules", str(path), "--out", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    assert "warning: " in err and "rule deny 'open_return' matches no tool of this run" in err


@pytest.mark.anyio
async def test_the_cockpit_says_the_warning_as_a_notification(tmp_path):
    from tui.app import CockpitApp

    path = write(tmp_path, '[[rule]]\ntool = "open_return"\neffect = "deny"\n')
    support = scenarios.get("support")
    run = new_run(support, None, None, rules=load_rules(path), out=tmp_path / "r.jsonl", interactive=True)
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        said = [n.message for n in app._notifications]
    run.close()
    assert any("matches no tool of this run" in m for m in said), said


@pytest.mark.parametrize("proposed", [" 1187", "1187 ", "\t1187\n"])
def test_a_deny_on_an_argument_is_not_dodged_with_whitespace(tmp_path, proposed):
    rules = _rules('[[rule]]\ntool = "open_return_request"\neffect = "deny"\nargs = { order_id = "1187" }\n')
    scenario = scenarios.get("support")
    policy = script(Decision.act("return it", "open_return_request", order_id=proposed))
    run = new_run(scenario, "return-1187", policy, rules=rules, save=False, approve="all")
    run.engine.step()
    observation = run.engine.state.history[0].observations[0]
    assert observation.text.startswith("DENIED") and not observation.executed
    assert run.world.requests == []


def test_a_deny_matches_the_value_after_coercion_and_as_proposed():
    rules = _rules('[[rule]]\ntool = "pay"\neffect = "deny"\nargs = { amount = "5" }\n')
    run = new_run(counting_scenario(), "t", script(Decision.act("p", "pay", amount=" 5 ")), rules=rules, save=False, approve="all")
    run.engine.step()
    assert run.engine.state.history[0].observations[0].text.startswith("DENIED")
    assert run.world.calls == []


def test_an_allow_needs_every_form_of_the_value_to_match():
    rules = _rules('[[rule]]\ntool = "pay"\neffect = "allow"\nargs = { amount = "5" }\n')
    run = new_run(counting_scenario(), "t", script(Decision.act("p", "pay", amount=" 5")), rules=rules, save=False)
    assert run.engine.step() == "awaiting_approval"  # " 5" as proposed is not "5": it asks
    assert isinstance(run.world, CountingWorld) and run.world.calls == []
