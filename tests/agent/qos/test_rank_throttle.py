"""Waterline order and quota steps (docs/design/waterline.md §5, §6.4, §6.5): floors, caps, and the B2, B4, B5
rows of docs/design/differences.md §3."""

from __future__ import annotations

from fractions import Fraction

from agent.qos.rank import cpu_sort_key, memory_sort_key, rank
from agent.qos.throttle import MIN_QUOTA_US, step_down, step_up
from tests.agent.qos.factories import T0, container, pod


def _names(pods: list) -> list[str]:  # type: ignore[type-arg]
    return [p.name for p in pods]


def test_comparator_chain_order() -> None:
    pods = [
        pod("guaranteed-low", qos="Guaranteed", priority=0, cpu=100),
        pod("be-prio-10", qos="BestEffort", priority=10, cpu=5000),
        pod("burstable-low", qos="Burstable", priority=0, cpu=100),
        pod("be-low-hungry", qos="BestEffort", priority=0, cpu=900),
        pod("be-low-idle", qos="BestEffort", priority=0, cpu=100),
        pod("unknown-qos", qos="", priority=0, cpu=1),
        pod("elastic-high-prio", qos="Guaranteed", priority=9000, cpu=10, limits={"gocrane.io/cpu": 2}),
    ]
    # elastic users first; then priority BEFORE QoS class; then higher usage
    assert _names(rank(pods, "cpu_total_usage")) == [
        "elastic-high-prio", "unknown-qos", "be-low-hungry", "be-low-idle", "burstable-low", "guaranteed-low",
        "be-prio-10",
    ]


def test_running_time_and_stable_ties() -> None:
    pods = [
        pod("old", start=T0 - 7200), pod("new", start=T0 - 60), pod("nostart", start=None),
        pod("twin-a", start=T0 - 600), pod("twin-b", start=T0 - 600),
    ]
    assert _names(rank(pods, "cpu_total_usage")) == ["nostart", "new", "twin-a", "twin-b", "old"]
    assert _names(rank(list(reversed(pods)), "cpu_total_usage")) == ["nostart", "new", "twin-b", "twin-a", "old"]


def test_elastic_ratio_lower_first() -> None:
    a = pod("a", cpu=1000, limits={"gocrane.io/cpu": 4})  # 1000/4
    b = pod("b", cpu=1000, limits={"gocrane.io/cpu": 2})  # 1000/2
    assert cpu_sort_key(a) < cpu_sort_key(b)


def test_memory_sorter_uses_memory() -> None:
    pods = [pod("small", memory=1 << 20, cpu=9000), pod("big", memory=1 << 30, cpu=1)]
    assert _names(rank(pods, "memory_total_usage")) == ["big", "small"]
    assert _names(rank(pods, "cpu_total_usage")) == ["small", "big"]
    assert memory_sort_key(pods[0]) > memory_sort_key(pods[1])


def test_general_sorter_ignores_usage() -> None:
    pods = [pod("hungry", cpu=9000, start=T0 - 9000), pod("idle", cpu=1, start=T0 - 10)]
    assert _names(rank(pods, "cpu_load_1_min")) == ["idle", "hungry"]


def _down(c, step: int = 10, minr: int = 0):  # type: ignore[no-untyped-def]
    return step_down(pod("p", containers=(c,)), c, step_ratio=step, min_ratio=minr)


def test_throttle_unlimited_steps_from_usage() -> None:
    s = _down(container(usage=2000, quota=-1))
    assert s is not None and (s.quota_us, s.period_us, s.released_milli) == (180_000, 100_000, 200)


def test_throttle_limited_steps_from_quota_and_loose_quota_releases_nothing() -> None:
    s = _down(container(usage=1000, quota=400_000))  # 4 cores quota, 1 core used
    assert s is not None and s.quota_us == 360_000 and s.released_milli == 0


def test_throttle_floor_request() -> None:
    s = _down(container(usage=1000, quota=-1, request=950))
    assert s is not None and s.quota_us == 95_000 and s.released_milli == 50


def test_throttle_floor_min_cpu_ratio() -> None:
    # B2: limit 4096m at ratio 10 floors at 409.6m, not 40960m
    c = container(usage=500, quota=42_000, limit=4096)
    s = _down(c, step=50, minr=10)
    assert s is not None and s.quota_us == 40_960 and s.released_milli == Fraction(500) - Fraction(40_960, 100)
    assert _down(container(usage=500, quota=40_960, limit=4096), step=50, minr=10) is None  # already at the floor


def test_throttle_kernel_minimum() -> None:
    s = _down(container(usage=5, quota=1_100), step=50)
    assert s is not None and s.quota_us == MIN_QUOTA_US


def test_throttle_skips_containers_without_sample_and_step_zero_is_noop() -> None:
    assert _down(container(usage=0, quota=-1)) is None
    assert _down(container(usage=800, quota=100_000), step=0) is None


def test_throttle_multi_container_release_sum() -> None:
    # B5: the pod's release is the sum over its containers (planner sums the steps)
    c1, c2 = container("a", usage=1000), container("b", usage=3000)
    p = pod("p", containers=(c1, c2))
    total = sum((s.released_milli for c in (c1, c2) if (s := step_down(p, c, step_ratio=10, min_ratio=0))), Fraction(0))
    assert total == 400


def _up(c, step: int = 10, original: int | None = None, cap: int = 0):  # type: ignore[no-untyped-def]
    return step_up(pod("p", containers=(c,)), c, step_ratio=step, original_quota_us=original, node_capacity_milli=cap)


def test_throttle_restore_caps() -> None:
    # capped at the limit
    s = _up(container(usage=100, quota=190_000, limit=2000))
    assert s is not None and s.quota_us == 200_000 and s.released_milli == 1900
    assert _up(container(usage=100, quota=200_000, limit=2000)) is None
    # elastic resource: jump straight to it
    s = _up(container(usage=100, quota=50_000, **{"gocrane.io/cpu": 3}))
    assert s is not None and s.quota_us == 300_000
    # B4: more than 60 cores without a limit -> unlimited (compared in cores)
    s = _up(container(usage=100, quota=5_500_000))
    assert s is not None and s.quota_us == -1
    s = _up(container(usage=100, quota=5_000_000))
    assert s is not None and s.quota_us == 5_500_000
    # unlimited containers are never "restored"
    assert _up(container(usage=100, quota=-1)) is None


def test_restore_remembered_original() -> None:
    s = _up(container(usage=100, quota=95_000), original=100_000)
    assert s is not None and s.quota_us == 100_000
    s = _up(container(usage=100, quota=750_000), original=-1, cap=8000)
    assert s is not None and s.quota_us == -1  # the step covers the whole node: lift the quota again
    s = _up(container(usage=100, quota=500_000), original=-1, cap=8000)
    assert s is not None and s.quota_us == 550_000
