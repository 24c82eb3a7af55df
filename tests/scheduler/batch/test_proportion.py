from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.resources import Resources as R
from scheduler.batch.proportion import (
    QueueDemand,
    allocatable,
    effective_capability,
    overused,
    queue_share,
    real_capability,
    reclaim_victims,
    water_fill,
)
from scheduler.batch.quota import exceeding_requested, sum_resources

TOTAL = R(cpu=12000, memory=12000, pods=110)


def test_equal_weights_split_evenly_when_everyone_wants_more() -> None:
    queues = [QueueDemand(n, 1, R(cpu=20000, memory=20000, pods=50)) for n in "abc"]
    deserved = water_fill(TOTAL, queues)
    for name in "abc":
        assert deserved[name]["cpu"] == 4000
        assert deserved[name]["memory"] == 4000


def test_weights_are_respected() -> None:
    queues = [QueueDemand("a", 1, R(cpu=20000, pods=10)), QueueDemand("b", 3, R(cpu=20000, pods=10))]
    deserved = water_fill(R(cpu=12000, pods=100), queues)
    assert deserved["a"]["cpu"] == 3000
    assert deserved["b"]["cpu"] == 9000


def test_small_request_is_capped_and_leftover_redistributed() -> None:
    queues = [
        QueueDemand("small", 1, R(cpu=1000, pods=1)),
        QueueDemand("big1", 1, R(cpu=20000, pods=10)),
        QueueDemand("big2", 1, R(cpu=20000, pods=10)),
    ]
    deserved = water_fill(R(cpu=12000, pods=100), queues)
    assert deserved["small"] == R(cpu=1000, pods=1)
    assert deserved["big1"]["cpu"] == 5500
    assert deserved["big2"]["cpu"] == 5500


def test_result_does_not_depend_on_queue_order() -> None:
    queues = [
        QueueDemand("a", 2, R(cpu=3000, memory=9000, pods=3)),
        QueueDemand("b", 1, R(cpu=9000, memory=1000, pods=9)),
        QueueDemand("c", 5, R(cpu=500, memory=500, pods=1)),
    ]
    expected = water_fill(TOTAL, queues)
    assert water_fill(TOTAL, list(reversed(queues))) == expected


def test_guarantee_floors_deserved_and_capability_caps_it() -> None:
    queues = [
        QueueDemand("g", 1, R(cpu=100, pods=1), guarantee=R(cpu=4000)),
        QueueDemand("capped", 1, R(cpu=20000, pods=10), capability=R(cpu=2000)),
        QueueDemand("rest", 1, R(cpu=20000, pods=10)),
    ]
    deserved = water_fill(R(cpu=12000, pods=100), queues)
    assert deserved["g"]["cpu"] == 4000
    assert deserved["capped"]["cpu"] == 2000
    # 12000 total: rest may claim what the others do not hold, within its real capability (12000 − 4000).
    assert deserved["rest"]["cpu"] == 6000


def test_real_capability() -> None:
    total = R(cpu=10000, memory=100)
    assert real_capability(total, R(cpu=3000), R(cpu=1000), R()) == R(cpu=8000, memory=100)
    assert real_capability(total, R(), R(), R(cpu=2000)) == R(cpu=2000, memory=100)
    assert effective_capability(R(cpu=-1, memory=5)) == R(memory=5)


def test_share_overused_allocatable() -> None:
    deserved = R(cpu=4000, pods=4)
    assert queue_share(R(cpu=2000, pods=1), deserved) == 0.5
    assert queue_share(R(cpu=1000), R()) == 0.0
    assert overused(deserved, R(cpu=4000, pods=4))
    assert not overused(deserved, R(cpu=4000, pods=3))
    assert allocatable(R(cpu=3500, pods=9), R(cpu=500, pods=1), deserved) == []
    assert allocatable(R(cpu=3600), R(cpu=500, pods=1), deserved) == ["cpu"]


def test_reclaim_victims_tracks_running_allocation() -> None:
    allocated = {"a": R(cpu=6000), "b": R(cpu=1000)}
    deserved = {"a": R(cpu=4000), "b": R(cpu=4000)}
    candidates = [("a", R(cpu=1000)), ("b", R(cpu=1000)), ("a", R(cpu=1000)), ("a", R(cpu=1000))]
    # a: 6000 > 4000 -> victim (5000), again -> victim (4000), then within deserved -> stop.
    assert reclaim_victims(candidates, allocated, deserved) == [0, 2]


@pytest.mark.parametrize("seed", range(200))
def test_water_fill_invariants(seed: int) -> None:
    rng = random.Random(seed)
    total = R(cpu=rng.randint(1000, 64000), memory=rng.randint(1000, 64000), pods=rng.randint(10, 200))
    queues = []
    for i in range(rng.randint(1, 6)):
        request = R(cpu=rng.randint(0, 40000), memory=rng.randint(0, 40000), pods=rng.randint(1, 50))
        cap = R(cpu=rng.randint(500, 40000)) if rng.random() < 0.3 else R()
        queues.append(QueueDemand(f"q{i}", rng.randint(1, 5), request, capability=cap))
    deserved = water_fill(total, queues)
    for dim in ("cpu", "memory"):
        assert sum(d[dim] for d in deserved.values()) <= total[dim]
    for q in queues:
        d = deserved[q.name]
        for dim in ("cpu", "memory"):
            assert d[dim] <= q.request[dim]
            if dim in q.capability:
                assert d[dim] <= q.capability[dim]
    # Work conservation: while a queue is unsatisfied (and uncapped) on a dimension, little is left over.
    for dim in ("cpu", "memory"):
        unmet = [q for q in queues if deserved[q.name][dim] < q.request[dim] and dim not in q.capability]
        if unmet:
            leftover = total[dim] - sum(d[dim] for d in deserved.values())
            assert leftover <= total[dim] // 50 + len(queues)


_VECTORS = st.dictionaries(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]), st.integers(-3, 6),
                           max_size=4)


@given(_VECTORS, _VECTORS, _VECTORS)
def test_allocatable_is_the_sum_checked_against_deserved(allocated: dict[str, int], request: dict[str, int],
                                                          deserved: dict[str, int]) -> None:
    """``allocatable`` answers what Volcano's check of ``allocated + request`` against deserved does, on the
    request's dimensions (pods ignored), without making the sum."""
    want = exceeding_requested(sum_resources((R(allocated), R(request))), R(deserved), R(request))
    assert allocatable(R(allocated), R(request), R(deserved)) == want
