"""What `agent-tui list` shows of the built-in scenarios, kept so that listing imports none of them.

Importing a scenario module builds its world's pieces (a pydantic `Budget`,
tools, the engine they come from): most of what `list` would cost. The
listing is kept in `data/catalogue.json`, generated from the modules
themselves (`python -m scenarios.catalogue` rewrites it); a test checks that
it still matches them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

PATH = Path(__file__).resolve().parent / "data" / "catalogue.json"


class Listing(NamedTuple):
    description: str
    tasks: tuple[tuple[str, str], ...]
    """(id, text) of each task."""
    policies: tuple[str, ...]


def listing_of(scenario: object) -> Listing:
    """A loaded scenario's listing."""
    return Listing(
        scenario.description,  # type: ignore[attr-defined]
        tuple((task.id, task.text) for task in scenario.tasks.values()),  # type: ignore[attr-defined]
        tuple(scenario.policies),  # type: ignore[attr-defined]
    )


def built_in_listings() -> dict[str, Listing]:
    """Every built-in scenario's listing, from its module."""
    import scenarios

    return {name: listing_of(scenarios.get_named(name)) for name in scenarios.BUILTIN}


def stored_listings() -> dict[str, Listing]:
    """The listings as kept in the catalogue file."""
    data = json.loads(PATH.read_text(encoding="utf-8"))
    return {
        name: Listing(entry["description"], tuple((t[0], t[1]) for t in entry["tasks"]), tuple(entry["policies"]))
        for name, entry in data.items()
    }


def write() -> None:
    """Rewrite the catalogue file from the modules."""
    data = {
        name: {"description": listing.description, "tasks": [list(t) for t in listing.tasks], "policies": list(listing.policies)}
        for name, listing in built_in_listings().items()
    }
    PATH.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write()
