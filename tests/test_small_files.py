"""The rules file and the configuration file are read as small text files: a device
(`/dev/zero` used to be read until memory ran out, a MemoryError traceback), a file
over 1 MiB and bytes that are not UTF-8 are refused with a sentence and exit 2; a pipe
(`--rules <(...)`) is still read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tui.cli import main

RULE = b'[[rule]]\ntool = "get_*"\neffect = "allow"\n'


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["run", "support", "--headless", "--approve", "all", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("flag", "kind"), [("--rules", "rules file"), ("--config", "configuration file")])
def test_a_device_is_refused_without_reading_it(capsys, flag, kind):
    code, err = run(capsys, flag, "/dev/zero")
    assert code == 2 and f"/dev/zero: is a device, not a {kind}" in err


@pytest.mark.parametrize(("flag", "kind"), [("--rules", "rules file"), ("--config", "configuration file")])
def test_a_file_over_one_mib_is_refused(capsys, tmp_path: Path, flag, kind):
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * ((1 << 20) + 1))
    code, err = run(capsys, flag, str(big))
    assert code == 2 and f"{big}: larger than 1 MiB; not a {kind}" in err


@pytest.mark.parametrize("flag", ["--rules", "--config"])
def test_bytes_that_are_not_utf8_are_named_by_position(capsys, tmp_path: Path, flag):
    odd = tmp_path / "odd.toml"
    odd.write_bytes(b"# caf\xe9\n")
    code, err = run(capsys, flag, str(odd))
    assert code == 2 and f"{odd}: not UTF-8 text (byte 5)" in err and "codec" not in err


def test_rules_from_a_pipe_are_read(capsys, tmp_path: Path):
    read, write = os.pipe()
    os.write(write, RULE)
    os.close(write)
    try:
        code, err = run(capsys, "--rules", f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert code == 0 and "rule" not in err
