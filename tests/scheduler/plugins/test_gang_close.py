"""gang's session close looks only at the jobs that can need it in a renewing session (those not taken over as
the previous session left them, and those moved in this one): every job it skips is one its close would set
nothing on, after every session of random event sequences, and in a session that preempts a job taken over as it
was (released tasks can make a ready gang unready)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.framework.api import JobInfo
from scheduler.framework.session import Session
from scheduler.plugins import gang as gang_plugin
from scheduler.plugins.gang import Gang, validate
from tests.scheduler.actions.helpers import FULL, gang, priority_class
from tests.scheduler.factories import T0, conf, node, pod
from tests.scheduler.framework.test_incremental_state import _apply, _event, _metric, started


def _settled(job: JobInfo) -> bool:
    """Whether close sets nothing on ``job`` (the body of Gang.on_session_close, asked without acting)."""
    if not job.tasks:
        return True
    return (validate(job) is None and (job.is_ready() or gang_plugin._releasing_but_scheduled(job))
            and not job.unschedulable)


class _Recorder:
    """Wraps Gang._to_close: checks, before close runs, that every job it leaves out needs nothing."""

    def __init__(self) -> None:
        self.followed = 0
        self.original = Gang._to_close

    def __call__(self, plugin: Gang, ssn: Session) -> Any:
        chosen = list(self.original(plugin, ssn))
        picked = {id(j) for j in chosen}
        skipped = [j for j in ssn.jobs.values() if id(j) not in picked]
        assert all(_settled(j) for j in skipped), [j.uid for j in skipped if not _settled(j)]
        self.followed += len(chosen) < len(ssn.jobs)
        return chosen


def _patched(monkeypatch: Any) -> _Recorder:
    recorder = _Recorder()
    monkeypatch.setattr(Gang, "_to_close", lambda plugin, ssn: recorder(plugin, ssn))
    return recorder


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(_event, min_size=1, max_size=16))
def test_jobs_left_out_of_close_need_nothing_after_every_session(monkeypatch: Any,
                                                                 events: list[tuple[Any, ...]]) -> None:
    _patched(monkeypatch)
    cluster, clock, sched = started()
    for event in events:
        _apply(event, cluster, clock, sched)
        sched.run_once()


PREEMPT = FULL.replace("enqueue, allocate, preempt, reclaim, backfill", "enqueue, allocate, preempt")


def test_a_kept_gang_preempted_in_the_session_is_closed(monkeypatch: Any) -> None:
    """A running gang's PodGroup job is closed every session; a steady cluster's groups of one are left out."""
    recorder = _patched(monkeypatch)
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0", cpu="5"), _metric("n0", 500, T0 + 50), priority_class("low", 10),
                  priority_class("high", 1000),
                  *gang("lo", 4, 1, running=4, running_on="n0", priority_class="low"),
                  *(pod(f"s{i}", cpu="100m", memory="64Mi") for i in range(3))])
    sched = Scheduler(cluster, conf(PREEMPT), clock=clock)
    sched.start()
    sched.run_once()
    clock.advance(1)
    sched.run_once()
    cluster.load(gang("hi", 1, 1, cpu="2", priority_class="high"))
    clock.advance(1)
    assert sched.run_once().evictions
    assert recorder.followed >= 1


# no gang, and nothing that sets anything on a pending group of one
WITHOUT_GANG = """
actions: "backfill"
tiers:
- plugins:
  - name: priority
- plugins:
  - name: predicates
"""


def test_jobs_are_all_closed_after_a_session_gang_did_not_close(monkeypatch: Any) -> None:
    """A pending group of one that a gang-less session left untouched is taken over as it was; when gang is
    configured next, its close must still mark the job unschedulable."""
    _patched(monkeypatch)
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0", cpu="2"), _metric("n0", 500, T0 + 50), pod("big", cpu="3"),
                  pod("r", cpu="1", node_name="n0")])
    sched = Scheduler(cluster, conf(WITHOUT_GANG), clock=clock)
    sched.start()
    sched.run_once()
    clock.advance(1)
    sched.run_once()
    sched._conf = default_conf()   # as a reloaded conf file would
    clock.advance(1)
    assert sched.run_once().pending_messages
