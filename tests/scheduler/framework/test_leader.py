from __future__ import annotations

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.leader import LeaderElector, LeaseConfig


def test_one_leader_handover_on_expiry_and_release() -> None:
    clock = FakeClock(1_700_000_000.0)
    cluster = MemoryCluster(clock=clock)
    a = LeaderElector(cluster, clock, LeaseConfig(identity="a"))
    b = LeaderElector(cluster, clock, LeaseConfig(identity="b"))
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.is_leader() and not b.is_leader()
    # a stops renewing: within the renew deadline it still leads, after it it stops at once
    clock.advance(11)
    assert not a.is_leader()
    # b must wait until the lease (15 s) expires
    assert not b.try_acquire_or_renew()
    clock.advance(5)
    assert b.try_acquire_or_renew()
    lease = cluster.get("Lease", "loadwise-scheduler", namespace="loadwise-system")
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()
    b.release()
    assert a.try_acquire_or_renew()
    assert cluster.get("Lease", "loadwise-scheduler", namespace="loadwise-system")["spec"]["leaseTransitions"] == 2


def test_microtime_has_six_digits_even_when_rounding_up() -> None:
    from scheduler.leader import _micro

    assert _micro(1_700_000_000.9999997) == "2023-11-14T22:13:21.000000Z"
    assert _micro(1_700_000_000.25) == "2023-11-14T22:13:20.250000Z"


def test_renewals_keep_leadership() -> None:
    clock = FakeClock(1_700_000_000.0)
    cluster = MemoryCluster(clock=clock)
    lost: list[bool] = []
    a = LeaderElector(cluster, clock, LeaseConfig(identity="a"), on_stopped_leading=lambda: lost.append(True))
    for _ in range(20):
        assert a.try_acquire_or_renew()
        clock.advance(2)
        assert a.is_leader()
    assert not lost
    clock.advance(20)
    assert not a.is_leader() and lost == [True]
