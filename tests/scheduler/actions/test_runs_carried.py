"""Kept states carried from one session to the next (scheduler.framework.runs: ``SignatureRuns.carried``): random
sequences of pods arriving in a few shapes, pods bound and deleted by others (some with pod anti-affinity terms),
nodes added, removed, relabelled, tainted, cordoned and resized, NodeMetrics reported (some expiring as the clock
moves) and sessions run are replayed against the memory cluster; whenever allocate answers a pod from its
signature's kept state — made in an earlier session or in this one — that state is what evaluating the pod now
gives on every node."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.conf import DEFAULT_CONF_YAML
from scheduler.engine import Scheduler
from scheduler.framework.api import TaskInfo
from scheduler.framework.runs import SignatureRuns
from tests.scheduler.actions.test_identical_runs import checked_pick
from tests.scheduler.factories import LOADAWARE_CONF, T0, conf, node, pod
from tests.scheduler.framework.test_incremental_state import _delete, _metric, _put

NODES = [f"n{i}" for i in range(4)]
OTHERS = [f"o{i}" for i in range(4)]   # pods bound by others
ZONE = "topology.kubernetes.io/zone"
# the arriving pods' shapes: cpu, memory, labels (the web pods are what the placed terms select), node selector
SHAPES: list[tuple[str, str, dict[str, str], dict[str, str]]] = [
    ("100m", "128Mi", {}, {}), ("500m", "512Mi", {"app": "web"}, {}), ("1", "1Gi", {}, {ZONE: "a"})]
TAINTS: list[list[dict[str, str]]] = [[], [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}],
                                      [{"key": "hard", "value": "x", "effect": "NoSchedule"}]]
ANTI_WEB = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "web"}}}]}}

# a node's attributes a change may set (one at a time): its cpu, zone, taints, whether cordoned, pod capacity
NODE_VALUES: dict[str, list[Any]] = {"cpu": ["2", "8"], "zone": ["a", "b"], "taints": [0, 1, 2],
                                     "cordoned": [False, True], "pods": [3, 110]}
# what may happen between two sessions
_changes = st.one_of(
    st.tuples(st.just("node"), st.sampled_from(NODES), st.sampled_from(sorted(NODE_VALUES)), st.integers(0, 2)),
    st.tuples(st.just("delete node"), st.sampled_from(NODES)),
    st.tuples(st.just("metric"), st.sampled_from(NODES), st.integers(0, 6000), st.integers(-30, 400)),
    st.tuples(st.just("bound"), st.sampled_from(OTHERS), st.sampled_from(NODES), st.sampled_from(["100m", "1", "2"]),
              st.integers(0, 2)),
    st.tuples(st.just("delete pod"), st.integers(0, 50)),
    st.tuples(st.just("clock"), st.integers(1, 300)),
)
# a step: some changes, pods of some shapes arriving, then a session
_steps = st.lists(st.tuples(st.lists(_changes, max_size=3),
                            st.lists(st.integers(0, len(SHAPES) - 1), min_size=1, max_size=4)),
                  min_size=2, max_size=8)


def _node(name: str, cpu: str = "8", zone: str = "a", taints: int = 0, cordoned: bool = False,
          pods: int = 110) -> dict[str, Any]:
    doc = node(name, cpu=cpu, pods=pods, labels={ZONE: zone}, taints=TAINTS[taints])
    doc["spec"]["unschedulable"] = cordoned
    return doc


class _Cluster:
    """The memory cluster, its scheduler, the pods created so far (by name) and how many arrived pending."""

    def __init__(self, conf_text: str) -> None:
        self.clock = FakeClock(T0 + 60)
        self.cluster = MemoryCluster(clock=self.clock)
        self.nodes: dict[str, dict[str, Any]] = {name: {"zone": "ab"[i % 2]} for i, name in enumerate(NODES)}
        self.cluster.load([_node(name, **attrs) for name, attrs in self.nodes.items()]
                          + [_metric(name, 500 * i, T0 + 50) for i, name in enumerate(NODES)])
        self.sched = Scheduler(self.cluster, conf(conf_text), clock=self.clock)
        self.sched.start()
        self.pods: list[str] = []
        self.arrived = 0

    def apply(self, event: tuple[Any, ...]) -> None:
        kind, cluster = event[0], self.cluster
        if kind == "session":
            self.sched.run_once()
        elif kind == "arrive":
            cpu, memory, labels, selector = SHAPES[event[1]]
            self._create(pod(f"a{self.arrived}", cpu=cpu, memory=memory, labels=labels, created=self.clock.now(),
                             extra_spec={"nodeSelector": selector} if selector else None))
        elif kind == "node":
            _, name, attr, value = event
            attrs = self.nodes.setdefault(name, {})
            options = NODE_VALUES[attr]
            attrs[attr] = options[value % len(options)]
            _put(cluster, "Node", _node(name, **attrs))
        elif kind == "delete node":
            self.nodes.pop(event[1], None)
            _delete(cluster, "Node", event[1])
        elif kind == "metric":
            _, name, cpu, age = event
            _put(cluster, "NodeMetric", _metric(name, cpu, self.clock.now() - age))
        elif kind == "bound":
            _, name, on, cpu, terms = event
            _delete(cluster, "Pod", name, "default")
            self._create(pod(name, cpu=cpu, memory="256Mi", node_name=on, labels={"app": "db"},
                             extra_spec={"affinity": ANTI_WEB} if terms == 0 else None))
        elif kind == "delete pod":
            if self.pods:
                _delete(cluster, "Pod", self.pods[event[1] % len(self.pods)], "default")
        else:
            self.clock.advance(event[1])

    def _create(self, doc: dict[str, Any]) -> None:
        self.arrived += doc["metadata"]["name"].startswith("a")
        self.cluster.create("Pod", doc)
        self.pods.append(doc["metadata"]["name"])


def _answers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the pods answered from a kept state carried from an earlier session, from now on."""
    carried: list[str] = []
    rebound = SignatureRuns._rebound

    def counted(run: SignatureRuns, key: Any, kept: Any, task: TaskInfo) -> Any:
        got = rebound(run, key, kept, task)
        if got is not None:
            carried.append(task.key)
        return got
    monkeypatch.setattr(SignatureRuns, "_rebound", counted)
    return carried


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_steps, conf_text=st.sampled_from([DEFAULT_CONF_YAML, LOADAWARE_CONF]))
def test_carried_kept_states_are_what_evaluating_each_pod_gives(steps: list[tuple[list[tuple[Any, ...]], list[int]]],
                                                                  conf_text: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SignatureRuns, "pick", checked_pick(SignatureRuns.pick))
        state = _Cluster(conf_text)
        for changes, shapes in steps:
            for event in changes:
                state.apply(event)
            for shape in shapes:
                state.apply(("arrive", shape))
            state.apply(("session",))
            state.apply(("clock", 1))


def test_a_nodemetric_report_reaches_a_carried_kept_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod of a shape seen in the session before, after two nodes' NodeMetrics report them over the load-aware
    threshold: answered from the carried kept state, it goes to the one node left under it (fails when the
    load-aware plugin does not name the nodes whose NodeMetric changed: the kept state still has the two coolest
    nodes feasible, and the best)."""
    state = _Cluster(LOADAWARE_CONF)
    for name, cpu in (("n0", 100), ("n1", 100), ("n2", 2000)):
        state.apply(("metric", name, cpu, 10))
    state.apply(("delete node", "n3"))
    state.apply(("arrive", 0))
    state.apply(("session",))
    carried = _answers(monkeypatch)
    for name in ("n0", "n1"):
        state.apply(("metric", name, 3900, 0))
    state.apply(("clock", 1))
    state.apply(("arrive", 0))
    state.apply(("session",))
    placed = dict(state.cluster.bindings)
    assert carried == ["default/a1"]
    assert placed["default/a1"] == "n2"


@pytest.mark.parametrize("conf_text", [LOADAWARE_CONF, DEFAULT_CONF_YAML])
def test_a_node_relabelled_alone_reaches_a_carried_kept_state(conf_text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A zone-a pod's kept state, carried past the relabelling of a zone-a node nothing else changed on (with the
    default conf too: nodeorder's rows read no node's labels), no longer has that node feasible (fails when the
    runs leave out the nodes whose view the carried state saw change)."""
    monkeypatch.setattr(SignatureRuns, "pick", checked_pick(SignatureRuns.pick))
    state = _Cluster(conf_text)
    state.apply(("metric", "n2", 2000, 10))
    state.apply(("arrive", 2))
    state.apply(("session",))
    carried = _answers(monkeypatch)
    state.apply(("node", "n2", "zone", 1))
    state.apply(("clock", 1))
    state.apply(("arrive", 2))
    state.apply(("session",))
    assert carried == ["default/a1"]
    assert dict(state.cluster.bindings) == {"default/a0": "n0", "default/a1": "n0"}


def test_a_pod_with_terms_bound_by_others_ends_the_kept_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """Web pods arriving while placed pods' anti-affinity keeps them out of zone a, then of zone b as well: the
    second finds no node, its kept state not carried (fails when the inter-pod terms placed since are not seen to
    reach over their zone: the kept state has the other zone-b node feasible)."""
    monkeypatch.setattr(SignatureRuns, "pick", checked_pick(SignatureRuns.pick))
    state = _Cluster(LOADAWARE_CONF)
    state.apply(("bound", "o0", "n0", "100m", 0))
    state.apply(("arrive", 1))
    state.apply(("session",))
    carried = _answers(monkeypatch)
    state.apply(("bound", "o1", "n1", "100m", 0))
    state.apply(("clock", 1))
    state.apply(("arrive", 1))
    state.apply(("session",))
    placed = dict(state.cluster.bindings)
    assert placed["default/a0"] in ("n1", "n3")
    assert "default/a1" not in placed
    assert carried == []


def test_a_node_tainted_preferring_no_schedule_ends_the_kept_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the default conf, a PreferNoSchedule taint on one node, nothing else changed, makes the taint score of
    every node one normalised over the nodes scored: the pod's kept state is not carried (fails when nodeorder
    does not say that a node's view changing may change every node's rows)."""
    monkeypatch.setattr(SignatureRuns, "pick", checked_pick(SignatureRuns.pick))
    state = _Cluster(DEFAULT_CONF_YAML)
    state.apply(("arrive", 0))
    state.apply(("session",))
    carried = _answers(monkeypatch)
    untouched = next(name for name in NODES if name not in dict(state.cluster.bindings).values())
    state.apply(("node", untouched, "taints", 1))
    state.apply(("clock", 1))
    state.apply(("arrive", 0))
    state.apply(("session",))
    assert len(state.cluster.bindings) == 2
    assert carried == []
