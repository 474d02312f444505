"""`agent-tui list` reads the built-ins from their catalogue and finds plugins without importlib.metadata."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import scenarios
from scenarios.catalogue import built_in_listings, stored_listings
from scenarios.plugins import GROUP, plugin_names
from tui.cli import main


def test_the_catalogue_matches_the_scenario_modules():
    # Fails when a built-in scenario changes without `python -m scenarios.catalogue`.
    assert stored_listings() == built_in_listings()
    assert list(stored_listings()) == list(scenarios.BUILTIN)


def test_plugin_names_are_those_importlib_metadata_finds():
    for group in ("console_scripts", "pytest11", GROUP):
        assert plugin_names(group) == list(dict.fromkeys(ep.name for ep in entry_points(group=group))), group


PLUGIN = '''
from engine import Budget, Scenario, Task

SCENARIO = Scenario(
    name="plugged",
    description="A scenario from an installed package.",
    tasks={"one": Task("one", "Do the one thing.")},
    policies={"idle": lambda world, task: None},
    make_world=lambda task, options: None,
    budget=Budget(max_steps=3),
)
'''


def test_an_installed_plugin_is_found_and_listed(tmp_path, monkeypatch, capsys):
    (tmp_path / "plugged_world.py").write_text(PLUGIN)
    info = tmp_path / "plugged_world-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugged-world\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[console_scripts]\nplugged = plugged_world:main\n\n[{GROUP}]\nplugged = plugged_world\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plugged_world", raising=False)

    assert plugin_names() == ["plugged"] == [ep.name for ep in entry_points(group=GROUP)]
    assert scenarios.names()[-1] == "plugged"
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "plugged: A scenario from an installed package.\n  task    one: Do the one thing.\n  policies idle, human" in out
    assert out.startswith("support: A customer-support desk")


def test_list_prints_what_the_scenarios_say(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in scenarios.BUILTIN:
        scenario = scenarios.get_named(name)
        assert f"{scenario.name}: {scenario.description}\n" in out
        for task in scenario.tasks.values():
            assert f"  task    {task.id}: {task.text}\n" in out
