"""nodeorder's sum skips scorers that add nothing for a pod (no preferred node affinity, no untolerated
PreferNoSchedule taint, no node reporting an image, no pod affinity terms on the pod or on pods placed): it must
equal the weighted sum of every scorer's scores, on
every node, whichever nodes are being scored."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.api import TaskStatus
from scheduler.plugins.nodeorder import NodeOrder
from tests.scheduler.factories import node, pod, session

from .helpers import conf

TAINTS = [{"key": "a", "value": "1", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"},
          {"key": "c", "effect": "NoSchedule"}]
TOLERATIONS = [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists", "effect": "PreferNoSchedule"},
               {"operator": "Exists"}]
PREFERRED = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 30, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}]}
POD_ANTI = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 50, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a"}}}}]}
WEIGHTS = {"leastrequested.weight": 1, "balancedresource.weight": 2, "nodeaffinity.weight": 2,
           "tainttoleration.weight": 3, "imagelocality.weight": 1, "podaffinity.weight": 2,
           "podtopologyspread.weight": 2}
# without the resource scorers, taint toleration's is the sum's first whenever the pod has no affinity terms
NO_RESOURCES = {**WEIGHTS, "leastrequested.weight": 0, "balancedresource.weight": 0}


@settings(max_examples=40, deadline=None)
@given(node_taints=st.lists(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: t["key"]),
                            min_size=2, max_size=6),
       tolerations=st.lists(st.sampled_from(TOLERATIONS), max_size=2), preferred=st.booleans(),
       plugin_weight=st.sampled_from([1, 2]), own_terms=st.booleans(), placed_terms=st.booleans(),
       weights=st.sampled_from([WEIGHTS, NO_RESOURCES]), data=st.data())
def test_sum_equals_every_weighted_scorer(node_taints: list[list[dict[str, str]]], tolerations: list[dict[str, Any]],
                                          preferred: bool, plugin_weight: int, own_terms: bool, placed_terms: bool,
                                          weights: dict[str, int], data: st.DataObject) -> None:
    nodes = [node(f"n{i}", labels={"zone": f"z{i % 2}"}, taints=t) for i, t in enumerate(node_taints)]
    spec: dict[str, Any] = {"tolerations": tolerations}
    affinity: dict[str, Any] = {}
    if preferred:
        affinity["nodeAffinity"] = PREFERRED
    if own_terms:
        affinity["podAntiAffinity"] = POD_ANTI
    if affinity:
        spec["affinity"] = affinity
    placed = [pod("q", node_name="n0", labels={"app": "a"},
                  extra_spec={"affinity": {"podAffinity": POD_ANTI}} if placed_terms else None)]
    ssn, _ = session([*nodes, *placed, pod("p", labels={"app": "a"}, extra_spec=spec)],
                     conf(("nodeorder", weights, plugin_weight)))
    task = ssn.tasks["uid-default-p"]
    score = dict(ssn.enabled("vector_score"))["nodeorder"]
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrder)
    for _ in range(3):
        picks = data.draw(st.lists(st.booleans(), min_size=len(nodes), max_size=len(nodes)))
        ssn.score_mask = np.array(picks, dtype=np.bool_)
        expected = np.sum([scorer(task) * weight for _, weight, scorer in plugin.parts], axis=0) * plugin_weight
        assert score(task).tolist() == expected.tolist()
    ssn.score_mask = None


def test_a_taint_score_read_off_the_mask_can_start_the_sum() -> None:
    """Taint toleration alone (tolerations leaving no PreferNoSchedule taint untolerated): its weighted maximum on
    the nodes scored, 0 elsewhere, as the first and only summand."""
    only = {key: 0 for key in WEIGHTS} | {"tainttoleration.weight": 3}
    nodes = [node(f"n{i}", taints=[TAINTS[2]] if i % 2 else []) for i in range(4)]
    ssn, _ = session([*nodes, pod("p")], conf(("nodeorder", only, 2)))
    task = ssn.tasks["uid-default-p"]
    score = dict(ssn.enabled("vector_score"))["nodeorder"]
    ssn.score_mask = np.array([True, False, True, True])
    assert score(task).tolist() == [600, 0, 600, 600]
    ssn.score_mask = None
    assert score(task).tolist() == [600] * 4


# pods alike in one request and not the other, or requesting nothing (the non-zero defaults count for the least
# requested score, not for the balance)
SHAPES = [("500m", "1Gi"), ("500m", "3Gi"), ("1", "3Gi"), (None, None), ("500m", None)]


@settings(max_examples=25, deadline=None)
@given(order=st.lists(st.integers(0, len(SHAPES) - 1), min_size=2, max_size=16), data=st.data(),
       weights=st.sampled_from([WEIGHTS, {**WEIGHTS, "mostrequested.weight": 3}]))
def test_kept_resource_sum_follows_placements(order: list[int], data: st.DataObject, weights: dict[str, int]) -> None:
    """The resource scorers' kept weighted sum, read by pods of several shapes taking turns while pods are placed
    on one node or several between two reads: every read equals the weighted sum of every scorer made anew."""
    nodes = [node(f"n{i}", cpu=str(2 + i % 3), memory=f"{4 + 2 * (i % 2)}Gi") for i in range(7)]
    pods = [pod(f"p{j}", *SHAPES[k]) for j, k in enumerate(order)]
    ssn, _ = session([*nodes, *pods], conf(("nodeorder", weights)))
    score = dict(ssn.enabled("vector_score"))["nodeorder"]
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrder)
    tasks = sorted(ssn.tasks.values(), key=lambda t: int(t.name[1:]))
    for task in tasks:
        expected = np.sum([scorer(task) * weight for _, weight, scorer in plugin.parts], axis=0)
        assert score(task).tolist() == expected.tolist()
        for i in data.draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=3)):
            ssn.arrays.add(i, task.vector, TaskStatus.RUNNING, task.nonzero)
