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
from scheduler.framework.api import TaskStatus, is_untouched, with_backfill_work
from scheduler.framework.inplay import needs_look
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
    # changes a session follows object by object, and those that make the carried state anew
    st.tuples(st.just("bind pod"), st.sampled_from(PODS), st.sampled_from(NODES)),
    st.tuples(st.just("label pod"), st.sampled_from(PODS), st.sampled_from(["web", "db"])),
    st.tuples(st.just("other pod"), st.sampled_from(PODS), st.sampled_from(["", *NODES]), st.booleans()),
    st.tuples(st.just("gpu pod"), st.sampled_from(PODS), st.sampled_from(["", *NODES])),
    st.tuples(st.just("gpu node"), st.sampled_from(NODES)),
    st.tuples(st.just("priorityclass"), st.integers(0, 1000), st.booleans()),
    st.tuples(st.just("delete priorityclass")),
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
    elif kind in ("bind pod", "label pod"):
        _patch_pod(cluster, event)
    elif kind in ("other pod", "gpu pod"):
        _replace_pod(cluster, event)
    elif kind == "gpu node":
        obj = node(event[1], labels={"topology.kubernetes.io/zone": "a"})
        obj["status"]["allocatable"]["nvidia.com/gpu"] = "2"
        _put(cluster, "Node", obj)
    elif kind == "priorityclass":
        _put(cluster, "PriorityClass", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                        "metadata": {"name": "pc"}, "value": event[1], "globalDefault": event[2]})
    elif kind == "delete priorityclass":
        _delete(cluster, "PriorityClass", "pc")
    else:
        clock.advance(event[1])


def _patch_pod(cluster: MemoryCluster, event: tuple[Any, ...]) -> None:
    """A pod changed in place: bound to a node (if still pending) or relabelled."""
    try:
        if event[0] == "bind pod":
            cluster.bind("default", event[1], event[2])
        else:
            cluster.patch("Pod", event[1], {"metadata": {"labels": {"app": event[2]}}}, namespace="default")
    except Exception:
        return


def _replace_pod(cluster: MemoryCluster, event: tuple[Any, ...]) -> None:
    """A pod of another scheduler (perhaps finished), or one asking for an extended resource."""
    _, name, on = event[:3]
    _delete(cluster, "Pod", name, "default")
    if event[0] == "other pod":
        obj = pod(name, cpu="200m", node_name=on, scheduler="someone-else",
                  phase="Succeeded" if event[3] else None)
    else:
        obj = pod(name, cpu="100m", node_name=on, limits={"nvidia.com/gpu": "1"})
        obj["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    cluster.create("Pod", obj)


def _digest(ssn: Session) -> dict[str, Any]:
    """Everything a session derives from its snapshot that later decisions read."""
    a = ssn.arrays
    out: dict[str, Any] = {
        "columns": a.columns,
        "arrays": [m.tolist() for m in (a.allocatable, a.idle, a.used, a.releasing, a.pipelined,
                                         a.nonzero_requested, a.task_count)],
        # in order: the order of tasks, jobs and a node's tasks is the order actions meet them in
        "nodes": [(n.name, n.index, id(n.view), list(n.tasks)) for n in ssn.nodes],
        "node_by_name": [(k, n.index) for k, n in ssn.node_by_name.items()],
        "tasks": [(uid, t.job, t.status, t.node_name, dict(t.resreq), t.priority, t.preemptable, t.best_effort,
                   t.vector.tolist(), t.nonzero, t.role, t.nominated_node, t.last_fit_message, id(t.pod))
                  for uid, t in ssn.tasks.items()],
        "jobs": [(uid, j.queue, j.priority, j.phase, j.min_available, dict(j.allocated), list(j.tasks),
                  {s.value: list(b) for s, b in j.index.items() if b}, j.ready_task_num(), j.pending_task_num(),
                  j.valid_task_num(), j.waiting_task_num(), j.pending_best_effort_num(), j.may_be_unsettled(),
                  j.preemptable, j.job_fit_error, j.creation_time, j.name, j.namespace, dict(j.fit_errors),
                  j.unschedulable) for uid, j in ssn.jobs.items()],
        "missing_queue": ssn.missing_queue,
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


def started(*objs: dict[str, Any]) -> tuple[MemoryCluster, FakeClock, Scheduler]:
    """A cluster of node n0 (with a fresh NodeMetric) and ``objs``, and a started scheduler that ran one session."""
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0"), _metric("n0", 500, T0 + 50), *objs])
    sched = Scheduler(cluster, default_conf(), clock=clock)
    sched.start()
    sched.run_once()
    return cluster, clock, sched


def _fresh(sched: Scheduler, clock: FakeClock) -> Session:
    return Session(sched.cache.snapshot(), sched.conf, clock=clock, sink=RecordingSink(), seed=7)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=1, max_size=16))
def test_kept_state_equals_a_rebuild_after_every_event(events: list[tuple[Any, ...]]) -> None:
    cluster, clock, sched = started()
    prev: dict[str, Any] | None = None   # the jobs of the previous claiming session, when it was the one below
    for event in events:
        _apply(event, cluster, clock, sched)
        if event[0] == "session":
            prev = None
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
            assert list(map(id, kept.node_views())) == [id(n.view) for n in kept.nodes], event
            jobs = dict(kept.jobs)
            _check_changed_jobs(kept, prev, event)
            _check_in_play(sched, kept, event)
        finally:
            sched.memo.release(kept)
            kept.release()
        prev = jobs
        want = _digest(_fresh(sched, clock))
        for key in want:
            assert got[key] == want[key], (event, key)


def _check_changed_jobs(ssn: Session, prev: dict[str, Any] | None, event: tuple[Any, ...]) -> None:
    """The jobs a session names as not kept and as gone cover what changed since the previous claiming session
    (``prev``: its jobs, when known): every job that is not that session's object, every job it had that is gone."""
    jobs = ssn.jobs
    assert ssn.changed_jobs <= jobs.keys() and ssn.kept_jobs == jobs.keys() - ssn.changed_jobs, event
    if prev is None:
        return
    assert {uid for uid, job in jobs.items() if prev.get(uid) is not job} <= ssn.changed_jobs, event
    if ssn.gone_jobs is not None:
        assert prev.keys() - jobs.keys() <= ssn.gone_jobs, event


def _check_in_play(sched: Scheduler, ssn: Session, event: Any) -> None:
    """The groups of one the carried state keeps in play are exactly those a walk over them finds needing a look,
    and the session's jobs in play are, in order, every job but the others."""
    carried = sched.memo.value("session.carried")
    if carried is not None:
        assert carried.in_play == {uid: carried.by_job[uid].seq for uid, job in carried.single_jobs.items()
                                   if needs_look(job)}, event
        assert carried.unstamped == {uid for uid, job in carried.single_jobs.items() if job.schedule_start is None}
    _check_in_order(ssn, event)


def _check_in_order(ssn: Session, event: Any) -> None:
    """``jobs_in_play()`` is a part of the session's jobs in their order, holding every PodGroup's job and every
    group of one that needs a look; ``unstamped_jobs()`` holds every job without a ``schedule_start``."""
    unstamped = {job.uid for job in ssn.unstamped_jobs()}
    assert all(uid in unstamped for uid, job in ssn.jobs.items() if job.schedule_start is None), event
    in_play = ssn.jobs_in_play()
    place = {uid: i for i, uid in enumerate(ssn.jobs)}
    order = [place[job.uid] for job in in_play]
    assert order == sorted(set(order)), event
    looked = {job.uid for job in in_play}
    assert all(uid in looked for uid, job in ssn.jobs.items() if job.podgroup is not None or needs_look(job)), event


_MOVES = [TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND,
          TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.SUCCEEDED]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 7), st.sampled_from(_MOVES), st.booleans()), max_size=8),
       st.lists(st.sampled_from(["session", "new", "bind", "delete"]), max_size=6))
def test_jobs_in_play_follow_what_a_session_and_the_events_change(moves: list[tuple[int, TaskStatus, bool]],
                                                                  events: list[str]) -> None:
    """Tasks moved, messages noted, phases set in a renewing session, between sessions that bind new pods and
    events that add, bind and delete pods: the session's jobs in play stay every job that needs a look, in order;
    every job that does not is one every action, the engine's report and the write-back pass over."""
    cluster, clock, sched = _steady(4)
    for n, name in enumerate(events):
        _apply_small(name, n, cluster, clock, sched)
        ssn = sched.open_session(renew=True)
        try:
            _check_in_play(sched, ssn, name)
            tasks = list(ssn.tasks.values())
            for which, status, note in moves:
                task = tasks[which % len(tasks)]
                ssn.set_status(task, status)
                if note:
                    ssn.jobs[task.job].phase = "Pending"
                _check_in_order(ssn, (name, which, status))
            for action in ssn.conf.actions:
                actions()[action]().execute(ssn)
            _check_in_order(ssn, name)
            for job in ssn.jobs.values():
                if not needs_look(job) and job.podgroup is None:
                    assert not job.is_pending() and job.pending_task_num() <= job.pending_best_effort_num()
                    assert not job.may_be_unsettled() and job.schedule_start is not None
                    assert not list(with_backfill_work([job]))
        finally:
            sched.memo.release(ssn)
            ssn.release()


def _apply_small(name: str, n: int, cluster: MemoryCluster, clock: FakeClock, sched: Scheduler) -> None:
    clock.advance(1)
    if name == "session":
        sched.run_once()
    elif name == "new":
        cluster.create("Pod", pod(f"new{n}", cpu="100m"))
    elif name == "bind":
        pending = [p for p in cluster.list("Pod").items if not p["spec"].get("nodeName")]
        if pending:
            cluster.bind("default", pending[0]["metadata"]["name"], "n1")
    else:
        _delete(cluster, "Pod", "p0", "default")


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
    cluster, clock, sched = started(*(pod(p, cpu="100m", node_name="n0") for p in ("p0", "p1", "p2")))
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


def _steady(pods: int = 6) -> tuple[MemoryCluster, FakeClock, Scheduler]:
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0"), node("n1"), _metric("n0", 500, T0 + 50), _metric("n1", 500, T0 + 50),
                  *(pod(f"p{i}", cpu="100m", node_name=f"n{i % 2}") for i in range(pods))])
    sched = Scheduler(cluster, default_conf(), clock=clock)
    sched.start()
    sched.run_once()
    return cluster, clock, sched


def test_a_session_opens_from_the_carried_state_and_remakes_only_what_changed() -> None:
    """New pods, a bound pod, a PodGroup coming: the carried state is brought up to date, not made anew; the
    objects of the pods nothing changed are the very same, and their groups of one are kept."""
    cluster, clock, sched = _steady()
    carried = sched.memo.value("session.carried")
    before = {uid: t for uid, t in carried.tasks.items()}
    cluster.create("Pod", pod("new", cpu="100m"))
    cluster.create("Pod", pod("member", cpu="100m", group="g0"))
    cluster.create("PodGroup", podgroup("g0", 1, phase="Pending"))
    sched.run_once()   # binds both
    kept, got, want = _kept_and_fresh(sched, clock)
    assert got == want
    assert sched.memo.value("session.carried") is carried
    now = carried.tasks
    assert all(now[uid] is t for uid, t in before.items())
    assert kept == {f"default/podgroup-uid-default-p{i}" for i in range(6)}
    assert {"default/g0", "default/podgroup-uid-default-new"} <= {j[0] for j in got["jobs"]}


def test_what_a_session_touched_is_made_anew_from_its_pod() -> None:
    """A session that moves a task (evicts it, changes its status and node) and notes a message on another leaves
    them touched; the next session remakes exactly those, and their groups of one are not kept."""
    _, clock, sched = _steady()
    ssn = sched.open_session(renew=True)
    try:
        victim = ssn.tasks["uid-default-p0"]
        ssn.mark_releasing(victim)
        ssn.unplace(victim)
        ssn.tasks["uid-default-p1"].last_fit_message = "noted"
    finally:
        sched.memo.release(ssn)
        ssn.release()
    kept, got, want = _kept_and_fresh(sched, clock)
    assert got == want
    assert kept == {f"default/podgroup-uid-default-p{i}" for i in range(2, 6)}


def test_a_podgroup_job_is_carried_until_something_changes_it() -> None:
    """A PodGroup's job is the same object, as it was made, while neither its PodGroup, its members nor a session
    changed it; what a session set on it is undone at the next opening."""
    cluster, clock, sched = _steady()
    cluster.create("PodGroup", podgroup("g0", 1, phase="Running"))
    cluster.create("Pod", pod("m0", cpu="100m", group="g0", node_name="n0"))
    first = sched.open_session(renew=True)
    job = first.jobs["default/g0"]
    sched.memo.release(first)
    first.release()
    second = sched.open_session(renew=True)
    assert second.jobs["default/g0"] is job and is_untouched(job)
    job.phase = "Inqueue"
    job.unschedulable = True
    sched.memo.release(second)
    second.release()
    _, got, want = _kept_and_fresh(sched, clock)
    assert got == want
    assert job.phase == "Running" and not job.unschedulable


def test_pods_sharing_a_uid_are_built_pod_by_pod() -> None:
    """Two pods with one uid (not from a real cluster) cannot be followed by uid: the session is built pod by pod,
    as one with nothing carried, and nothing is carried to the next."""
    cluster, clock, sched = _steady()
    twin = pod("twin", cpu="100m", node_name="n1")
    twin["metadata"]["uid"] = "uid-default-p0"
    cluster.create("Pod", twin)
    kept, got, want = _kept_and_fresh(sched, clock)
    assert got == want
    assert sched.memo.value("session.carried") is None


def test_nodes_coming_and_going_move_the_carried_rows() -> None:
    """A node added before the others, one gone and one no longer Ready: the carried state lays its rows out anew
    (pods of a node gone count nowhere, pods naming a node that came count on it) instead of being made anew."""
    cluster, clock, sched = _steady()
    carried = sched.memo.value("session.carried")
    cluster.create("Pod", pod("early", cpu="100m", node_name="a0"))
    cluster.create("Node", node("a0"))
    cluster.delete("Node", "n0")
    kept, got, want = _kept_and_fresh(sched, clock)
    assert got == want and sched.memo.value("session.carried") is carried
    assert [n.name for n in carried.nodes] == ["a0", "n1"]
    unready = node("n1")
    unready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    cluster.replace("Node", unready)
    cluster.create("Node", node("n0"))
    kept, got, want = _kept_and_fresh(sched, clock)
    assert got == want and sched.memo.value("session.carried") is carried
    assert [n.name for n in carried.nodes] == ["a0", "n0"]
