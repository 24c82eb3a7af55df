"""A session that would find nothing to do is not opened: nothing changed since one that found nothing to do."""

from __future__ import annotations

import pytest

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from tests.scheduler.factories import T0, node, pod, podgroup


class _Counting(Scheduler):
    opened = 0

    def open_session(self, *a, **kw):  # type: ignore[no-untyped-def]
        self.opened += 1
        return super().open_session(*a, **kw)


def _sched(*objs: dict) -> tuple[_Counting, MemoryCluster, FakeClock]:
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load(objs)
    return _Counting(cluster, default_conf(), clock=clock), cluster, clock


def test_no_session_opens_while_nothing_changed_after_a_session_with_nothing_to_do() -> None:
    sched, cluster, clock = _sched(node("a"), pod("p1", node_name="a", phase="Running"))
    sched.run_once()
    assert sched.opened == 1
    clock.advance(60)
    res = sched.run_once()
    assert sched.opened == 1
    assert res.placements == {} and res.evictions == []
    # the skipped session used up its number (and seed), as an opened one does
    assert sched.sessions == 2


def test_a_new_pod_after_quiet_sessions_is_scheduled() -> None:
    sched, cluster, clock = _sched(node("a"))
    sched.run_once()
    sched.run_once()
    assert sched.opened == 1
    cluster.load([pod("p1")])
    res = sched.run_once()
    assert sched.opened == 2
    assert res.placements == {"default/p1": "a"}


def test_a_session_leaving_a_pod_pending_is_followed_by_another() -> None:
    sched, cluster, clock = _sched(node("a", cpu="1"), pod("big", cpu="2"))
    sched.run_once()
    res = sched.run_once()
    assert sched.opened == 2
    assert res.placements == {"default/big": None}


def test_a_pending_podgroup_keeps_sessions_opening() -> None:
    sched, cluster, clock = _sched(node("a"), podgroup("g", min_member=2))
    sched.run_once()
    sched.run_once()
    sched.run_once()
    assert sched.opened >= 3


def test_an_assumed_binding_that_can_expire_keeps_sessions_opening() -> None:
    sched, cluster, clock = _sched(node("a"), pod("p1", node_name="a", phase="Running"))
    sched.run_once()
    sched.cache.assume_ttl = 30.0
    # a bind the watch has not confirmed yet: it expires with time alone, so the next snapshot may differ
    cluster.load([pod("p2")])
    sched.cache.assume("default/p2", "a")
    sched.run_once()
    opened = sched.opened
    sched.run_once()
    assert sched.opened == opened + 1


@pytest.mark.parametrize("change", ["node", "node deleted", "conf"])
def test_any_change_opens_a_session(change: str) -> None:
    sched, cluster, clock = _sched(node("a"), pod("p1", node_name="a", phase="Running"))
    sched.run_once()
    if change == "node":
        cluster.load([node("b")])
    elif change == "conf":
        sched._conf = default_conf()
    else:
        cluster.delete("Node", "a")
    sched.run_once()
    assert sched.opened == 2
