"""`read_file`'s confinement under attack: links swapped in during a read, hard links, and
what error messages reveal."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from scenarios.safe import ConfinedReader
from engine.core.tools import ToolError

SECRET = "outside the folder"


@pytest.fixture
def places(tmp_path) -> tuple[Path, Path]:
    root, outside = tmp_path / "notes", tmp_path / "private"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    (root / "docs" / "a.txt").write_text("inside")
    (outside / "a.txt").write_text(SECRET)
    return root, outside


def test_a_folder_swapped_for_a_link_during_a_read_is_not_followed(places, monkeypatch):
    """The swap happens after the path was checked and before the file is opened
    (hooked at whichever of the two the reader uses: a check by `resolve`, or the open walk)."""
    root, outside = places
    reader = ConfinedReader(root)
    swapped: list[bool] = []

    def swap() -> None:
        if not swapped:
            (root / "docs").rename(root / "docs.old")
            (root / "docs").symlink_to(outside, target_is_directory=True)
            swapped.append(True)

    check = getattr(ConfinedReader, "resolve", None)
    if check is not None:
        def checked_then_swapped(self, path):
            target = check(self, path)
            swap()
            return target

        monkeypatch.setattr(ConfinedReader, "resolve", checked_then_swapped)
    real_open = os.open

    def swap_then_open(path, flags, mode=0o777, *, dir_fd=None):
        if str(path) == "docs":
            swap()
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", swap_then_open)
    try:
        text = reader.read("docs/a.txt")
    except ToolError as exc:
        assert "link" in str(exc)
        text = None
    assert swapped
    assert text != SECRET, "the read followed the swapped-in link outside the folder"


def test_links_swapped_in_and_out_while_reading_never_escape(places):
    """A folder on the checked path turns into a link outside and back, over and over."""
    root, outside = places
    reader = ConfinedReader(root)
    real, stash, fresh = root / "real", root / "real.dir", root / "link.tmp"
    real.mkdir()
    (real / "a.txt").write_text("inside")
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            real.rename(stash)
            fresh.symlink_to(outside, target_is_directory=True)
            fresh.replace(real)
            real.unlink()
            stash.rename(real)

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    escaped = 0
    try:
        for _ in range(5000):
            try:
                escaped += reader.read("real/a.txt") == SECRET
            except ToolError:
                pass
    finally:
        stop.set()
        thread.join(10)
    assert escaped == 0, f"{escaped} of 5000 reads went outside the folder"


def test_a_hard_link_to_a_file_outside_is_refused(places):
    root, outside = places
    os.link(outside / "a.txt", root / "copy.txt")
    with pytest.raises(ToolError, match="hard links"):
        ConfinedReader(root).read("copy.txt")


def test_a_link_inside_the_folder_is_refused_even_pointing_inside(places):
    root, _ = places
    (root / "alias.txt").symlink_to(root / "docs" / "a.txt")
    with pytest.raises(ToolError, match="link"):
        ConfinedReader(root).read("alias.txt")


@pytest.mark.parametrize("make", ["loop", "fifo", "dir", "missing", "dangling"])
def test_errors_never_show_the_folders_absolute_path(places, make):
    root, _ = places
    if make == "loop":
        (root / "loop").symlink_to(root / "loop")
        path = "loop/x.txt"
    elif make == "fifo":
        os.mkfifo(root / "pipe")
        path = "pipe"
    elif make == "dir":
        path = "docs"
    elif make == "missing":
        path = "docs/none.txt"
    else:
        (root / "gone.txt").symlink_to(root / "nowhere")
        path = "gone.txt"
    with pytest.raises(ToolError) as caught:
        ConfinedReader(root).read(path)
    assert str(root.parent) not in str(caught.value)
