import threading
from collections.abc import Callable

import pytest

from common.clock import FakeClock
from common.cluster import Conflict, NotFound, TooManyRequests, WatchEvent
from common.cluster.memory import MemoryCluster


def node(name: str) -> dict:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, labels: dict | None = None, node_name: str = "") -> dict:
    spec: dict = {"containers": [{"name": "c"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": labels or {}}, "spec": spec}


def test_resource_versions_and_informer_sync() -> None:
    c = MemoryCluster(clock=FakeClock())
    c.create("Node", node("n1"))
    seen: list[WatchEvent] = []
    inf = c.informer("Node", seen.append)
    inf.start()
    assert inf.has_synced()
    c.create("Node", node("n2"))
    c.patch("Node", "n2", {"metadata": {"labels": {"a": "b"}}})
    c.delete("Node", "n1")
    assert [(e.type, e.object["metadata"]["name"]) for e in seen] == [
        ("ADDED", "n1"),
        ("ADDED", "n2"),
        ("MODIFIED", "n2"),
        ("DELETED", "n1"),
    ]
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in seen]
    assert rvs == sorted(rvs)
    inf.stop()
    c.create("Node", node("n3"))
    assert len(seen) == 4


def test_watch_resumes_from_resource_version() -> None:
    c = MemoryCluster(clock=FakeClock())
    c.create("Node", node("n1"))
    rv = c.list("Node").resource_version
    c.create("Node", node("n2"))
    events = list(c.watch("Node", resource_version=rv, timeout_seconds=0))
    assert [e.object["metadata"]["name"] for e in events] == ["n2"]


def test_watch_across_threads() -> None:
    c = MemoryCluster()
    rv = c.list("Node").resource_version
    got: list[str] = []

    def consume() -> None:
        for ev in c.watch("Node", resource_version=rv, timeout_seconds=2):
            got.append(ev.object["metadata"]["name"])
            return

    t = threading.Thread(target=consume)
    t.start()
    c.create("Node", node("late"))
    t.join(3)
    assert got == ["late"]


def test_bind_once_and_field_selector() -> None:
    c = MemoryCluster(clock=FakeClock())
    c.create("Node", node("n1"))
    c.create("Pod", pod("a"))
    c.bind("ns", "a", "n1")
    with pytest.raises(Conflict):
        c.bind("ns", "a", "n1")
    with pytest.raises(NotFound):
        c.bind("ns", "missing", "n1")
    items = c.list("Pod", field_selector="spec.nodeName=n1").items
    assert [p["metadata"]["name"] for p in items] == ["a"]
    assert items[0]["status"]["phase"] == "Running"


def test_eviction_respects_pdb() -> None:
    c = MemoryCluster(clock=FakeClock())
    c.create("Node", node("n1"))
    for n in ("a", "b"):
        c.create("Pod", pod(n, {"app": "web"}, node_name="n1"))
    c.create(
        "PodDisruptionBudget",
        {"kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "ns"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}},
    )
    c.evict("ns", "a")
    with pytest.raises(TooManyRequests):
        c.evict("ns", "b")
    assert c.evictions == ["ns/a"]
    assert c.refused_evictions == ["ns/b"]


def test_graceful_eviction_reaped_after_grace() -> None:
    clock = FakeClock()
    c = MemoryCluster(clock=clock, graceful_deletion=True)
    c.create("Node", node("n1"))
    c.create("Pod", pod("a", node_name="n1"))
    c.evict("ns", "a", grace_period_seconds=10)
    assert c.get("Pod", "a", namespace="ns")["metadata"]["deletionTimestamp"]
    assert c.reap() == []
    clock.advance(10)
    assert c.reap() == ["ns/a"]


def test_status_patch_and_replace_conflict() -> None:
    c = MemoryCluster(clock=FakeClock())
    c.create("NodeMetric", {"metadata": {"name": "n1"}, "spec": {}})
    out = c.patch_status("NodeMetric", "n1", {"status": {"updateTime": "2024-01-01T00:00:00Z"}})
    assert out["status"]["updateTime"] == "2024-01-01T00:00:00Z"
    stale = c.get("NodeMetric", "n1")
    c.patch("NodeMetric", "n1", {"metadata": {"labels": {"x": "y"}}})
    with pytest.raises(Conflict):
        c.replace("NodeMetric", stale)


def test_patch_conditions_merges_by_type() -> None:
    """The strategic merge of ``status.conditions``: the writer's types only, others untouched, atomically."""
    c = MemoryCluster(clock=FakeClock())
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    n1 = node("n1")
    n1["status"]["conditions"] = [ready, {"type": "Mine", "status": "True", "x": "1"}]
    c.create("Node", n1)
    seen: list[WatchEvent] = []
    inf = c.informer("Node", seen.append)
    inf.start()
    cond = {"type": "Mine", "status": "False", "reason": "Cleared", "x": None}
    out = c.patch_conditions("Node", "n1", [cond, {"type": "New", "status": "True", "gone": None}])
    assert out["status"]["conditions"] == [ready, {"type": "Mine", "status": "False", "reason": "Cleared"},
                                           {"type": "New", "status": "True"}]
    assert out["status"]["allocatable"] == node("n1")["status"]["allocatable"]  # the rest of the status stays
    assert [e.type for e in seen] == ["ADDED", "MODIFIED"]
    # what the caller passed and got are its own: changing them changes nothing stored
    cond["status"] = "Changed"
    out["status"]["conditions"][0]["status"] = "Changed"
    assert c.get("Node", "n1")["status"]["conditions"][:2] == [ready, {"type": "Mine", "status": "False",
                                                                        "reason": "Cleared"}]
    # other status fields in the same write
    c.create("Pod", pod("p"))
    got = c.patch_conditions("Pod", "p", [{"type": "PodScheduled", "status": "False"}], namespace="ns",
                             status={"nominatedNodeName": "n1"})
    assert got["status"] == {"phase": "Pending", "nominatedNodeName": "n1",
                             "conditions": [{"type": "PodScheduled", "status": "False"}]}
    with pytest.raises(NotFound):
        c.patch_conditions("Node", "nope", [cond])
    with pytest.raises(ValueError, match="type"):
        c.patch_conditions("Node", "n1", [{"status": "True"}])
    inf.stop()


def test_patch_conditions_without_conditions_writes_only_the_fields() -> None:
    c = MemoryCluster(clock=FakeClock())
    c.create("Pod", pod("p"))
    got = c.patch_conditions("Pod", "p", [], namespace="ns", status={"nominatedNodeName": "n1"})
    assert got["status"] == {"phase": "Pending", "nominatedNodeName": "n1"}


def test_a_handler_stopping_and_starting_informers_changes_who_gets_the_next_events_only() -> None:
    """An event goes to the informers that were started when it was made: one a handler stops gets no more, one
    it starts gets the object from its own list (once), and both see the next events as they then are."""
    c = MemoryCluster(clock=FakeClock())
    got: dict[str, list[tuple[str, str]]] = {"a": [], "b": [], "c": []}

    def record(who: str) -> Callable[[WatchEvent], None]:
        return lambda e: got[who].append((e.type, e.object["metadata"]["name"]))

    b = c.informer("Node", record("b"))
    late = c.informer("Node", record("c"))

    def first(e: WatchEvent) -> None:
        record("a")(e)
        if not late.has_synced():
            b.stop()
            late.start()

    c.informer("Node", first).start()
    b.start()
    c.create("Node", node("n1"))
    c.create("Node", node("n2"))
    assert got == {"a": [("ADDED", "n1"), ("ADDED", "n2")], "b": [], "c": [("ADDED", "n1"), ("ADDED", "n2")]}
