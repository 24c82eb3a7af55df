"""nodeaffinity's answers from nodes grouped by the label keys a pod reads, against node-by-node evaluation over
whole label sets: random node labels, node selectors and required/preferred terms, several checks of a session."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.plugins.nodeaffinity import AffinityCheck
from scheduler.predicates.affinity import node_matches_required, preferred_sum
from tests.scheduler.factories import node, pod, session

from .helpers import conf

KEYS = ["zone", "disk", "rack", "gen"]
VALUES = ["1", "2", "3"]


def _expression(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    expr: dict[str, Any] = {"key": rng.choice(KEYS), "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample(VALUES, rng.randint(1, 2))
    elif op in ("Gt", "Lt"):
        expr["values"] = [rng.choice(VALUES)]
    return expr


def _term(rng: random.Random) -> dict[str, Any]:
    return {"matchExpressions": [_expression(rng) for _ in range(rng.randint(1, 2))]}


def _spec(rng: random.Random) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if rng.random() < 0.5:
        spec["nodeSelector"] = {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(1, 2))}
    na: dict[str, Any] = {}
    if rng.random() < 0.6:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term(rng) for _ in range(rng.randint(1, 2))]}
    if rng.random() < 0.5:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": _term(rng)} for _ in range(rng.randint(1, 2))]
    if na:
        spec["affinity"] = {"nodeAffinity": na}
    return spec


@pytest.mark.parametrize("seed", range(10))
def test_grouped_answers_equal_node_by_node_evaluation(seed: int) -> None:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [
        node(f"n{i}", cpu="64", labels={k: rng.choice(VALUES) for k in KEYS if rng.random() < 0.7})
        for i in range(12)]
    objs += [pod(f"p{j}", extra_spec=_spec(rng)) for j in range(20)]
    ssn = session(objs, conf("nodeaffinity"))[0]
    checks = [AffinityCheck(ssn), AffinityCheck(ssn)]  # they share answers: either may compute first
    labels = [nd.view.labels for nd in ssn.nodes]
    names = [nd.name for nd in ssn.nodes]
    for task in ssn.tasks.values():
        p = task.pod
        check = rng.choice(checks)
        want = [node_matches_required(p.node_selector, p.affinity, lb, nm) for lb, nm in zip(labels, names, strict=True)]
        assert check.required(p).tolist() == want, task.key
        raw = [preferred_sum(p.affinity, lb, nm) for lb, nm in zip(labels, names, strict=True)]
        assert check.raw_score(p).tolist() == raw, task.key
