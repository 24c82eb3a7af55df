"""Runs of alike pods (scheduler.framework.runs): allocate evaluating each pod from its signature's kept state places
every pod where evaluating every pod on every node does — the same nodes, in the same order, with the same random
tie-breaks and the same failure messages — on random clusters and random interleavings of pods of several
signatures (some differing only in labels, tolerations, node selector or priority; some failing, some pipelined
behind releasing pods, some in gangs that are discarded), some of which the plugins do not declare (spread,
affinity, host ports, normalised scores) or the session does not allow (explain)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.clock import FakeClock, to_rfc3339
from common.objects import PodView
from scheduler.actions.allocate import Allocate
from scheduler.conf import DEFAULT_CONF_YAML
from scheduler.framework import runs
from scheduler.framework.api import NodeInfo, TaskInfo
from scheduler.framework.evaluate import _top, evaluate_nodes, score_nodes
from scheduler.framework.plugin import actions
from scheduler.framework.runs import SignatureRuns, _base, signature
from scheduler.framework.session import Session
from scheduler.framework.snapshot import Snapshot
from tests.scheduler.factories import LOADAWARE_CONF, T0, RecordingSink, conf, node, pod, podgroup

ZONE = "topology.kubernetes.io/zone"
APP = {"app": "web"}
# keeps the web pods out of its zone (its own label is not web): placing it changes more than its node
ZONE_ANTI: dict[str, Any] = {"labels": {"app": "guard"}, "extra_spec": {"affinity": {"podAntiAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ZONE, "labelSelector": {"matchLabels": APP}}]}}}}
# what a run's pods add to the plain pod: nothing, the node selector, tolerations, labels, and what some plugins
# do not declare row by row (host ports, spread, preferred node affinity, pod anti-affinity)
EXTRAS: list[dict[str, Any]] = [
    {},
    {"extra_spec": {"nodeSelector": {"disk": "ssd"}}},
    {"extra_spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}},
    {"labels": {"tier": "batch"}},
    {"extra_spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80, "hostPort": 8080}],
                                    "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}},
    {"labels": APP, "extra_spec": {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {
            "matchLabels": APP}}]}},
    {"extra_spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}}},
    {"labels": APP, "extra_spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": APP}}]}}}},
    ZONE_ANTI,
]
# the last two fail on some nodes or on all
SIZES = [("100m", "128Mi"), ("500m", "512Mi"), ("1", "1Gi"), ("2", "3Gi"), ("3", "6Gi"), ("16", "1Gi")]
# what pods of one kind may differ in from another's besides EXTRAS: labels (which only some plugins read), the
# priority (a prod one for the load-aware thresholds), tolerations
LABELS: list[dict[str, str]] = [{}, APP, {"app": "db"}, {"koordinator.sh/priority-class": "koord-batch"}]
PRIORITIES: list[int | None] = [None, 9500, 100]
Kind = tuple[str, str, str, dict[str, Any]]   # cpu, memory, gang, what else the pod factory takes


def _nodemetric(name: str, cpu_milli: int, mem_mib: int) -> dict[str, Any]:
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
            "spec": {}, "status": {"updateTime": to_rfc3339(T0 + 50), "nodeMetric": {
                "nodeUsage": {"resources": {"cpu": f"{cpu_milli}m", "memory": f"{mem_mib}Mi"}}}}}


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Nodes (some alike, some tainted, cordoned or without a NodeMetric), running pods (some releasing), and pending
    pods of a few kinds in random order."""
    objects: list[dict[str, Any]] = []
    names = [f"n{i}" for i in range(draw(st.integers(1, 8)))]
    for i, name in enumerate(names):
        cpu = draw(st.sampled_from(["2", "4"]))
        taints = draw(st.sampled_from([[], [], [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
                                       [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]]))
        doc = node(name, cpu=cpu, memory="8Gi", pods=draw(st.integers(2, 8)), taints=taints,
                   labels={ZONE: f"z{i % 2}", "disk": draw(st.sampled_from(["ssd", "hdd"]))})
        doc["spec"]["unschedulable"] = draw(st.integers(0, 9)) == 0
        objects.append(doc)
        if draw(st.booleans()):
            objects.append(_nodemetric(name, draw(st.integers(0, 3000)), draw(st.integers(0, 6000))))
        for k in range(draw(st.integers(0, 2))):
            running = pod(f"run-{name}-{k}", cpu="500m", memory="512Mi", node_name=name,
                          labels=draw(st.sampled_from([{}, APP])))
            if draw(st.integers(0, 5)) == 0:   # placed terms: the labels of every pod are read
                running["spec"]["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": {"topologyKey": ZONE, "labelSelector": {
                        "matchLabels": {"app": "none"}}}}]}}
            if draw(st.integers(0, 3)) == 0:   # releasing: pods that fit only once it is gone are pipelined
                running["metadata"]["deletionTimestamp"] = to_rfc3339(T0)
            objects.append(running)
    kinds: list[Kind] = []
    for r in range(draw(st.integers(1, 5))):
        kinds.append(_variant(draw, kinds[-1], r) if len(kinds) > 0 and draw(st.booleans()) else _kind(draw, r))
    order = draw(st.lists(st.integers(0, len(kinds) - 1), min_size=6, max_size=30))
    groups: dict[str, int] = {}
    for j, k in enumerate(order):
        cpu, memory, group, extra = kinds[k]
        if group:
            groups[group] = groups.get(group, 0) + 1
        objects.append(pod(f"p{j:03d}", cpu=cpu, memory=memory, group=group, created=T0 + j, **extra))
    for group, count in groups.items():
        objects.append(podgroup(group, draw(st.integers(1, count + 1))))   # count + 1: never ready, discarded
    return objects


def _kind(draw: st.DrawFn, r: int) -> Kind:
    """A kind of pending pod: its size, gang, and what else its spec and labels hold."""
    cpu, memory = draw(st.sampled_from(SIZES))
    # mostly what every plugin declares (the first four), so that kept states live long
    extra = dict(draw(st.sampled_from(EXTRAS[:4] if draw(st.integers(0, 3)) else EXTRAS)))
    labels = draw(st.sampled_from(LABELS))
    if labels:
        extra["labels"] = {**extra.get("labels", {}), **labels}
    priority = draw(st.sampled_from(PRIORITIES))
    if priority is not None:
        extra["priority"] = priority
    return cpu, memory, f"g{r}" if draw(st.integers(0, 4)) == 0 else "", extra


def _variant(draw: st.DrawFn, kind: Kind, r: int) -> Kind:
    """``kind`` with one thing changed that some plugin reads: its labels, priority, tolerations or node selector
    (pods that may or may not share a signature)."""
    cpu, memory, group, extra = kind
    extra = {**extra, "extra_spec": dict(extra.get("extra_spec", {}))}
    what = draw(st.sampled_from(["labels", "priority", "tolerations", "nodeSelector"]))
    if what == "labels":
        extra["labels"] = draw(st.sampled_from(LABELS))
    elif what == "priority":
        extra["priority"] = draw(st.sampled_from(PRIORITIES))
    elif what == "tolerations":
        extra["extra_spec"]["tolerations"] = draw(st.sampled_from([[], [{"key": "soft", "operator": "Exists"}]]))
    else:
        extra["extra_spec"]["nodeSelector"] = draw(st.sampled_from([{}, {"disk": "hdd"}]))
    return cpu, memory, group and f"g{r}", extra


def _run(objects: list[dict[str, Any]], conf_text: str, *, identical_runs: bool, explain: bool = False
         ) -> tuple[list[tuple[str, str]], dict[str, tuple[str, str, str]], Session]:
    """The binds in order, and every task's status, node and message after the session's actions."""
    sink = RecordingSink()
    ssn = Session(Snapshot.from_objects(objects), conf(conf_text), clock=FakeClock(T0 + 60), sink=sink, seed=7,
                  explain=explain)
    for name in ssn.conf.actions:
        action = Allocate(identical_runs=identical_runs) if name == "allocate" else actions()[name]()
        action.execute(ssn)
    tasks = {t.key: (t.status.name, t.node_name, t.last_fit_message) for job in ssn.jobs.values()
             for t in job.tasks.values()}
    ssn.close()
    return list(sink.binds.items()), tasks, ssn


@settings(max_examples=150, deadline=None)
@given(objects=clusters(), conf_text=st.sampled_from([DEFAULT_CONF_YAML, LOADAWARE_CONF]))
def test_runs_place_as_every_pod_evaluated_alone(objects: list[dict[str, Any]], conf_text: str) -> None:
    alone_binds, alone_tasks, _ = _run(objects, conf_text, identical_runs=False)
    binds, tasks, _ = _run(objects, conf_text, identical_runs=True)
    assert binds == alone_binds
    assert tasks == alone_tasks
    # explain evaluates every pod alone (its records name every node): the same placements
    explained_binds, explained_tasks, ssn = _run(objects, conf_text, identical_runs=True, explain=True)
    assert explained_binds == binds
    assert explained_tasks == tasks


def _count_answers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the pods the runs answer from now on, in order (SignatureRuns.pick wrapped)."""
    answered: list[str] = []
    pick = SignatureRuns.pick

    def counted(run: SignatureRuns, task: TaskInfo) -> tuple[NodeInfo, bool, bool] | None:
        got = pick(run, task)
        if got is not None:
            answered.append(task.key)
        return got
    monkeypatch.setattr(SignatureRuns, "pick", counted)
    return answered


def test_a_run_of_replicas_spreads_over_alike_nodes_as_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve replicas (created at different times) on six alike nodes: every placement comes from the runs, with
    ties broken at random as select_best breaks them."""
    objects: list[dict[str, Any]] = [node(f"n{i}", labels={ZONE: "z0"}) for i in range(6)]
    objects += [pod(f"p{j:02d}", cpu="100m", memory="128Mi", created=T0 + j) for j in range(12)]
    alone_binds, _, _ = _run(objects, DEFAULT_CONF_YAML, identical_runs=False)
    answered = _count_answers(monkeypatch)
    binds, _, _ = _run(objects, DEFAULT_CONF_YAML, identical_runs=True)
    assert len(binds) == 12
    assert binds == alone_binds
    assert len(answered) == 12   # the first pod too: its signature is seeded on it
    assert len({n for _, n in binds}) == 6


@settings(max_examples=120, deadline=None)
@given(objects=clusters(), conf_text=st.sampled_from([DEFAULT_CONF_YAML, LOADAWARE_CONF]), vectors=st.booleans())
def test_a_runs_view_equals_every_node_evaluated_afresh(objects: list[dict[str, Any]], conf_text: str,
                                                        vectors: bool) -> None:
    """Whenever the runs answer, what they keep of every node for the pod's signature — feasible, fits idle and
    future idle, both feasible and fitting idle, their counts, the total score of every feasible node with the
    parts made anew per pod — is what evaluating the pod now gives.  With ``vectors``, every catch-up of more
    than one node takes the vector forms (these small clusters seldom change more nodes between two pods of a
    signature than the crossover to them)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SignatureRuns, "pick", checked_pick(SignatureRuns.pick))
        if vectors:
            patch.setattr(runs, "ROW_BY_ROW", 1)
        _run(objects, conf_text, identical_runs=True)


Pick = Callable[[SignatureRuns, TaskInfo], tuple[NodeInfo, bool, bool] | None]


def checked_pick(pick: Pick) -> Pick:
    """``pick`` asserting, whenever the runs answer from a kept state (a node, or that none is feasible), that the
    state is what evaluating the pod now gives."""

    def checking(run: SignatureRuns, task: TaskInfo) -> tuple[NodeInfo, bool, bool] | None:
        got = pick(run, task)
        keys = run._declaring_keys()
        kept = run._kept.get(signature(task, keys)) if keys is not None else None
        if kept is not None:
            assert_kept_as_evaluated(run.ssn, task, kept)
        return got
    return checking


def assert_kept_as_evaluated(ssn: Session, task: TaskInfo, kept: Any) -> None:
    """The kept state is what evaluating ``task`` now gives on every node."""
    ev = evaluate_nodes(ssn, task, mode="allocate")
    total = score_nodes(ssn, task, np.ones(len(ssn.nodes), dtype=np.bool_))
    for rest in kept.rests:
        total -= rest(task)
    now = ev.feasible & ev.fits_idle
    assert kept.feasible.tolist() == ev.feasible.tolist()
    assert kept.fits_idle.tolist() == ev.fits_idle.tolist()
    assert kept.fits_future.tolist() == ev.fits_future.tolist()
    assert kept.now.tolist() == now.tolist()
    assert (kept.feasible_count, kept.now_count) == (int(ev.feasible.sum()), int(now.sum()))
    assert kept.total[ev.feasible].tolist() == total[ev.feasible].tolist()
    best = kept.best
    mask, count = (kept.now, kept.now_count) if best is not None and best.of_now else (kept.feasible,
                                                                                    kept.feasible_count)
    if best is not None and count:   # the candidates read off the heap are those of a pass over every node
        assert best.nodes(kept) == _top(kept.total, mask, count).tolist()

DEDICATED = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
ANTI_WEB = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]}}


def _two_big_two_small(**big: Any) -> list[dict[str, Any]]:
    return [node("n0", cpu="8", **big), node("n1", cpu="8", **big), node("n2", cpu="2"), node("n3", cpu="2")]


# pairs of pod kinds that differ only in what one plugin reads, on clusters where the first kind goes to a big node
# and the second may not (or, scored, should not): (conf, nodes and running pods, first kind, second kind)
ALIKE_BUT: dict[str, tuple[str, list[dict[str, Any]], dict[str, Any], dict[str, Any]]] = {
    "node selector": (DEFAULT_CONF_YAML, [
        node("n0", cpu="8", labels={"disk": "ssd"}), node("n1", cpu="8", labels={"disk": "ssd"}),
        node("n2", cpu="2", labels={"disk": "hdd"}), node("n3", cpu="2", labels={"disk": "hdd"})],
        {}, {"extra_spec": {"nodeSelector": {"disk": "hdd"}}}),
    "tolerations": (DEFAULT_CONF_YAML, _two_big_two_small(taints=[DEDICATED]),
                    {"extra_spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}, {}),
    # labels a placed pod's anti-affinity selects (the inter-pod affinity filter reads them)
    "labels an anti-affinity term selects": (LOADAWARE_CONF, [
        *_two_big_two_small(), pod("guard-0", cpu="10m", node_name="n0", extra_spec={"affinity": ANTI_WEB}),
        pod("guard-1", cpu="10m", node_name="n1", extra_spec={"affinity": ANTI_WEB})],
        {"labels": {"app": "db"}}, {"labels": {"app": "web"}}),
    # labels the default spreading selects by: the web pods on the big nodes push the next one off them
    "labels the default spreading reads": (DEFAULT_CONF_YAML, [
        *_two_big_two_small(), *(pod(f"web-{i}", cpu="10m", memory="16Mi", node_name=f"n{i % 2}",
                                     labels={"app": "web"}) for i in range(6))],
        {}, {"labels": {"app": "web"}}),
}


@pytest.mark.parametrize("case", list(ALIKE_BUT))
def test_pods_differing_in_what_a_plugin_reads_do_not_share_a_kept_state(case: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods of two kinds taking turns, every one answered by the runs, are placed as when evaluated alone: the
    second kind on the small nodes, though the first kind's kept state (which has some on big nodes) would take it
    to a big one.  (Each case
    fails when the signature leaves out what it varies: the spec, the predicates' or nodeorder's key.)"""
    conf_text, objects, first, second = ALIKE_BUT[case]
    pods = [pod(f"p{j:02d}", cpu="100m", memory="128Mi", created=T0 + j, **(first if j % 2 == 0 else second))
            for j in range(6)]
    alone_binds, _, _ = _run(objects + pods, conf_text, identical_runs=False)
    answered = _count_answers(monkeypatch)
    binds, _, _ = _run(objects + pods, conf_text, identical_runs=True)
    assert len(answered) == len(binds) == 6
    assert binds == alone_binds
    assert {n for name, n in binds if int(name[-2:]) % 2 == 0} & {"n0", "n1"}
    assert {n for name, n in binds if int(name[-2:]) % 2} <= {"n2", "n3"}


def test_a_label_only_the_load_aware_plugin_reads_parts_signatures() -> None:
    """The priority class a label sets is read by the load-aware filter and score alone: pods differing in it have
    different signatures, pods differing in a label no plugin reads (nor the default spreading, absent here)
    the same."""
    objects = [node("n0"), *(pod(f"p{j}", labels=labels) for j, labels in enumerate(
        [{}, {"tier": "a"}, {"koordinator.sh/priority-class": "koord-batch"}]))]
    ssn = Session(Snapshot.from_objects(objects), conf(LOADAWARE_CONF), clock=FakeClock(T0 + 60), sink=RecordingSink())
    run = SignatureRuns(ssn)
    keys = run._declaring_keys()
    assert keys is not None
    tasks = {t.name: t for job in ssn.jobs.values() for t in job.tasks.values()}
    plain, other_label, batch = (signature(tasks[f"p{j}"], keys) for j in range(3))
    assert plain == other_label
    assert plain != batch
    ssn.close()


def test_a_pod_placed_alone_with_terms_ends_the_kept_states() -> None:
    """Web pods after a tiny pod whose anti-affinity keeps web pods out of its zone, on two alike big nodes of
    their own zones and a small one (a placed pod's terms from the start: every signature reads the labels
    throughout): once that pod is placed on the big node the first web pod left, no web pod goes there, as
    evaluated alone (fails when its placement does not end the web pods' kept state, which would take them to
    the freer big node)."""
    nodes = [node("n0", cpu="8", labels={ZONE: "z0"}), node("n1", cpu="8", labels={ZONE: "z1"}),
             node("n2", cpu="2", labels={ZONE: "z2"})]
    terms = pod("terms", cpu="10m", node_name="n2", extra_spec={"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
            "topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "none"}}}}]}}})
    pods = [pod(f"p{j:02d}", cpu="10m" if j == 1 else "100m", memory="128Mi", created=T0 + j,
                **(ZONE_ANTI if j == 1 else {"labels": APP})) for j in range(6)]
    alone_binds, _, _ = _run([*nodes, terms, *pods], LOADAWARE_CONF, identical_runs=False)
    binds, _, _ = _run([*nodes, terms, *pods], LOADAWARE_CONF, identical_runs=True)
    assert binds == alone_binds
    placed = dict(binds)
    assert placed["default/p01"] in ("n0", "n1") and placed["default/p00"] != placed["default/p01"]
    assert all(n != placed["default/p01"] for key, n in binds if key != "default/p01")


def test_the_signature_base_reads_the_spec_bytes_as_the_spec() -> None:
    """A pending pod's view carries its spec's serialisation (``PodView.spec_bytes``), which the signature reads
    instead of serialising the spec: a view without it (a refreshed one whose spec object changed) gets the same
    base, and pods differing in their spec (or in metadata other than their identity) get different ones."""
    views = [PodView.parse(pod(f"p{j}", cpu=cpu, created=T0 + j, annotations=ann))
             for j, (cpu, ann) in enumerate([("100m", {}), ("100m", {}), ("200m", {}), ("100m", {"a": "b"})])]
    assert all(v.spec_bytes is not None for v in views)
    bases = [_base(v) for v in views]
    assert bases[0] == bases[1] == _base(dataclasses.replace(views[0], spec_bytes=None))
    assert len({bases[0], bases[2], bases[3]}) == 3
