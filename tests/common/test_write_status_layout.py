"""write_status given the status's layout: the merge it skips would have stored that very status, so the stored
objects and the events are those of patch_status, whatever came before (other layouts, other writers)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from common.clock import FakeClock
from common.cluster import WatchEvent, layout, merge_patch
from common.cluster.memory import MemoryCluster


def _resources(rng: random.Random) -> dict[str, str]:
    names = [n for n in ("cpu", "memory") if rng.random() < 0.8]
    return {n: str(rng.randint(0, 9)) for n in names}


def _status(rng: random.Random) -> dict[str, Any]:
    status: dict[str, Any] = {
        "updateTime": f"2024-01-01T00:00:0{rng.randint(0, 9)}Z",
        "nodeMetric": {"nodeUsage": {"resources": _resources(rng)}, "aggregatedNodeUsages": [],
                       "systemUsage": {"resources": _resources(rng)}},
        "podsMetric": [{"name": f"p{i}", "podUsage": {"resources": _resources(rng)}} for i in range(rng.randint(0, 2))],
    }
    if rng.random() < 0.1:
        del status["updateTime"]
    return status


def _cluster() -> tuple[MemoryCluster, list[WatchEvent]]:
    c = MemoryCluster(clock=FakeClock(0.0))
    c.create("NodeMetric", {"metadata": {"name": "n1", "uid": "u1"}, "spec": {}})
    events: list[WatchEvent] = []
    c.informer("NodeMetric", events.append, shared=True).start()
    return c, events


def _text(obj: Any) -> str:
    return json.dumps(obj)   # key order included


@pytest.mark.parametrize("seed", range(40))
def test_writes_with_layouts_store_and_emit_what_status_patches_do(seed: int) -> None:
    rng = random.Random(seed)
    merged, merged_events = _cluster()
    written, written_events = _cluster()
    for _ in range(30):
        status = _status(rng)
        step = rng.random()
        if step < 0.1:   # another writer's patch, leaving a status the layouts did not note
            patch = {"status": {"nodeMetric": {"nodeUsage": {"resources": {"cpu": None, "gpu": "1"}}}}}
            merged.patch_status("NodeMetric", "n1", patch)
            written.patch_status("NodeMetric", "n1", patch)
            continue
        merged.patch_status("NodeMetric", "n1", {"status": status})
        copy = json.loads(json.dumps(status))
        given = layout(copy) if step < 0.9 else None
        written.write_status("NodeMetric", "n1", copy, layout=given)
        assert _text(written.get("NodeMetric", "n1")) == _text(merged.get("NodeMetric", "n1"))
    assert [(e.type, _text(e.object)) for e in written_events] == [(e.type, _text(e.object)) for e in merged_events]


def test_a_write_of_the_same_layout_stores_the_status_it_was_given() -> None:
    c, _ = _cluster()
    first = {"a": {"b": "1"}, "c": []}
    c.write_status("NodeMetric", "n1", first, layout=layout(first))
    second = {"a": {"b": "2"}, "c": [1]}
    stored = c.write_status("NodeMetric", "n1", second, layout=layout(second))
    assert stored["status"] is second


def test_a_report_leaving_a_quantity_out_keeps_the_stored_one_as_a_merge_does() -> None:
    c, _ = _cluster()
    c.write_status("NodeMetric", "n1", {"r": {"cpu": "1", "memory": "2"}}, layout=(("r", (("cpu", None), ("memory", None))),))
    stored = c.write_status("NodeMetric", "n1", {"r": {"cpu": "3"}}, layout=(("r", (("cpu", None),)),))
    assert stored["status"] == {"r": {"cpu": "3", "memory": "2"}}


@pytest.mark.parametrize("seed", range(200))
def test_merging_a_patch_into_a_target_of_its_layout_gives_the_patch(seed: int) -> None:
    rng = random.Random(seed)
    target, patch = _status(rng), _status(rng)
    if layout(target) == layout(patch):
        assert _text(merge_patch(target, patch)) == _text(patch)
        assert merge_patch(target, patch, copy=False) is patch


def test_layout_refuses_none_values_and_mappings_that_are_not_dicts() -> None:
    from types import MappingProxyType

    assert layout({"a": {"b": None}}) is None
    assert layout({"a": MappingProxyType({"b": 1})}) is None
    assert layout({"a": {"b": [None]}, "c": 1}) == (("a", (("b", None),)), ("c", None))
