"""Thousands of episodes in one process leave no memory and no instances behind."""

from __future__ import annotations

import gc
import itertools
import weakref

from bfcl_helpers import all_multi_turn

from aworld_rl_core.tooluse.bfcl import MultiTurnEpisode


def _replay(entry):
    episode = MultiTurnEpisode(entry)
    for calls in entry.ground_truth:
        episode.execute(calls)
        episode.end_turn()
    refs = [weakref.ref(i) for i in episode.instances.values()]
    episode.close()
    return refs


def test_episodes_leave_no_memory():
    sample = all_multi_turn()
    for entry in sample:  # warm up: imports, per-entry JSON state, lazy caches of the API modules
        _replay(entry)
    gc.collect()
    objects_before = len(gc.get_objects())
    refs = []
    for entry in itertools.islice(itertools.cycle(sample), 1600):
        refs.extend(_replay(entry))
    gc.collect()
    alive, total = sum(ref() is not None for ref in refs), len(refs)
    del refs
    grown = len(gc.get_objects()) - objects_before
    assert total > 2500 and alive == 0  # every API instance was freed
    assert grown < 100, f"{grown} objects retained after 1600 episodes"
