"""The state a scheduler keeps from session to session equals a rebuild from scratch after any sequence of events.

A scheduler keeps derived state across sessions — the memo of task templates, jobs and nodes it renews, the
load-aware entries and rows, the pod index seeds, the quiet marker that lets it skip a session — and updates it
from the informer events it sees.  Random sequences of Pods, Nodes, NodeMetrics and PodGroups added, changed and
deleted, sessions run and the clock moving, are replayed against the memory cluster; after every event the session
the scheduler opens from what it kept must hold exactly what a session built from the same snapshot with nothing
kept holds, and when the scheduler would skip the session, a full one must find nothing to do.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.clock import FakeClock, to_rfc3339
from common.cluster.memory import MemoryCluster
from common.selectors import LabelSelector
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.framework.plugin import actions
from scheduler.framework.session import Session
from scheduler.plugins.drf import Drf
from scheduler.plugins.loadaware import LoadAware
from scheduler.plugins.podtopologyspread import Matcher, PodIndex
from scheduler.plugins.proportion import Proportion
from tests.scheduler.factories import T0, RecordingSink, node, pod, podgroup

NODES = [f"n{i}" for i in range(4)]
PODS = [f"p{j}" for j in range(8)]
GROUPS = ["g0", "g1"]
WEB: Matcher = ((frozenset({"default"}), LabelSelector.parse({"matchLabels": {"app": "web"}})),)

_event = st.one_of(
    st.tuples(st.just("node"), st.sampled_from(NODES), st.integers(1, 8), st.booleans()),
    st.tuples(st.just("delete node"), st.sampled_from(NODES)),
    st.tuples(st.just("metric"), st.sampled_from(NODES), st.integers(0, 8000), st.integers(-400, 30)),
    st.tuples(st.just("delete metric"), st.sampled_from(NODES)),
    st.tuples(st.just("pod"), st.sampled_from(PODS), st.sampled_from(["100m", "500m", "2"]),
              st.sampled_from(["", *NODES]), st.sampled_from(["", *GROUPS]), st.sampled_from(["web", "db"])),
    st.tuples(st.just("finish pod"), st.sampled_from(PODS)),
    st.tuples(st.just("delete pod"), st.sampled_from(PODS)),
    st.tuples(st.just("podgroup"), st.sampled_from(GROUPS), st.integers(1, 3)),
    st.tuples(st.just("delete podgroup"), st.sampled_from(GROUPS)),
    st.tuples(st.just("session")),
    st.tuples(st.just("clock"), st.integers(1, 200)),
)


def _metric(name: str, cpu_milli: int, updated: float) -> dict[str, Any]:
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
            "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60}},
            "status": {"updateTime": to_rfc3339(updated),
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{cpu_milli}m", "memory": "2Gi"}}}}}


def _put(cluster: MemoryCluster, kind: str, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    try:
        cluster.get(kind, meta["name"], namespace=meta.get("namespace"))
    except Exception:
        cluster.create(kind, obj)
        return
    cluster.replace(kind, obj)


def _delete(cluster: MemoryCluster, kind: str, name: str, namespace: str | None = None) -> None:
    try:
        cluster.delete(kind, name, namespace=namespace)
    except Exception:
        return


def _apply(event: tuple[Any, ...], cluster: MemoryCluster, clock: FakeClock, sched: Scheduler) -> None:
    kind = event[0]
    if kind == "node":
        _, name, cpu, zone_a = event
        _put(cluster, "Node", node(name, cpu=str(cpu), labels={"topology.kubernetes.io/zone": "a" if zone_a else "b"}))
    elif kind == "delete node":
        _delete(cluster, "Node", event[1])
    elif kind == "metric":
        _, name, cpu, age = event
        _put(cluster, "NodeMetric", _metric(name, cpu, clock.now() - age))
    elif kind == "delete metric":
        _delete(cluster, "NodeMetric", event[1])
    elif kind == "pod":
        _, name, cpu, on, group, app = event
        _delete(cluster, "Pod", name, "default")   # a pod's spec is immutable: a change is a new pod
        cluster.create("Pod", pod(name, cpu=cpu, memory="256Mi", node_name=on, group=group, labels={"app": app}))
    elif kind == "finish pod":
        try:
            cluster.patch_status("Pod", event[1], {"status": {"phase": "Succeeded"}}, namespace="default")
        except Exception:
            return
    elif kind == "delete pod":
        _delete(cluster, "Pod", event[1], "default")
    elif kind == "podgroup":
        _put(cluster, "PodGroup", podgroup(event[1], event[2], phase="Pending"))
    elif kind == "delete podgroup":
        _delete(cluster, "PodGroup", event[1], "default")
    elif kind == "session":
        sched.run_once()
    else:
        clock.advance(event[1])


def _digest(ssn: Session) -> dict[str, Any]:
    """Everything a session derives from its snapshot that later decisions read."""
    a = ssn.arrays
    out: dict[str, Any] = {
        "columns": a.columns,
        "arrays": [m.tolist() for m in (a.allocatable, a.idle, a.used, a.releasing, a.pipelined,
                                         a.nonzero_requested, a.task_count)],
        "nodes": [(n.name, sorted(n.tasks)) for n in ssn.nodes],
        "tasks": {uid: (t.job, t.status, t.node_name, dict(t.resreq), t.priority, t.preemptable, t.best_effort,
                        t.vector.tolist()) for uid, t in ssn.tasks.items()},
        "jobs": {uid: (j.queue, j.priority, j.phase, j.min_available, dict(j.allocated), sorted(j.tasks),
                       j.ready_task_num(), j.pending_task_num(), j.valid_task_num(), j.may_be_unsettled(),
                       j.preemptable, j.job_fit_error) for uid, j in ssn.jobs.items()},
        "queues": sorted(ssn.queues), "total": dict(ssn.total_resource),
    }
    prop = ssn.plugins.get("proportion")
    if isinstance(prop, Proportion):
        out["proportion"] = {q: (dict(x.allocated), dict(x.request), dict(x.deserved), dict(x.elastic), x.share)
                             for q, x in prop.attrs.items()}
    drf = ssn.plugins.get("drf")
    if isinstance(drf, Drf):
        out["drf"] = (dict(drf.share), {k: dict(v) for k, v in drf.allocated.items()})
    la = ssn.plugins.get("loadaware")
    if isinstance(la, LoadAware) and la.state is not None:
        s = la.state
        out["loadaware"] = ([m.tolist() for m in (s.load_filter, s.load_prod, s.load_score, s.has_status,
                                                  s.has_metric, s.expired, s.allocatable)],
                            {n: sorted(map(repr, s.cache.pods_on(n))) for n in s.node_names})
    index = PodIndex.of(ssn)
    out["podindex"] = (index.pod_count.tolist(), sorted(index._placed),
                       index.counts(WEB, include_terminating=True).tolist(),
                       index.counts(WEB, include_terminating=False).tolist())
    return out


def _fresh(sched: Scheduler, clock: FakeClock) -> Session:
    return Session(sched.cache.snapshot(), sched.conf, clock=clock, sink=RecordingSink(), seed=7)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=1, max_size=16))
def test_kept_state_equals_a_rebuild_after_every_event(events: list[tuple[Any, ...]]) -> None:
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0"), _metric("n0", 500, T0 + 50)])
    sched = Scheduler(cluster, default_conf(), clock=clock)
    sched.start()
    sched.run_once()
    for event in events:
        _apply(event, cluster, clock, sched)
        quiet = sched._quiet
        if quiet is not None and quiet.conf is sched.conf and sched.cache.unchanged_since(quiet.generation):
            # the scheduler would not open a session: a full one must find nothing to do
            sink = RecordingSink()
            idle = Session(sched.cache.snapshot(), sched.conf, clock=clock, sink=sink)
            for name in idle.conf.actions:
                actions()[name]().execute(idle)
            assert not sink.binds and not sink.evictions, event
            assert all(not j.may_be_unsettled() for j in idle.jobs.values()), event
        # and whether or not it would open one, what it kept must be what a session opened now would be built from
        kept = sched.open_session(renew=True)
        try:
            got = _digest(kept)
        finally:
            sched.memo.release(kept)
            kept.release()
        want = _digest(_fresh(sched, clock))
        for key in want:
            assert got[key] == want[key], (event, key)


def _kept_and_fresh(sched: Scheduler, clock: FakeClock) -> tuple[set[str], dict[str, Any], dict[str, Any]]:
    kept = sched.open_session(renew=True)
    try:
        got = (set(kept.kept_jobs), _digest(kept))
    finally:
        sched.memo.release(kept)
        kept.release()
    return got[0], got[1], _digest(_fresh(sched, clock))


def test_queue_usage_and_drf_shares_redo_exactly_the_jobs_not_kept() -> None:
    """A claiming session starts from the previous one's queue usage and drf shares and redoes the jobs it did not
    take over as they were: a pod replaced by one of another size under the same uid, a pod gone, a pod new."""
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0"), _metric("n0", 500, T0 + 50),
                  *(pod(p, cpu="100m", node_name="n0") for p in ("p0", "p1", "p2"))])
    sched = Scheduler(cluster, default_conf(), clock=clock)
    sched.start()
    sched.run_once()
    kept, got, want = _kept_and_fresh(sched, clock)
    assert len(kept) == 3 and got == want
    cluster.delete("Pod", "p0", namespace="default")
    cluster.create("Pod", pod("p0", cpu="2", node_name="n0"))
    cluster.delete("Pod", "p1", namespace="default")
    cluster.create("Pod", pod("p3", cpu="500m", node_name="n0"))
    kept, got, want = _kept_and_fresh(sched, clock)
    assert kept == {"default/podgroup-uid-default-p2"}
    assert got["proportion"] == want["proportion"] and got["drf"] == want["drf"]
    assert got == want
