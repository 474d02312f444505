"""The configuration file: where it is found, what it holds, where each value came from, and its errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.sessions.config import ConfigError, load_config
from tui.cli import main

FULL = """\
# a comment
[[policy]]
name = "cheap"
model = "small-model"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "CHEAP_KEY"
price_in = 0.1
price_out = 0.2

[[policy]]
name = "strong"
model = "big-model"
mode = "text"

[[mcp]]
name = "notes"
command = "python3"
args = ["server.py", "--flag"]
env = { TOKEN_FOR_SERVER = "x" }
trusted = true
timeout = 12

[[mcp]]
name = "remote"
url = "http://127.0.0.1:8765/mcp"

[[rule]]
tool = "read_*"
effect = "allow"

[budget]
max_steps = 7
max_cost = 0.25
"""


def write(tmp_path: Path, text: str, name: str = "agent-tui.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_file_values_and_sources(tmp_path):
    path = write(tmp_path, FULL)
    config = load_config(path)
    assert [p.name for p in config.policies] == ["cheap", "strong"]
    cheap = config.policy("cheap")
    assert (cheap.model, cheap.price_in_per_1k, cheap.price_out_per_1k, cheap.api_key_env) == ("small-model", 0.1, 0.2, "CHEAP_KEY")
    assert config.policy("strong").mode == "text"
    notes = config.server("notes")
    assert (notes.command, notes.args, notes.trusted, notes.timeout, notes.transport) == ("python3", ("server.py", "--flag"), True, 12.0, "stdio")
    assert config.server("remote").transport == "http"
    assert [(r.tool, r.effect) for r in config.rules] == [("read_*", "allow")]
    assert config.budget == {"max_steps": 7, "max_cost": 0.25}
    assert config.sources["policy.cheap.model"] == f"{path}:4"
    assert config.sources["policy.strong"] == f"{path}:10"
    assert config.sources["mcp.notes.timeout"] == f"{path}:21"
    assert config.sources["budget.max_cost"] == f"{path}:33"
    assert config.source("policy.strong.base_url") == "default"
    assert "x" not in str(notes.public())  # the environment's values never reach a header


def test_the_key_is_read_from_the_named_variable(tmp_path):
    config = load_config(write(tmp_path, FULL))
    model = config.policy("cheap").model_config({"CHEAP_KEY": "sk-secret-1", "OPENAI_API_KEY": "other"})
    assert model.api_key.reveal() == "sk-secret-1"
    assert "sk-secret-1" not in repr(model)
    assert config.policy("cheap").model_config({}).api_key is None


def test_found_in_the_current_folder_before_xdg(tmp_path, monkeypatch):
    xdg = tmp_path / "xdg"
    (xdg / "agent-tui").mkdir(parents=True)
    write(xdg / "agent-tui", '[budget]\nmax_steps = 3\n', "config.toml")
    here = tmp_path / "here"
    here.mkdir()
    env = {"XDG_CONFIG_HOME": str(xdg)}
    assert load_config(None, cwd=here, env=env).budget == {"max_steps": 3}
    write(here, '[budget]\nmax_steps = 4\n')
    config = load_config(None, cwd=here, env=env)
    assert config.budget == {"max_steps": 4} and config.found == "the current folder"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert load_config(None, cwd=empty, env={"XDG_CONFIG_HOME": str(empty)}).path is None


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('[[policy]]\nname = "a"\nmodel = "m"\napi_key = "sk-live-123"\n', 4, "never read from the file"),
        ('[[policy]]\nname = "a"\nmodel = "m"\napi_key_env = "sk-live-123"\n', 4, "must not hold the key"),
        ('[[policy]]\nname = "a"\n\nmodel = 5\n', 4, "non-empty string"),
        ('[[policy]]\nname = "human"\nmodel = "m"\n', 2, "built-in"),
        ('[[policy]]\nname = "a"\nmodel = "m"\n[[policy]]\nname = "a"\nmodel = "n"\n', 5, "a second"),
        ('[[mcp]]\nname = "s"\n', 1, "either command"),
        ('[[mcp]]\nname = "s"\ncommand = "x"\ntimeout = -1\n', 4, "0 or more"),
        ('[[mcp]]\nname = "s"\ncommand = "x"\nbogus = 1\n', 4, "unknown key 'bogus'"),
        ('[budget]\nmax_steps = 2.5\n', 2, "whole number"),
        ('[budget]\n\nmax_sheep = 2\n', 3, "unknown budget"),
        ('[[rule]]\ntool = "x"\neffect = "maybe"\n', 3, "allow, ask or deny"),
        ('[budget]\nmax_steps = = 3\n', 2, "not valid TOML"),
        ('[surprise]\nx = 1\n', 1, "unknown section"),
        ('[[policy]]\nname = "a"\nmodel = "m"\nprice_in = nan\n', 4, "finite number"),
        ('[[policy]]\nname = "a"\nmodel = "m"\nprice_out = inf\n', 4, "finite number"),
        ('[[policy]]\nname = "a"\nmodel = "m"\ntimeout = 0\n', 4, "above 0"),
        ('[budget]\nmax_cost = nan\n', 2, "above 0"),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message


def test_missing_file_given_with_config(tmp_path):
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "nope.toml")


def test_config_command_prints_values_with_their_origin(tmp_path, capsys):
    path = write(tmp_path, FULL)
    assert main(["config", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"# configuration file: {path}" in out
    model_line = next(line for line in out.splitlines() if line.startswith('model = "small-model"'))
    assert model_line.endswith(f"# {path}:4")
    base_line = [line for line in out.splitlines() if line.startswith("base_url")][1]
    assert base_line.endswith("# default")
    assert 'TOKEN_FOR_SERVER = "(set)"' in out and '"x"' not in out
    assert "max_tokens not set" in out


def test_bad_config_exits_2_with_file_and_line(tmp_path):
    path = write(tmp_path, '[[policy]]\nname = "a"\nmodel = "m"\nkey = "sk-abc"\n')
    for argv in (["config", "--config", str(path)], ["run", "--headless", "--config", str(path)]):
        done = subprocess.run([sys.executable, "-m", "tui.cli", *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert f"{path}:4:" in done.stderr and "Traceback" not in done.stderr


def test_a_config_in_the_current_folder_shapes_a_run(tmp_path, monkeypatch, capsys):
    write(tmp_path, '[[rule]]\ntool = "open_return_request"\neffect = "deny"\n\n[budget]\nmax_steps = 2\n')
    monkeypatch.chdir(tmp_path)
    code = main(["run", "support", "--headless", "--out", str(tmp_path / "run.jsonl")])
    out = capsys.readouterr().out
    assert "DENIED: open_return_request" in out
    assert code == 3 and "steps budget reached: 2 of 2" in out


def test_a_folder_given_with_config_is_called_a_folder(tmp_path):
    with pytest.raises(ConfigError, match="is a folder, not a configuration file"):
        load_config(tmp_path)


def test_a_rules_keys_are_credited_to_their_own_lines(tmp_path, capsys):
    path = write(tmp_path, '[[rule]]\ntool = "read_*"\n\neffect = "allow"\nargs = { path = "/tmp/*" }\n')
    assert main(["config", "--config", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    where = {line.split()[0]: line.rsplit("# ", 1)[1] for line in lines if line.startswith(("tool", "effect", "args", "[[rule]]"))}
    assert where == {"[[rule]]": f"{path}:1", "tool": f"{path}:2", "effect": f"{path}:4", "args": f"{path}:5"}


def test_a_bad_effect_in_a_second_rule_names_its_own_line(tmp_path):
    path = write(tmp_path, '[[rule]]\ntool = "a"\neffect = "allow"\n[[rule]]\neffect = "bogus"\ntool = "b"\n')
    with pytest.raises(ConfigError, match=rf"^{path}:5: 'effect' must be allow"):
        load_config(path)
