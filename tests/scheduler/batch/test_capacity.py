from __future__ import annotations

import pytest

from common.resources import Resources as R
from scheduler.batch.capacity import (
    ROOT,
    HierarchyError,
    QueueLimits,
    QueueQuota,
    allocatable,
    capacity_queue_order,
    capacity_share,
    common_depth,
    compute_limits,
    hierarchical_allocatable,
    preemptive,
    reclaim_victims,
)

TOTAL = R(cpu=10000, memory=10000, pods=100)


def test_flat_limits() -> None:
    limits = compute_limits(TOTAL, [
        QueueQuota("a", deserved=R(cpu=6000), guarantee=R(cpu=2000)),
        QueueQuota("b", deserved=R(cpu=20000), capability=R(cpu=5000)),
        QueueQuota("be"),
    ])
    assert limits["a"].real_capability == R(cpu=10000, memory=10000, pods=100)
    assert limits["a"].deserved == R(cpu=6000)
    assert limits["b"].real_capability["cpu"] == 5000
    assert limits["b"].deserved == R(cpu=5000)
    # b's real capability leaves a's guarantee alone: min(10000 − 2000, 5000)
    assert limits["be"].real_capability["cpu"] == 8000
    assert limits["be"].deserved == R()


def test_share_and_allocatable_use_capability_not_deserved() -> None:
    assert capacity_share(R(cpu=1000), R()) == 1.0
    assert capacity_share(R(cpu=1000), R(cpu=4000)) == 0.25
    real = R(cpu=8000, pods=100)
    # above deserved but within capability: allowed (borrowing)
    assert allocatable(R(cpu=7000), R(cpu=1000, pods=1), real) == []
    assert allocatable(R(cpu=7000), R(cpu=1000, pods=1), real, reserved=R(cpu=1)) == ["cpu"]


def test_preemptive() -> None:
    lim = QueueLimits("q", R(cpu=4000, memory=4000), R(), R(cpu=8000, memory=8000), ("q",), True)
    assert preemptive(lim, R(cpu=3000, memory=5000), R(cpu=1000, memory=1000))  # cpu within deserved
    assert not preemptive(lim, R(cpu=4000, memory=5000), R(cpu=1000, memory=1000))
    assert not preemptive(lim, R(cpu=7500), R(cpu=1000))  # beyond capability


def test_reclaim_victims() -> None:
    limits = compute_limits(TOTAL, [
        QueueQuota("over", deserved=R(cpu=2000), guarantee=R(cpu=1000)),
        QueueQuota("under", deserved=R(cpu=5000)),
        QueueQuota("be"),
    ])
    allocated = {"over": R(cpu=3000), "under": R(cpu=1000), "be": R(cpu=500)}
    candidates = [
        ("over", R(cpu=1000, pods=1)),  # 3000 > 2000 -> victim (2000)
        ("over", R(cpu=1000, pods=1)),  # 2000 not > 2000 -> no
        ("under", R(cpu=500, pods=1)),  # within deserved -> no
        ("be", R(cpu=500, pods=1)),  # empty deserved -> immediate victim
        ("over", R(memory=10, pods=1)),  # shares no dimension with the reclaimer -> skipped
    ]
    assert reclaim_victims(R(cpu=1000, pods=1), candidates, allocated, limits) == [0, 3]


def test_reclaim_respects_guarantee() -> None:
    limits = compute_limits(TOTAL, [QueueQuota("g", deserved=R(cpu=1000), guarantee=R(cpu=2000))])
    assert reclaim_victims(R(cpu=1), [("g", R(cpu=1000))], {"g": R(cpu=2500)}, limits) == []


def test_hierarchy_inherits_capability_and_splits_guarantees() -> None:
    limits = compute_limits(TOTAL, [
        QueueQuota("eng", deserved=R(cpu=6000), capability=R(cpu=6000), guarantee=R(cpu=1000)),
        QueueQuota("dev", deserved=R(cpu=2000), guarantee=R(cpu=1000), parent="eng"),
        QueueQuota("prod", deserved=R(cpu=3000), parent="eng"),
        QueueQuota("ops", deserved=R(cpu=4000), guarantee=R(cpu=3000)),
    ], hierarchy=True)
    assert limits[ROOT].deserved == R(cpu=10000)
    assert limits[ROOT].guarantee == R(cpu=4000)
    assert limits["eng"].real_capability["cpu"] == 6000  # min(10000 − 4000 + 1000, 6000)
    assert limits["dev"].real_capability["cpu"] == 6000  # 6000 − 1000 + 1000, inherited cap 6000
    assert limits["prod"].real_capability["cpu"] == 5000
    assert limits["dev"].path == (ROOT, "eng", "dev")
    assert limits["dev"].leaf and not limits["eng"].leaf


def test_hierarchy_errors() -> None:
    with pytest.raises(HierarchyError, match="Queue a: spec.parent 'nope'"):
        compute_limits(TOTAL, [QueueQuota("a", parent="nope")], hierarchy=True)
    with pytest.raises(HierarchyError, match="cycle"):
        compute_limits(TOTAL, [QueueQuota("a", parent="b"), QueueQuota("b", parent="a")], hierarchy=True)


def test_hierarchical_allocatable_checks_ancestors() -> None:
    limits = compute_limits(TOTAL, [
        QueueQuota("eng", capability=R(cpu=4000)),
        QueueQuota("dev", parent="eng", capability=R(cpu=800)),
        QueueQuota("prod", parent="eng"),
    ], hierarchy=True)
    allocated = {"eng": R(cpu=3500), "dev": R(cpu=500), "prod": R(cpu=3000)}
    assert hierarchical_allocatable("dev", limits, allocated, R(cpu=300)) is None
    assert hierarchical_allocatable("dev", limits, allocated, R(cpu=400)) == ("dev", ["cpu"])
    assert hierarchical_allocatable("prod", limits, allocated, R(cpu=600)) == ("eng", ["cpu"])
    allocated2 = {"eng": R(cpu=3500), "dev": R(cpu=0), "prod": R(cpu=3500)}
    limits2 = {**limits, "dev": QueueLimits("dev", R(), R(), R(cpu=9000), (ROOT, "eng", "dev"), True)}
    assert hierarchical_allocatable("dev", limits2, allocated2, R(cpu=1000)) == ("eng", ["cpu"])
    assert hierarchical_allocatable("eng", limits, allocated, R(cpu=1)) == ("eng", ["queue is not a leaf"])


def test_queue_order_and_depth() -> None:
    assert capacity_queue_order((1, 0.9, True), (0, 0.1, True)) == -1
    assert capacity_queue_order((0, 0.2, False), (0, 0.5, True)) == -1
    assert capacity_queue_order((0, 0.5, False), (0, 0.5, True)) == 1
    assert capacity_queue_order((0, 0.5, True), (0, 0.5, True)) == 0
    a = QueueLimits("a", R(), R(), R(), (ROOT, "eng", "a"), True)
    b = QueueLimits("b", R(), R(), R(), (ROOT, "eng", "b"), True)
    c = QueueLimits("c", R(), R(), R(), (ROOT, "c"), True)
    assert common_depth(a, b) == 2 and common_depth(a, c) == 1
