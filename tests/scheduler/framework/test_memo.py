"""Sessions that reuse what earlier sessions derived (scheduler.framework.memo) must be exactly the sessions a fresh
build gives: after any change to pods, nodes, NodeMetrics, PodGroups, Queues or WaterlinePolicies, the next session
sees it.  The property test drives a small world through random changes — keeping every unchanged object the same
view object, as the scheduler cache does — and compares a memoised, renewing session with a fresh one, field by field,
before and after the actions and in what the write-back sends."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.clock import FakeClock, to_rfc3339
from common.objects import NodeMetricView, NodeView, PodGroupView, PodView, PriorityClassView, QueueView
from common.resources import Resources
from scheduler.binder import EventLimiter
from scheduler.framework.api import JobInfo, NodeInfo, SingleJob, TaskInfo, TaskStatus, is_untouched, untouch
from scheduler.framework.memo import IdentityMemo, SessionMemo
from scheduler.framework.plugin import actions
from scheduler.framework.session import Session
from scheduler.framework.snapshot import WATERLINE_POLICIES_KEY, Snapshot
from scheduler.framework.status import FitErrors
from scheduler.plugins.loadaware import LoadAware
from scheduler.plugins.podtopologyspread import PodIndex
from scheduler.writeback import WriteBack
from tests.scheduler.factories import T0, RecordingSink, conf, node, pod, podgroup, queue

CONF = conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: tainttoleration
  - name: noderesources
  - name: loadaware
    weight: 2
    arguments:
      usageThresholds: {cpu: 65, memory: 95}
      estimatedScalingFactors: {cpu: 85, memory: 70}
      respectWaterlines: true
      waterlineMargin: 5
""")

NODES = ("n0", "n1", "n2", "n3")
GIB = 1024**3


def _metric(name: str, cpu_m: int, updated: float, pods: list[tuple[str, int]]) -> dict[str, Any]:
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name}, "spec": {},
            "status": {"updateTime": to_rfc3339(updated),
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{cpu_m}m", "memory": str(4 * GIB)}}},
                       "podsMetric": [{"namespace": "default", "name": p, "priority": "koord-prod",
                                       "podUsage": {"resources": {"cpu": f"{c}m", "memory": str(GIB)}}}
                                      for p, c in pods]}}


def _policy(value: int) -> dict[str, Any]:
    return {"apiVersion": "qos.loadwise.io/v1alpha1", "kind": "WaterlinePolicy", "metadata": {"name": "hot"},
            "spec": {"nodeSelector": {"matchLabels": {"pool": "batch"}},
                     "objectiveEnsurances": [{"name": "cpu", "metricRule": {"name": "cpu_total_utilization",
                                                                            "value": value},
                                              "action": {"name": "evict", "eviction": {}}}]}}


class World:
    """Raw objects and their parsed views; a view is replaced only when its object changes (like the cache)."""

    def __init__(self) -> None:
        self.now = T0 + 600
        self.nodes: dict[str, NodeView] = {}
        self.pods: dict[str, PodView] = {}
        self.metrics: dict[str, NodeMetricView] = {}
        self.groups: dict[str, PodGroupView] = {}
        self.queues = {"default": QueueView.parse(queue("default"))}
        self.classes = {"high": PriorityClassView.parse({"metadata": {"name": "high"}, "value": 1000})}
        self.policy: dict[str, Any] = _policy(70)
        self.seq = 0
        for i, n in enumerate(NODES):
            self.set_node(n, taint=False, batch=i % 2 == 0)
            self.set_metric(n, 1000 * (i + 1))
        self.set_group("g", 2)

    def set_node(self, name: str, *, taint: bool, batch: bool, cpu: str = "8") -> None:
        taints = [{"key": "hot", "value": "1", "effect": "PreferNoSchedule"}] if taint else []
        self.nodes[name] = NodeView.parse(node(name, cpu=cpu, memory="16Gi", labels={"pool": "batch"} if batch else {},
                                               taints=taints))

    def set_metric(self, name: str, cpu_m: int, age: float = 20.0) -> None:
        on = [(p.name, 300) for p in self.pods.values() if p.node_name == name][:2]
        self.metrics[name] = NodeMetricView.parse(_metric(name, cpu_m, self.now - age, on))

    def set_group(self, name: str, min_member: int) -> None:
        self.groups[name] = PodGroupView.parse(podgroup(name, min_member, priority_class="high"))

    def add_pod(self, cpu: str | None, group: str = "", annotations: dict[str, str] | None = None, *,
                gated: bool = False) -> None:
        self.seq += 1
        name = f"p{self.seq}"
        obj = pod(name, cpu=cpu, memory="512Mi" if cpu else None, group=group, created=T0 + self.seq,
                  annotations=annotations, labels={"app": "a" if self.seq % 2 else "b"},
                  extra_spec={"schedulingGates": [{"name": "wait"}]} if gated else None)
        self.pods[name] = PodView.parse(obj)

    def set_default_class(self, value: int | None) -> None:
        """A globalDefault PriorityClass of ``value`` (None: none): the priority of every group of one changes."""
        self.classes.pop("default", None)
        if value is not None:
            self.classes["default"] = PriorityClassView.parse({"metadata": {"name": "default"}, "value": value,
                                                               "globalDefault": True})

    def bind(self, name: str, node_name: str) -> None:
        old = self.pods[name]
        obj = dict(old.raw)
        obj["spec"] = {**obj["spec"], "nodeName": node_name}
        stamp = to_rfc3339(self.now)
        obj["status"] = {"phase": "Running", "startTime": stamp,
                         "conditions": [{"type": c, "status": "True", "lastTransitionTime": stamp}
                                        for c in ("PodScheduled", "Initialized", "Ready")]}
        self.pods[name] = PodView.parse(obj)

    def annotate(self, name: str, annotations: dict[str, str]) -> None:
        old = self.pods[name]
        obj = dict(old.raw)
        obj["metadata"] = {**obj["metadata"], "annotations": {**obj["metadata"]["annotations"], **annotations}}
        self.pods[name] = PodView.parse(obj)

    def snapshot(self) -> Snapshot:
        snap = Snapshot.build(self.nodes.values(), self.pods.values(), self.groups.values(), self.queues.values(),
                              self.classes.values(), self.metrics.values())
        snap.extra[WATERLINE_POLICIES_KEY] = [self.policy]
        return snap


# add-big: a pod no node fits, pending session after session (its task gets a fit message, its job gang's error);
# add-gated: a pod enqueue admits but allocate leaves alone (its job's phase changes, its task does not)
OPS = st.lists(st.tuples(st.sampled_from(["add", "add-group", "add-best-effort", "add-big", "add-gated", "bind",
                                          "delete", "annotate", "metric", "stale-metric", "taint", "label", "resize",
                                          "group", "policy", "queue", "default-class", "tick"]),
                         st.integers(0, 50), st.integers(0, 7000)), min_size=1, max_size=4)


def _apply(world: World, op: str, i: int, v: int) -> None:
    names = sorted(world.pods)
    node_name = NODES[i % len(NODES)]
    if op == "add":
        world.add_pod(f"{100 + v % 2900}m")
    elif op == "add-group":
        world.add_pod(f"{100 + v % 900}m", group="g")
    elif op == "add-best-effort":
        world.add_pod(None)
    elif op == "add-big":
        world.add_pod("64")
    elif op == "add-gated":
        world.add_pod(f"{100 + v % 900}m", gated=True)
    elif op == "bind" and names:
        pending = [n for n in names if not world.pods[n].node_name]
        if pending:
            world.bind(pending[i % len(pending)], node_name)
    elif op == "delete" and names:
        del world.pods[names[i % len(names)]]
    elif op == "annotate" and names:
        world.annotate(names[i % len(names)], {"volcano.sh/task-priority": str(v % 5),
                                               "volcano.sh/preemptable": "false" if v % 2 else "true"})
    elif op == "metric":
        world.set_metric(node_name, v)
    elif op == "stale-metric":
        world.set_metric(node_name, v, age=400.0)
    elif op == "taint":
        view = world.nodes[node_name]
        world.set_node(node_name, taint=not view.taints, batch=view.labels.get("pool") == "batch",
                       cpu=str(view.allocatable.get("cpu", 0) // 1000))
    elif op == "label":
        view = world.nodes[node_name]
        world.set_node(node_name, taint=bool(view.taints), batch=view.labels.get("pool") != "batch",
                       cpu=str(view.allocatable.get("cpu", 0) // 1000))
    elif op == "resize":   # a node's allocatable changes (the session's allocatable matrix must follow)
        view = world.nodes[node_name]
        world.set_node(node_name, taint=bool(view.taints), batch=view.labels.get("pool") == "batch",
                       cpu=str(2 + v % 12))
    elif op == "group":
        world.set_group("g", 1 + v % 3)
    elif op == "policy":
        world.policy = _policy(40 + v % 50)
    elif op == "queue":
        world.queues = {"default": QueueView.parse(queue("default", weight=1 + v % 3))}
    elif op == "default-class":
        world.set_default_class(None if v % 3 == 0 else v % 100)
    elif op == "tick":
        world.now += 30


def _vec(a: Any) -> Any:
    return a.tolist() if isinstance(a, np.ndarray) else a


def _task(t: TaskInfo) -> tuple[Any, ...]:
    return tuple(_vec(getattr(t, f.name)) if f.name != "pod" else id(t.pod) for f in dataclasses.fields(t))


def _job(j: JobInfo) -> tuple[Any, ...]:
    return (j.uid, j.name, j.namespace, j.queue, j.priority, j.min_available, dict(j.min_task_member),
            dict(j.min_resources), id(j.podgroup), j.phase, j.creation_time, j.preemptable,
            [(u, _task(t)) for u, t in j.tasks.items()], {s: list(b) for s, b in j.index.items() if b},
            dict(j.allocated), {u: fe.message() for u, fe in j.fit_errors.items()}, j.job_fit_error,
            j.unschedulable, j.schedule_start, j.ready_task_num(), j.waiting_task_num(), j.valid_task_num(),
            j.pending_best_effort_num(), j.pending_task_num(), j.is_ready(), j.may_be_unsettled() or j.count(
                TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED, TaskStatus.BINDING) == 0)


def _state(ssn: Session) -> dict[str, Any]:
    arr = ssn.arrays
    out: dict[str, Any] = {
        "jobs": [(k, _job(j)) for k, j in ssn.jobs.items()],
        "tasks": list(ssn.tasks),
        "nodes": [(n.name, n.index, id(n.view), list(n.tasks)) for n in ssn.nodes],
        "arrays": [arr.columns, _vec(arr.allocatable), _vec(arr.idle), _vec(arr.used), _vec(arr.releasing),
                   _vec(arr.pipelined), _vec(arr.nonzero_requested), _vec(arr.task_count), list(arr.changes)],
        "total": dict(ssn.total_resource),
        "queues": [(q.name, q.weight, q.state) for q in ssn.queues.values()],
        "missing": dict(ssn.missing_queue),
    }
    la = ssn.plugins.get("loadaware")
    if isinstance(la, LoadAware) and la.state is not None:
        s = la.state
        out["loadaware"] = [_vec(getattr(s, f)) for f in (
            "allocatable", "has_metric", "expired", "has_status", "thr_plain", "thr_prod", "prod_enabled",
            "agg_used", "waterline_cap", "load_filter", "load_prod", "load_score")]
        out["assigned"] = sorted((e.node, e.key, e.estimate, e.is_prod, e.timestamp, e.deadline)
                                 for n in s.node_names for e in s.cache.pods_on(n))
        out["waterline_sources"] = la.waterline_sources
    if "predicates" in ssn.plugins:
        index = PodIndex.of(ssn)
        out["podindex"] = (_vec(index.pod_count), sorted((u, id(p.pod), p.node, p.terminating)
                                                         for u, p in index._placed.items()),
                           sorted(index.with_affinity), sorted(index.with_host_ports))
    return out


class _Cluster:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    def patch_status(self, kind: str, name: str, patch: Any, namespace: str | None = None) -> dict[str, Any]:
        status = dict(patch["status"])
        for c in status.get("conditions") or []:
            if isinstance(c, dict):
                c.pop("lastTransitionTime", None)
                c.pop("transitionID", None)
        self.calls.append(("patch", kind, namespace, name, repr(status)))
        return {}

    def patch_conditions(self, kind: str, name: str, conditions: Any, *, namespace: str | None = None,
                         status: Any = None) -> dict[str, Any]:
        return self.patch_status(kind, name, {"status": {**(status or {}), "conditions": [dict(c) for c in conditions]}},
                                 namespace)

    def emit_event(self, event: Any) -> None:
        self.calls.append(("event", event.kind, event.namespace, event.name, event.reason, event.message))


def _run(ssn: Session, wb: WriteBack) -> None:
    for name in ssn.conf.actions:
        actions()[name]().execute(ssn)
    ssn.close()
    wb.write(ssn)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=2, max_size=7))
def test_memoised_sessions_equal_fresh_ones(steps: list[list[tuple[str, int, int]]]) -> None:
    world = World()
    for k in range(6):
        world.add_pod(f"{300 + 200 * k}m")
        if k < 4:
            world.bind(f"p{k + 1}", NODES[k % len(NODES)])
    memo = SessionMemo()
    clock = FakeClock(world.now)
    kept_cluster = _Cluster()
    kept_wb = WriteBack(kept_cluster, EventLimiter(kept_cluster, clock.now))   # type: ignore[arg-type]
    fresh_cluster = _Cluster()
    fresh_events = EventLimiter(fresh_cluster, clock.now)   # type: ignore[arg-type]
    for ops in steps:
        for op, i, v in ops:
            _apply(world, op, i, v)
        clock.set(world.now)
        snap = world.snapshot()
        kept_sink, fresh_sink = RecordingSink(), RecordingSink()
        kept = Session(snap, CONF, clock=clock, sink=kept_sink, memo=memo, renew=True, uid="s")
        assert kept.renewing
        fresh = Session(snap, CONF, clock=clock, sink=fresh_sink, uid="s")
        assert _state(kept) == _state(fresh)
        kept_cluster.calls.clear()
        fresh_cluster.calls.clear()
        _run(kept, kept_wb)
        _run(fresh, WriteBack(fresh_cluster, fresh_events))   # type: ignore[arg-type]
        assert kept_sink.binds == fresh_sink.binds
        assert kept_sink.evictions == fresh_sink.evictions
        assert _state(kept) == _state(fresh)
        assert kept_cluster.calls == fresh_cluster.calls
        memo.release(kept)
        # what the sessions bound is bound in the world the next session sees
        for key, node_name in fresh_sink.binds.items():
            world.bind(key.split("/", 1)[1], node_name)


def test_identity_memo_keeps_what_the_last_session_used() -> None:
    memo: IdentityMemo[str] = IdentityMemo()
    a, b = object(), object()
    memo.put(a, "a")
    memo.put(b, "b")
    memo.rotate()
    assert memo.get(a) == "a"         # used in this session: kept for the next
    memo.rotate()
    assert memo.get(a) == "a"
    assert memo.get(b) is None         # not used for a whole session: dropped
    assert memo.get(object()) is None


def test_only_one_session_renews_until_released() -> None:
    memo = SessionMemo()
    first, second = object(), object()
    assert memo.claim(first)
    assert not memo.claim(second)
    memo.release(second)               # not the owner: no effect
    assert not memo.claim(second)
    memo.release(first)
    assert memo.claim(second)


def test_for_objects_recomputes_when_any_object_changes() -> None:
    memo = SessionMemo()
    a, b, c = object(), object(), object()
    calls: list[int] = []
    assert memo.for_objects("k", [a, b], lambda: calls.append(1) or len(calls)) == 1
    assert memo.for_objects("k", [a, b], lambda: calls.append(1) or len(calls)) == 1
    assert memo.for_objects("k", [a, c], lambda: calls.append(1) or len(calls)) == 2
    assert memo.for_objects("k", [a, c, b], lambda: calls.append(1) or len(calls)) == 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.sampled_from("kl"), st.lists(st.integers(0, 3), max_size=4)),
                          st.just("rotate"), st.just("again")), max_size=30))
def test_for_objects_answers_as_a_comparison_per_key_would(steps: list[Any]) -> None:
    """Whatever the keys and sequences (new lists, the same list handed again, sessions rotating), a key's value is
    reused exactly while its sequence holds the very same objects in the same order."""
    pool = [object() for _ in range(4)]
    memo = SessionMemo()
    stored: dict[str, tuple[list[object], int]] = {}
    made = iter(range(1 << 20))
    last: tuple[str, list[object]] | None = None
    for step in steps:
        if step == "rotate":
            memo.rotate()
            continue
        if step == "again":   # the same list object handed again, under the other key
            if last is None:
                continue
            key, objects = "l" if last[0] == "k" else "k", last[1]
        else:
            key, objects = step[0], [pool[i] for i in step[1]]
        before = stored.get(key)
        want = before[1] if before is not None and len(before[0]) == len(objects) and all(
            x is y for x, y in zip(before[0], objects, strict=True)) else None
        got = memo.for_objects(key, objects, lambda: next(made))
        if want is None:
            stored[key] = (list(objects), got)
        else:
            assert got == want
        last = (key, objects)


def test_for_objects_compares_a_session_list_once_for_every_key(monkeypatch: Any) -> None:
    """Several keys handed the same list in one session compare it with what they were made from once."""
    from scheduler.framework import memo as memo_module

    memo = SessionMemo()
    views = [object() for _ in range(5)]
    for key in ("a", "b", "c"):
        memo.for_objects(key, list(views), lambda: 0)
    memo.rotate()
    compared: list[int] = []
    same = memo_module.same_objects

    def counted(a: Any, b: Any) -> bool:
        compared.append(1)
        return same(a, b)

    monkeypatch.setattr(memo_module, "same_objects", counted)
    session_list = list(views)
    assert [memo.for_objects(key, session_list, lambda: 1) for key in ("a", "b", "c")] == [0, 0, 0]
    assert len(compared) == 1


def test_renewed_jobs_and_nodes_equal_fresh_ones() -> None:
    world = World()
    world.add_pod("500m")
    view = next(iter(world.pods.values()))
    snap = world.snapshot()
    fresh = Session(snap, CONF, clock=FakeClock(world.now), sink=RecordingSink())
    job = fresh.jobs[f"default/podgroup-{view.uid}"]
    task = job.tasks[view.uid]
    # a job and node info a session has changed every field of, made anew in place
    old = JobInfo.single("x/y", "y", "x", "q", 7, 1.0, dataclasses.replace(task, status=TaskStatus.RUNNING))
    old.update_task_status(next(iter(old.tasks.values())), TaskStatus.RELEASING)
    old.phase, old.job_fit_error, old.unschedulable, old.schedule_start = "Inqueue", "e", True, 5.0
    old.min_task_member = {"r": 1}
    renewed = JobInfo.single(job.uid, job.name, job.namespace, job.queue, job.priority, job.creation_time, task, old)
    assert renewed is old
    made = JobInfo.single(job.uid, job.name, job.namespace, job.queue, job.priority, job.creation_time, task)
    for f in dataclasses.fields(JobInfo):
        got, want = getattr(renewed, f.name), getattr(made, f.name)
        if f.name == "index":
            got = {s: b for s, b in got.items() if b}
        assert got == want, f.name
    info = NodeInfo(world.nodes["n1"], 3, fresh.arrays)
    info.tasks["t"] = task
    assert info.renew(world.nodes["n0"], 0, fresh.arrays) is info
    assert (info.name, info.index, info.view, info.tasks) == ("n0", 0, world.nodes["n0"], {})


def test_total_allocatable_matches_adding_resources_in_turn() -> None:
    nodes = [NodeView.parse(node(f"n{i}", cpu=c, memory="1Gi")) for i, c in enumerate(("2", "1", "3"))]
    snap = Snapshot.build(nodes, [])
    total = Resources()
    for n in snap.nodes:
        total = total + n.allocatable
    assert snap.total_allocatable() == total
    assert list(snap.total_allocatable()) == list(total)


def test_setting_any_attribute_of_a_task_or_a_group_of_one_is_noted() -> None:
    world = World()
    world.add_pod("500m")
    view = next(iter(world.pods.values()))
    ssn = Session(world.snapshot(), CONF, clock=FakeClock(world.now), sink=RecordingSink())
    job = ssn.jobs[f"default/podgroup-{view.uid}"]
    task = job.tasks[view.uid]
    assert isinstance(job, SingleJob)
    for f in dataclasses.fields(TaskInfo):
        untouch(task)
        assert is_untouched(task)
        setattr(task, f.name, getattr(task, f.name))    # even the same value
        assert not is_untouched(task), f.name
    for f in dataclasses.fields(JobInfo):
        untouch(job)
        setattr(job, f.name, getattr(job, f.name))
        # enqueue stamps schedule_start every session: taking the job over clears it instead
        assert is_untouched(job) is (f.name == "schedule_start"), f.name
    priority = job.priority
    untouch(job)
    job.schedule_start = 5.0
    assert job.take_over(priority) and job.schedule_start is None
    assert not job.take_over(priority + 1)
    job.fit_errors["x"] = FitErrors(1)
    assert not job.take_over(priority)
    job.fit_errors.clear()
    job.add_tasks([])
    assert not job.take_over(priority)
    untouch(job)
    job.add_task(task)
    assert not job.take_over(priority)
    fresh = JobInfo.single(job.uid, job.name, job.namespace, job.queue, priority, job.creation_time, task)
    assert not is_untouched(fresh)   # made: touched until a session build marks it as made


def test_pod_index_seed_follows_node_order_and_repeated_uids() -> None:
    world = World()
    for k in range(6):
        world.add_pod(f"{300 + 200 * k}m")
        world.bind(f"p{k + 1}", NODES[k % len(NODES)])
    memo = SessionMemo()
    clock = FakeClock(world.now)

    def index_state(nodes: list[NodeView]) -> None:
        snap = Snapshot.build(nodes, world.pods.values(), world.groups.values(), world.queues.values(),
                              world.classes.values(), world.metrics.values())
        states = []
        for kept in (True, False):
            ssn = Session(snap, CONF, clock=clock, sink=RecordingSink(), memo=memo if kept else None, renew=kept)
            states.append(_state(ssn)["podindex"])
            memo.release(ssn)
        assert states[0] == states[1]

    every = list(world.nodes.values())
    for nodes in (every, every, every[1:], every):   # without n0, every other node is at another row
        index_state(nodes)
    # a uid on two nodes (not from a real cluster): the index syncs the second over the first, also when the
    # second node's tasks are the ones the session before saw
    first = world.pods.pop("p1")
    twin = dict(first.raw)
    twin["metadata"] = {**twin["metadata"], "name": "twin"}
    twin["spec"] = {**twin["spec"], "nodeName": NODES[3]}
    world.pods["twin"] = PodView.parse(twin)
    index_state(every)
    world.pods["p1"] = first
    index_state(every)
    index_state(every)


def test_pod_index_seeds_a_node_again_once_its_tasks_changed_in_the_session() -> None:
    world = World()
    for k in range(4):
        world.add_pod(f"{300 + 200 * k}m")
        world.bind(f"p{k + 1}", NODES[k % len(NODES)])
    snap = world.snapshot()
    clock = FakeClock(world.now)
    kept = Session(snap, CONF, clock=clock, sink=RecordingSink(), memo=SessionMemo(), renew=True)
    fresh = Session(snap, CONF, clock=clock, sink=RecordingSink())
    for ssn in (kept, fresh):
        # a task changed after the session opened: an index made now must see it (the node's tasks are the same
        # pods as when the session's own index was seeded)
        ssn.mark_releasing(ssn.tasks[world.pods["p1"].uid])
    got = [(PodIndex(ssn).pod_count.tolist(), sorted((u, id(p.pod), p.node, p.terminating)
                                                     for u, p in PodIndex(ssn)._placed.items()))
           for ssn in (kept, fresh)]
    assert got[0] == got[1]
    assert any(terminating for *_, terminating in got[0][1])
