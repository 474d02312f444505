"""The collector kept out of bulk reads: nothing it would walk is left young after one."""

from __future__ import annotations

import gc

from engine.core.collector import HeapFreezer, collector_paused


def test_what_a_paused_block_made_is_not_left_young_for_the_next_collection():
    gc.collect()
    with collector_paused():
        made = [[i] for i in range(20_000)]  # lists: always tracked
        assert not gc.isenabled()
    assert gc.isenabled()
    young = {id(o) for o in gc.get_objects(generation=0)} | {id(o) for o in gc.get_objects(generation=1)}
    assert not any(id(o) in young for o in made)  # in the oldest generation: no young pass walks them
    assert all(gc.is_tracked(o) for o in made[:10]) and gc.get_freeze_count() == 0


def test_a_paused_block_inside_a_pause_or_a_frozen_heap_leaves_them_as_they_were():
    gc.collect()
    freezer = HeapFreezer(now=True)
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with collector_paused():
            [{"n": i} for i in range(100)]
        # another's freeze is not undone (unfreezing empties it; a few of its objects may die meanwhile)
        assert gc.get_freeze_count() > frozen // 2
    finally:
        freezer.close()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
