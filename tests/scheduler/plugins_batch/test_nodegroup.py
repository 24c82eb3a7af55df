"""nodegroup plugin: group predicate and score broadcast per group, quotas per group, hierarchy inheritance."""

from __future__ import annotations

import json
from typing import Any

from scheduler.framework.api import TaskStatus
from scheduler.framework.status import Code
from tests.scheduler.factories import node, pod, podgroup, queue, run, session

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: nodegroup
"""
LABEL = "volcano.sh/nodegroup-name"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def _q(name: str, required: list[str] | None = None, preferred: list[str] | None = None,
       anti: list[str] | None = None, parent: str = "", limits: dict[str, Any] | None = None) -> dict[str, Any]:
    q = queue(name)
    aff: dict[str, Any] = {}
    if required or preferred:
        aff["nodeGroupAffinity"] = {k: v for k, v in ((REQ, required), (PREF, preferred)) if v}
    if anti:
        aff["nodeGroupAntiAffinity"] = {REQ: anti}
    if aff:
        q["spec"]["affinity"] = aff
    if parent:
        q["spec"]["parent"] = parent
    if limits:
        q["metadata"]["annotations"] = {"volcano.sh/nodegroup-resource-limits": json.dumps(limits)}
    return q


def _nodes() -> list[dict[str, Any]]:
    return [node("a1", labels={LABEL: "a"}), node("a2", labels={LABEL: "a"}), node("b1", labels={LABEL: "b"}),
            node("c1", labels={LABEL: "c"}), node("free")]


def _task(ssn: Any, name: str) -> Any:
    return next(t for t in ssn.tasks.values() if t.name == name)


def test_predicate_and_score_per_group() -> None:
    objs = [*_nodes(), _q("q", required=["a"], preferred=["b"], anti=["c"]), podgroup("j", 1, queue="q"),
            pod("j-0", group="j")]
    ssn, _ = session(objs, CONF)
    task = _task(ssn, "j-0")
    res = ssn.fns["vector_predicate"]["nodegroup"](task)
    names = [n.name for n in ssn.nodes]
    assert dict(zip(names, res.passed.tolist(), strict=True)) == {
        "a1": True, "a2": True, "b1": True, "c1": False, "free": False}
    c1 = names.index("c1")
    assert res.reasons[c1] == [(Code.UNRESOLVABLE, "node group c is in the queue's required node group anti-affinity")]
    score = ssn.fns["vector_score"]["nodegroup"](task)
    assert dict(zip(names, score.tolist(), strict=True)) == {"a1": 100, "a2": 100, "b1": 50, "c1": 0, "free": 0}


def test_allocate_lands_only_in_affine_groups() -> None:
    objs = [*_nodes(), _q("q", required=["b"]), podgroup("j", 1, queue="q")]
    objs += [pod(f"j-{i}", cpu="1", group="j") for i in range(6)]
    _, sink = run(objs, CONF)
    assert set(sink.binds.values()) == {"b1"} and len(sink.binds) == 4


def test_non_strict_lets_unaffine_queues_use_unlabelled_nodes() -> None:
    objs = [*_nodes(), _q("plain"), podgroup("j", 1, queue="plain"), pod("j-0", group="j")]
    _, sink = run(objs, CONF)
    assert sink.binds == {}
    _, sink = run(objs, CONF.replace("  - name: nodegroup", "  - name: nodegroup\n    arguments: {strict: false}"))
    assert sink.binds == {"default/j-0": "free"}


def test_hierarchy_inherits_parent_affinity() -> None:
    objs = [*_nodes(), _q("eng", required=["c"]), _q("dev", parent="eng"), podgroup("j", 1, queue="dev"),
            pod("j-0", group="j")]
    conf = CONF.replace("  - name: nodegroup", "  - name: nodegroup\n    enableHierarchy: true")
    _, sink = run(objs, conf)
    assert sink.binds == {"default/j-0": "c1"}


def test_group_quota_tracks_allocations_and_discards() -> None:
    objs = [*_nodes(), _q("q", required=["a"], limits={"a": {"cpu": "3"}}), podgroup("j", 1, queue="q"),
            pod("j-run", cpu="1", group="j", node_name="a1")]
    objs += [pod(f"j-{i}", cpu="1", group="j") for i in range(4)]
    ssn, sink = run(objs, CONF)
    assert len(sink.binds) == 2          # 1 running + 2 new = the group's 3 cpu quota
    plugin = ssn.plugins["nodegroup"]
    assert plugin.used[("q", "a")]["cpu"] == 3000   # type: ignore[attr-defined]
    pending = next(t for t in ssn.jobs["default/j"].tasks.values() if t.status is TaskStatus.PENDING)
    res = ssn.fns["vector_predicate"]["nodegroup"](pending)
    assert not res.passed.any()
    assert "exceed its quota in node group a: cpu" in res.reasons[0][0][1]
    # a discarded placement gives the quota back (the deallocate handler still sees the node)
    ssn.place(pending, ssn.node_by_name["a2"], TaskStatus.ALLOCATED)
    assert plugin.used[("q", "a")]["cpu"] == 4000   # type: ignore[attr-defined]
    ssn.unplace(pending)
    assert plugin.used[("q", "a")]["cpu"] == 3000   # type: ignore[attr-defined]
    assert pending.node_name == ""
