"""The pod index a session opens from the carried totals and the cache's change log equals one seeded from scratch:
random sequences of pods (with pod affinity, host ports, labels, terminating, finished), bindings, nodes,
PodGroups coming, going and changing status, Queues and PriorityClasses, and sessions, replayed against the memory
cluster."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from common.selectors import LabelSelector
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.framework.api import TaskStatus
from scheduler.framework.session import Session
from scheduler.plugins.podindex import _NodeSeed
from scheduler.plugins.podtopologyspread import Matcher, PodIndex
from tests.scheduler.factories import T0, RecordingSink, conf, node, pod, podgroup, queue

NODES = [f"n{i}" for i in range(4)]
PODS = [f"p{j}" for j in range(5)]
MATCHERS: list[Matcher] = [((frozenset({"default"}), LabelSelector.parse({"matchLabels": {"app": app}})),)
                           for app in ("web", "db")]
ANTI = {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 5, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                      "labelSelector": {"matchLabels": {"app": "web"}}}}]}}}

_event = st.one_of(
    st.tuples(st.just("pod"), st.sampled_from(PODS), st.sampled_from(["", *NODES]), st.sampled_from(["web", "db"]),
              st.sampled_from(["plain", "anti", "port", "deleting", "grouped"])),
    st.tuples(st.just("bind"), st.sampled_from(PODS), st.sampled_from(NODES)),
    st.tuples(st.just("label"), st.sampled_from(PODS), st.sampled_from(["web", "db"])),
    st.tuples(st.just("finish"), st.sampled_from(PODS)),
    st.tuples(st.just("delete pod"), st.sampled_from(PODS)),
    st.tuples(st.just("node"), st.sampled_from([*NODES, "n15"])),   # n15: another node among the rows
    st.tuples(st.just("delete node"), st.sampled_from(NODES)),
    st.tuples(st.just("podgroup"), st.sampled_from(["g0"])),
    st.tuples(st.just("podgroup phase"), st.sampled_from(["g0"]), st.sampled_from(["Inqueue", "Running"])),
    st.tuples(st.just("delete podgroup"), st.sampled_from(["g0"])),
    st.tuples(st.just("queue"), st.sampled_from([1, 3])),
    st.tuples(st.just("priorityclass"), st.sampled_from([10, 1000])),
    st.tuples(st.just("session")),
)


_made = iter(range(1 << 30))


def _pod(name: str, on: str, app: str, kind: str) -> dict[str, Any]:
    """A new pod object (a uid of its own: one made again under the same name is another pod)."""
    extra: dict[str, Any] = {}
    if kind == "anti":
        extra = ANTI
    elif kind == "port":
        extra = {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80, "hostPort": 8080}],
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    obj = pod(name, cpu="100m", memory="64Mi", node_name=on, labels={"app": app}, extra_spec=extra,
              group="g0" if kind == "grouped" else "")
    obj["metadata"]["uid"] = f"uid-{name}-{next(_made)}"
    if kind == "deleting":
        obj["metadata"]["deletionTimestamp"] = "2023-11-14T00:00:00Z"
    return obj


def _try(fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except Exception:
        return


def _apply(event: tuple[Any, ...], cluster: MemoryCluster, sched: Scheduler) -> None:
    kind = event[0]
    if kind == "pod":
        _try(cluster.delete, "Pod", event[1], namespace="default")
        cluster.create("Pod", _pod(*event[1:]))
    elif kind == "bind":
        _try(cluster.bind, "default", event[1], event[2])
    elif kind == "label":
        _try(cluster.patch, "Pod", event[1], {"metadata": {"labels": {"app": event[2]}}}, namespace="default")
    elif kind == "finish":
        _try(cluster.patch_status, "Pod", event[1], {"status": {"phase": "Succeeded"}}, namespace="default")
    elif kind == "delete pod":
        _try(cluster.delete, "Pod", event[1], namespace="default")
    elif kind == "node":
        _try(cluster.delete, "Node", event[1])
        cluster.create("Node", node(event[1], cpu="8"))
    elif kind == "delete node":
        _try(cluster.delete, "Node", event[1])
    elif kind == "podgroup":
        _try(cluster.delete, "PodGroup", event[1], namespace="default")
        cluster.create("PodGroup", podgroup(event[1], 1, phase="Pending"))
    elif kind == "podgroup phase":
        _try(cluster.patch_status, "PodGroup", event[1], {"status": {"phase": event[2]}}, namespace="default")
    elif kind == "delete podgroup":
        _try(cluster.delete, "PodGroup", event[1], namespace="default")
    elif kind == "queue":
        _try(cluster.delete, "Queue", "q1")
        cluster.create("Queue", queue("q1", weight=event[1]))
    elif kind == "priorityclass":
        _try(cluster.delete, "PriorityClass", "high")
        cluster.create("PriorityClass", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                         "metadata": {"name": "high"}, "value": event[1]})
    else:
        sched.run_once()


def _state(ssn: Session) -> tuple[Any, ...]:
    index = PodIndex.of(ssn)
    placed = sorted((uid, p.node, p.terminating, id(p.pod)) for uid, p in index._placed.items())
    counts = [index.counts(m, include_terminating=t).tolist() for m in MATCHERS for t in (False, True)]
    return (index.pod_count.tolist(), placed, sorted(index.with_affinity), sorted(index.with_host_ports), counts)


def _kept_state(sched: Scheduler) -> tuple[Any, ...]:
    """The index of a session opened from what the scheduler carried."""
    kept = sched.open_session(renew=True)
    try:
        return _state(kept)
    finally:
        sched.memo.release(kept)
        kept.release()


def _fresh_state(sched: Scheduler, clock: FakeClock) -> tuple[Any, ...]:
    """The index of a session built from scratch on the cache's snapshot."""
    return _state(Session(sched.cache.snapshot(), sched.conf, clock=clock, sink=RecordingSink()))


def _check(cluster: MemoryCluster, clock: FakeClock, sched: Scheduler, event: tuple[Any, ...]) -> None:
    assert _kept_state(sched) == _fresh_state(sched, clock), event


def _started() -> tuple[MemoryCluster, FakeClock, Scheduler]:
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node(n, cpu="8") for n in NODES])
    sched = Scheduler(cluster, default_conf(), clock=clock)
    sched.start()
    sched.run_once()
    return cluster, clock, sched


def test_a_deleted_pod_leaves_the_node_it_was_seeded_on() -> None:
    cluster, clock, sched = _started()
    for event in [("pod", "p1", "n0", "web", "anti"), ("session",), ("delete pod", "p1"),
                  ("pod", "p1", "n1", "web", "port"), ("pod", "p1", "n2", "db", "plain")]:
        _apply(event, cluster, sched)
        _check(cluster, clock, sched, event)


def test_a_pod_joining_a_node_extends_its_kept_seed(monkeypatch: Any) -> None:
    """A pod bound to a node joins its tasks at the end: the node's seed is the kept one and the new pod's record
    (its pods with affinity or host ports kept with it), and leaving later takes those pods out again."""
    cluster, clock, sched = _started()
    for event in [("pod", "p0", "n0", "web", "anti"), ("pod", "p1", "n0", "db", "port"), ("session",)]:
        _apply(event, cluster, sched)
    _check(cluster, clock, sched, ("session",))
    extended: list[int] = []
    original = _NodeSeed.extended

    def counted(seed: _NodeSeed, pods: list[Any]) -> _NodeSeed:
        extended.append(len(pods))
        return original(seed, pods)

    monkeypatch.setattr(_NodeSeed, "extended", counted)
    _apply(("pod", "p2", "n0", "web", "plain"), cluster, sched)
    _check(cluster, clock, sched, ("p2 joins n0",))
    assert extended == [3]
    for event in [("delete pod", "p0"), ("delete pod", "p1"), ("delete pod", "p2")]:
        _apply(event, cluster, sched)
        _check(cluster, clock, sched, event)


def test_a_node_replaced_by_another_moves_the_rows_after_it() -> None:
    """As many nodes as before, other names: the rows by name are made anew, not the previous session's."""
    cluster, clock, sched = _started()
    for events in [[("pod", "p0", "n1", "web", "plain"), ("pod", "p1", "n3", "db", "anti")], [("session",)],
                   [("delete node", "n0"), ("node", "n15")], [("pod", "p2", "n2", "web", "plain")]]:
        for event in events:
            _apply(event, cluster, sched)
        _check(cluster, clock, sched, events[-1])


def test_a_task_changed_before_the_index_opens_is_seen() -> None:
    """A session that changes a task before anything asks for the pod index (no plugin of this conf does at open)
    seeds the index from the tasks as they are, not from what the previous session carried."""
    cluster, clock, sched = _started()
    for event in [("pod", "p0", "n0", "web", "plain"), ("pod", "p1", "n1", "web", "plain"), ("session",)]:
        _apply(event, cluster, sched)
    _kept_state(sched)   # a session that opens the index, whose totals are carried
    quiet = conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: priority\n')

    def released_p0(renew: bool) -> tuple[Any, ...]:
        ssn = Session(sched.cache.snapshot(), quiet, clock=clock, sink=RecordingSink(), memo=sched.memo if renew
                      else None, renew=renew)
        try:
            ssn.set_status(next(t for t in ssn.tasks.values() if t.name == "p0"), TaskStatus.RELEASING)
            return _state(ssn)
        finally:
            if renew:
                sched.memo.release(ssn)
                ssn.release()
    assert released_p0(True) == released_p0(False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=1, max_size=20))
def test_index_from_the_carried_totals_equals_one_seeded_from_scratch(events: list[tuple[Any, ...]]) -> None:
    cluster, clock, sched = _started()
    for event in events:
        _apply(event, cluster, sched)
        _check(cluster, clock, sched, event)


def test_podgroup_queue_and_priorityclass_changes_are_followed_without_a_full_seed(monkeypatch: Any) -> None:
    cluster, clock, sched = _started()
    for event in [("podgroup", "g0"), ("pod", "p0", "n0", "web", "grouped"), ("pod", "p1", "n1", "db", "anti"),
                  ("session",)]:
        _apply(event, cluster, sched)
    _check(cluster, clock, sched, ("session",))

    def refused(*_: Any) -> None:
        raise AssertionError("every node seeded anew")

    monkeypatch.setattr(PodIndex, "_seed_all", refused)
    for event in [("podgroup phase", "g0", "Running"), ("queue", 3), ("priorityclass", 1000),
                  ("delete podgroup", "g0")]:
        _apply(event, cluster, sched)
        got = _kept_state(sched)
        monkeypatch.undo()
        assert got == _fresh_state(sched, clock), event
        monkeypatch.setattr(PodIndex, "_seed_all", refused)
