"""Whole-number options of the benchmark scripts, refused with a clear message below their least value."""

from __future__ import annotations

import argparse
from typing import Callable


def at_least(least: int, why: str = "") -> Callable[[str], int]:
    """An argparse `type`: a whole number of `least` or more; argparse reports anything else
    as `argument --x: takes a whole number of LEAST or more (WHY)` and exits 2."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            value = None
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"takes a whole number of {least:,} or more{f' ({why})' if why else ''}, not {text!r}")
        return value

    parse.__name__ = "whole number"
    return parse
