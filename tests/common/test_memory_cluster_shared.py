"""MemoryCluster's shared informers and its watch history: a ``shared=True`` handler is given the stored versions
themselves, which no write path changes afterwards; every other consumer still gets copies of its own, whatever a
shared one or another consumer does; a version nobody copies is never pickled; the history's size is an option and
a watch from before it raises Gone."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import common.cluster.memory as memory
from common.clock import FakeClock
from common.cluster import Gone, WatchEvent
from common.cluster.memory import MemoryCluster
from tests.common.test_memory_cluster_copies import _status, _vandalise


def _node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"zone": "a"}}, "spec": {},
            "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                            "terminationGracePeriodSeconds": 5}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ns", "labels": {"app": "x"}}, "spec": spec}


class _Recorder:
    """A shared handler that keeps every object it is given with a deep copy taken when it was given."""

    def __init__(self) -> None:
        self.events: list[WatchEvent] = []
        self.as_given: list[Any] = []

    def __call__(self, event: WatchEvent) -> None:
        self.events.append(event)
        self.as_given.append(copy.deepcopy(event.object))

    def unchanged(self) -> bool:
        return all(e.object == given for e, given in zip(self.events, self.as_given, strict=True))


def test_shared_informers_get_the_stored_version_and_others_a_copy() -> None:
    c = MemoryCluster(clock=FakeClock())
    c.create("Node", _node("n1"))
    shared_a, shared_b, own = _Recorder(), _Recorder(), _Recorder()
    c.informer("Node", shared_a, shared=True).start()
    c.informer("Node", shared_b, shared=True).start()
    c.informer("Node", own).start()
    c.write_status("Node", "n1", {"allocatable": {"cpu": "3"}})
    c.create("Node", _node("n2"))
    for i in range(3):
        a, b, mine = shared_a.events[i].object, shared_b.events[i].object, own.events[i].object
        assert a is b and a == mine and a is not mine
    stored = c._bucket("Node")[("", "n2")]
    assert shared_a.events[-1].object is stored
    # what a consumer that did not opt in does to its copies reaches neither the store nor the shared readers
    for ev in own.events:
        _vandalise(ev.object)
    assert shared_a.unchanged() and c.get("Node", "n2") == shared_a.as_given[-1]


def test_no_write_path_changes_a_version_it_handed_out() -> None:
    """Every write path replaces the stored object: the versions shared readers hold stay as they were given."""
    clock = FakeClock(1_000.0)
    c = MemoryCluster(clock=clock, graceful_deletion=True)
    kinds = ("Node", "Pod", "NodeMetric", "PodDisruptionBudget")
    seen = {kind: _Recorder() for kind in kinds}
    c.create("Node", _node("n1"))
    c.create("Pod", _pod("before", node="n1"))
    for kind in kinds:
        c.informer(kind, seen[kind], shared=True).start()
    c.create("NodeMetric", {"metadata": {"name": "n1"}, "spec": {"x": [1]}})
    c.patch_status("NodeMetric", "n1", {"status": _status("250m")})
    c.write_status("NodeMetric", "n1", _status("500m", pods=3))
    c.write_status("NodeMetric", "n1", {"podsMetric": None, "nodeMetric": {"nodeUsage": {"resources": {"cpu": None}}}})
    c.patch("NodeMetric", "n1", {"metadata": {"labels": {"k": "v"}}, "spec": {"x": None, "y": {"z": 1}}})
    c.replace("Node", {**_node("n1"), "spec": {"unschedulable": True}})
    c.patch_status("Node", "n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    c.create("Pod", _pod("p1"))
    c.bind("ns", "p1", "n1")
    c.patch_status("Pod", "p1", {"status": {"phase": "Succeeded"}}, namespace="ns")
    c.create("PodDisruptionBudget", {"metadata": {"name": "b", "namespace": "ns"},
                                     "spec": {"selector": {"matchLabels": {"app": "y"}}, "maxUnavailable": 1}})
    c.evict("ns", "p1")
    clock.advance(10)
    assert c.reap() == ["ns/p1"]
    c.delete("Pod", "before", namespace="ns")
    c.delete("NodeMetric", "n1")
    assert [e.type for e in seen["Pod"].events] == ["ADDED", "ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED",
                                                    "DELETED"]
    assert all(rec.unchanged() for rec in seen.values())
    assert len(seen["NodeMetric"].events) == 6 and seen["Node"].events[-1].object["spec"] == {"unschedulable": True}


def test_a_version_nobody_copies_is_not_pickled_and_a_watch_still_gets_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    pickled: list[Any] = []
    real = memory.pickle_plain

    def counting(value: Any) -> bytes | None:
        pickled.append(value)
        return real(value)

    monkeypatch.setattr(memory, "pickle_plain", counting)
    c = MemoryCluster(clock=FakeClock())
    c.create("NodeMetric", {"metadata": {"name": "n1"}})
    shared = _Recorder()
    c.informer("NodeMetric", shared, shared=True).start()
    pickled.clear()
    for cpu in ("1", "2", "3"):
        c.write_status("NodeMetric", "n1", _status(cpu))
    assert pickled == []
    watched = list(c.watch("NodeMetric", resource_version="0", timeout_seconds=0))
    assert [e.object for e in watched] == shared.as_given
    for ev in watched:
        _vandalise(ev.object)
    assert shared.unchanged()
    again = list(c.watch("NodeMetric", resource_version="0", timeout_seconds=0))
    assert [e.object for e in again] == shared.as_given


def test_history_size_bounds_what_a_watch_can_replay() -> None:
    c = MemoryCluster(clock=FakeClock(), history=3)
    for i in range(5):
        c.create("Node", _node(f"n{i}"))  # resourceVersions 1..5; the history keeps 3..5
    with pytest.raises(Gone):
        list(c.watch("Node", resource_version="1", timeout_seconds=0))
    for since, want in (("2", ["n2", "n3", "n4"]), ("3", ["n3", "n4"]), ("5", [])):
        got = list(c.watch("Node", resource_version=since, timeout_seconds=0))
        assert [e.object["metadata"]["name"] for e in got] == want
    c.write_status("Node", "n3", {"phase": "x"})
    c.delete("Node", "n4")
    got = list(c.watch("Node", resource_version="4", timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"], e.object["metadata"]["resourceVersion"]) for e in got] == [
        ("ADDED", "n4", "5"), ("MODIFIED", "n3", "6"), ("DELETED", "n4", "7")]
    with pytest.raises(ValueError, match="history"):
        MemoryCluster(history=0)


def test_write_status_returns_the_stored_version_that_patch_status_copies() -> None:
    """A pod's status handed over: the same stored object and events as ``patch_status``, the stored version itself
    returned (no copy), and no later write changes it."""
    def started(cluster: MemoryCluster, write: bool) -> tuple[Any, _Recorder]:
        seen = _Recorder()
        cluster.create("Node", _node("n1"))
        pod = _pod("p1")
        pod["metadata"]["uid"] = "uid-p1"
        cluster.create("Pod", pod)
        cluster.informer("Pod", seen, shared=True).start()
        cluster.bind("ns", "p1", "n1")
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}]}
        if write:
            return cluster.write_status("Pod", "p1", status, namespace="ns"), seen
        return cluster.patch_status("Pod", "p1", {"status": status}, namespace="ns"), seen

    handed, patched = MemoryCluster(clock=FakeClock()), MemoryCluster(clock=FakeClock())
    (got, seen), (copied, seen_patched) = started(handed, True), started(patched, False)
    assert got == copied == patched.get("Pod", "p1", namespace="ns")
    assert got is handed._bucket("Pod")[("ns", "p1")] and copied is not patched._bucket("Pod")[("ns", "p1")]
    assert [(e.type, e.object) for e in seen.events] == [(e.type, e.object) for e in seen_patched.events]
    assert seen.events[-1].object is got
    given = copy.deepcopy(got)
    handed.patch_status("Pod", "p1", {"status": {"phase": "Succeeded"}}, namespace="ns")
    assert got == given and seen.unchanged()
