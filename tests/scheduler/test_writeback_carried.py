"""The write-back's queue allocation, carried from session to session and updated only by the jobs a renewing
session names (not taken over as the previous one left them, or moved in it), equals a fresh sum over every job
of the session after every session of random event sequences (pods, nodes, NodeMetrics and PodGroups added,
changed and deleted, the clock moving), and the Queue status written says the same."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from common.resources import Resources
from scheduler.batch.writeback import QueueAllocation
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.framework.session import Session
from scheduler.writeback import WriteBack
from tests.scheduler.actions.helpers import FULL, priority_class
from tests.scheduler.factories import T0, conf, node, pod, queue
from tests.scheduler.framework.test_incremental_state import _apply, _event, _metric


class _Checked(WriteBack):
    """Checks each session's carried sums against a fresh sum, and counts the sessions that named jobs."""

    partial = 0

    def _allocated(self, ssn: Session, moved: list[str]) -> dict[str, Resources]:
        followed = self._counted is not None and ssn.renewing
        got = super()._allocated(ssn, moved)
        want = QueueAllocation().own(list(ssn.jobs.values()), ssn.queues)
        assert got == want
        self.partial += followed
        return got


def _scheduler(cluster: MemoryCluster, clock: FakeClock) -> tuple[Scheduler, _Checked]:
    sched = Scheduler(cluster, default_conf(), clock=clock)
    assert sched.writeback is not None
    checked = sched.writeback = _Checked(cluster, sched.events)
    sched.start()
    return sched, checked


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=1, max_size=16))
def test_carried_queue_allocation_equals_a_fresh_sum_after_every_session(events: list[tuple[Any, ...]]) -> None:
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0"), _metric("n0", 500, T0 + 50), queue("default")])
    sched, _ = _scheduler(cluster, clock)
    sched.run_once()
    for event in events:
        _apply(event, cluster, clock, sched)
        sched.run_once()


def test_a_steady_cluster_names_only_what_changed() -> None:
    """Sessions after the first follow the sums (the check above runs in each), and the Queue's written
    ``allocated`` follows pods bound, finished and deleted."""
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0", cpu="8"), _metric("n0", 500, T0 + 50), queue("default"),
                  *(pod(f"p{i}", cpu="500m", node_name="n0") for i in range(4))])
    sched, checked = _scheduler(cluster, clock)
    sched.run_once()

    def allocated() -> dict[str, str]:
        got: dict[str, str] = (cluster.get("Queue", "default") or {})["status"]["allocated"]
        return got
    assert allocated()["cpu"] == "2"
    cluster.create("Pod", pod("new", cpu="1"))
    clock.advance(1)
    sched.run_once()   # binds it
    clock.advance(1)
    cluster.patch_status("Pod", "p0", {"status": {"phase": "Succeeded"}}, namespace="default")
    cluster.delete("Pod", "p1", namespace="default")
    sched.run_once()
    assert allocated()["cpu"] == "2"
    assert checked.partial >= 2


# without gang, which never lets a group of one go below its one member
PREEMPT = FULL.replace("enqueue, allocate, preempt, reclaim, backfill", "enqueue, allocate, preempt").replace(
    "  - name: gang\n", "")


def _classed(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj["spec"]["priorityClassName"] = name
    return obj


def test_a_job_taken_over_as_it_was_and_preempted_in_the_session_is_recounted() -> None:
    """Low-priority pods run through a session untouched (their groups of one are kept); the next session
    evicts one of them for a high-priority pod: that job's allocation changed in the session itself."""
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0", cpu="2"), _metric("n0", 500, T0 + 50), queue("default"), priority_class("low", 10),
                  priority_class("high", 1000),
                  *(_classed(pod(f"low{i}", cpu="1", node_name="n0"), "low") for i in range(2))])
    sched = Scheduler(cluster, conf(PREEMPT), clock=clock)
    checked = sched.writeback = _Checked(cluster, sched.events)
    sched.start()
    sched.run_once()
    clock.advance(1)
    cluster.create("Pod", _classed(pod("high", cpu="1"), "high"))
    evicted = sched.run_once().evictions
    assert evicted, "the scenario must preempt"
    assert checked.partial >= 1
