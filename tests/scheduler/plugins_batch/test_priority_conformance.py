"""priority and conformance plugins: orders, starving, and which victims they allow."""

from __future__ import annotations

import pytest

from scheduler.framework.session import PERMIT
from tests.scheduler.factories import node, pod, podgroup, run, session

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: conformance
"""

PCS = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
       for n, v in (("high", 1000), ("low", 10), ("system-cluster-critical", 2000000000))]


def _objs() -> list[dict[str, object]]:
    return [node("a", cpu="16"), *PCS,
            podgroup("hi", 1, priority_class="high"), podgroup("lo", 1, priority_class="low"),
            podgroup("mid", 1, priority_class="high"),
            pod("hi-0", group="hi", priority=5), pod("hi-1", group="hi", priority=50),
            pod("lo-0", group="lo", node_name="a", priority=1), pod("lo-1", group="lo", node_name="a", priority=1),
            pod("mid-0", group="mid", node_name="a", priority=1)]


def test_orders_higher_priority_first() -> None:
    ssn, _ = session(_objs(), CONF)
    hi, lo = ssn.jobs["default/hi"], ssn.jobs["default/lo"]
    assert (hi.priority, lo.priority) == (1000, 10)
    assert ssn.job_order(hi, lo) == -1 and ssn.job_order(lo, hi) == 1
    t5, t50 = sorted(hi.tasks.values(), key=lambda t: t.priority)
    assert ssn.task_order(t50, t5) == -1
    assert ssn.sorted_tasks([t5, t50]) == [t50, t5]


def test_preemptable_only_strictly_lower_priority() -> None:
    ssn, _ = session(_objs(), CONF)
    fn = ssn.fns["preemptable"]["priority"]
    preemptor = next(t for t in ssn.jobs["default/hi"].tasks.values() if t.priority == 5)
    cands = list(ssn.nodes[0].tasks.values())
    victims, vote = fn(preemptor, cands)
    # lo (10 < 1000) may go; mid has the same job priority (1000) and is kept
    assert vote == PERMIT and sorted(v.name for v in victims) == ["lo-0", "lo-1"]
    # inside one job the task priorities decide
    same = [t for t in ssn.jobs["default/hi"].tasks.values() if t.priority == 50]
    assert fn(preemptor, same)[0] == []
    bigger = next(t for t in ssn.jobs["default/hi"].tasks.values() if t.priority == 50)
    assert fn(bigger, [preemptor])[0] == [preemptor]


def test_priority_starving_counts_every_task() -> None:
    objs = [node("a", cpu="16"), podgroup("g", 1), pod("g-0", group="g", node_name="a"), pod("g-1", group="g")]
    ssn, _ = session(objs, CONF)
    assert ssn.fns["job_starving"]["priority"](ssn.jobs["default/g"])


@pytest.mark.parametrize(("namespace", "pc", "annotations", "allowed"), [
    ("default", "", {}, True),
    ("kube-system", "", {}, False),
    ("default", "system-cluster-critical", {}, False),
    ("default", "system-node-critical", {}, False),
    ("default", "", {"volcano.sh/preemptable": "false"}, False),
    ("default", "", {"volcano.sh/preemptable": "true"}, True),
])
def test_conformance_protects_system_and_opted_out_pods(namespace: str, pc: str, annotations: dict[str, str],
                                                        allowed: bool) -> None:
    victim = pod("v-0", namespace=namespace, node_name="a", annotations=annotations,
                 extra_spec={"priorityClassName": pc} if pc else None)
    objs = [node("a"), pod("p-0"), victim]
    ssn, _ = session(objs, CONF)
    preemptor = next(t for t in ssn.tasks.values() if t.name == "p-0")
    cands = [t for t in ssn.nodes[0].tasks.values()]
    for kind in ("preemptable", "reclaimable"):
        victims, vote = ssn.fns[kind]["conformance"](preemptor, cands)
        assert vote == PERMIT and (len(victims) == 1) is allowed


def test_conformance_honours_podgroup_level_opt_out() -> None:
    pg = podgroup("keep", 1)
    pg["metadata"]["annotations"] = {"volcano.sh/preemptable": "false"}
    objs = [node("a"), pod("p-0"), pg, pod("keep-0", group="keep", node_name="a")]
    ssn, _ = session(objs, CONF)
    preemptor = next(t for t in ssn.tasks.values() if t.name == "p-0")
    assert ssn.fns["preemptable"]["conformance"](preemptor, list(ssn.nodes[0].tasks.values()))[0] == []


def test_conformance_protection_survives_tier_voting_handing_over() -> None:
    # tier 1 cannot agree (conformance protects everything gang offers), so drf in tier 2 would decide alone;
    # conformance's session-open marking keeps the critical pods out of the actions' candidates anyway
    text = """
actions: "enqueue, allocate, preempt, reclaim"
tiers:
- plugins:
  - name: priority
    enablePreemptable: false
  - name: gang
  - name: conformance
- plugins:
  - name: drf
"""
    crit = {"extra_spec": {"priorityClassName": "system-node-critical"}}
    objs = [node("a", cpu="2"), *PCS, podgroup("crit", 1, priority_class="low"),
            pod("crit-0", group="crit", node_name="a", **crit), pod("crit-1", group="crit", node_name="a", **crit),
            podgroup("hi", 1, priority_class="high"), pod("hi-0", group="hi")]
    ssn, sink = run(objs, text)
    assert sink.evictions == []
    assert all(not t.preemptable for t in ssn.jobs["default/crit"].tasks.values())
    # and the same pods stay evictable when conformance is not configured (it is conformance that protects them)
    _, sink = run(objs, text.replace("  - name: conformance\n", ""))
    assert sink.evictions


@pytest.mark.parametrize(("actions", "marked"), [("enqueue, allocate, backfill", False),
                                                 ("allocate, preempt", True), ("allocate, reclaim", True)])
def test_conformance_marks_protected_tasks_only_for_evicting_actions(actions: str, marked: bool) -> None:
    """The marks are for preempt and reclaim alone: a session running neither leaves every task as it was made."""
    crit = {"extra_spec": {"priorityClassName": "system-node-critical"}}
    objs = [node("a", cpu="2"), *PCS, pod("crit-0", node_name="a", **crit)]
    ssn, _ = session(objs, CONF.replace('"allocate"', f'"{actions}"'))
    assert [t.preemptable for t in ssn.tasks.values()] == [not marked]
