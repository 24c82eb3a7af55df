"""interpodaffinity's placed-pod term index against a walk over every placed pod: filter verdicts, their reasons
and raw scores after every placement, removal and start of termination, for random nodes, labels and terms."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from common.objects import PodView
from scheduler.framework.session import Session
from scheduler.framework.status import Code
from scheduler.plugins.interpodaffinity import InterPodAffinityCheck, Term, _KeptScore, _min_max, pod_terms
from scheduler.plugins.podtopologyspread import PodIndex
from scheduler.predicates.podaffinity import AFFINITY_REASON, ANTI_AFFINITY_REASON, EXISTING_ANTI_AFFINITY_REASON
from tests.scheduler.factories import node, pod, session

from .helpers import conf, random_placement_step

HOST = "kubernetes.io/hostname"
APPS = ["web", "db", "cache"]
KINDS = ("podAffinity", "podAntiAffinity")
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def _random_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
                            "topologyKey": rng.choice(["zone", HOST, "rack"])}
    roll = rng.random()
    if roll < 0.2:
        term["namespaceSelector"] = {}
    elif roll < 0.4:
        term["namespaces"] = [rng.choice(["a", "b"])]
    return term


def _random_affinity(rng: random.Random) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    for kind in KINDS:
        block: dict[str, Any] = {}
        if rng.random() < 0.4:
            block[REQ] = [_random_term(rng) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.5:
            block[PREF] = [{"weight": rng.randint(1, 100), "podAffinityTerm": _random_term(rng)}
                           for _ in range(rng.randint(1, 2))]
        if block:
            affinity[kind] = block
    return {"affinity": affinity} if affinity else {}


def _objects(rng: random.Random, replicas: bool = False) -> list[dict[str, Any]]:
    names = [f"n{i}" for i in range(7)]
    objs: list[dict[str, Any]] = []
    for name in names:  # some nodes lack the zone or the rack key
        labels = {k: rng.choice(v) for k, v in (("zone", "xy"), ("rack", "pqr")) if rng.random() < 0.8}
        objs.append(node(name, cpu="64", labels=labels))
    # replicas: the pods' affinities are drawn from a few, so placed pods share terms (their counts move without a
    # distinct term coming or going)
    pool = [_random_affinity(rng) for _ in range(3)] if replicas else []
    for j in range(24):
        objs.append(pod(f"p{j}", cpu="10m", namespace=rng.choice(["a", "b"]),
                        labels={"app": rng.choice(APPS)} if rng.random() < 0.9 else {},
                        node_name=rng.choice(names) if rng.random() < 0.5 else "",
                        extra_spec=(rng.choice(pool) if pool else _random_affinity(rng)) if rng.random() < 0.4
                        else None))
    return objs


def _placed(ssn: Session) -> list[tuple[PodView, int]]:
    return [(p.pod, p.node) for p in PodIndex.of(ssn)._placed.values()]


def _same(ssn: Session, key: str, a: int, b: int) -> bool:
    la, lb = ssn.nodes[a].view.labels, ssn.nodes[b].view.labels
    return key in la and key in lb and la[key] == lb[key]


def _walk_score(ssn: Session, pod: PodView, hard_weight: int, ignore: bool) -> list[int] | None:
    """The raw score by walking every placed pod for every node."""
    own = pod_terms(pod)
    placed = _placed(ssn)
    owners = [(p, k, pod_terms(p)) for p, k in placed if p.affinity.get("podAffinity") or
              p.affinity.get("podAntiAffinity")]
    if not own.preferred_affinity and not own.preferred_anti and not owners:
        return None
    n = len(ssn.nodes)
    out = [0] * n
    for sign, terms in ((1, own.preferred_affinity), (-1, own.preferred_anti)):
        for t in terms:
            for p, k in placed:
                if t.matches(p):
                    for j in range(n):
                        out[j] += sign * t.weight * _same(ssn, t.topology_key, j, k)
    for _, k, theirs in owners:
        weighted: list[tuple[int, tuple[Term, ...]]] = [(hard_weight, theirs.required_affinity)]
        if not ignore:
            weighted += [(t.weight, (t,)) for t in theirs.preferred_affinity]
            weighted += [(-t.weight, (t,)) for t in theirs.preferred_anti]
        for weight, terms in weighted:
            for t in terms:
                if t.matches(pod):
                    for j in range(n):
                        out[j] += weight * _same(ssn, t.topology_key, j, k)
    return out


def _walk_filter(ssn: Session, pod: PodView) -> list[str]:
    """Per node, the first reason it fails for ("" when it passes), walking every placed pod."""
    own = pod_terms(pod)
    placed = _placed(ssn)
    n = len(ssn.nodes)
    out = [""] * n

    def fail(j: int, reason: str) -> None:
        out[j] = out[j] or reason

    if own.required_affinity:
        anywhere = any(all(t.matches(p) for t in own.required_affinity) for p, _ in placed)
        first = not anywhere and all(t.matches(pod) for t in own.required_affinity)
        for j in range(n):
            labels = ssn.nodes[j].view.labels
            if first:
                met = all(t.topology_key in labels for t in own.required_affinity)
            else:
                met = all(any(all(u.matches(p) for u in own.required_affinity) and _same(ssn, t.topology_key, j, k)
                              for p, k in placed) for t in own.required_affinity)
            if not met:
                fail(j, AFFINITY_REASON)
    for t in own.required_anti:
        for j in range(n):
            if any(t.matches(p) and _same(ssn, t.topology_key, j, k) for p, k in placed):
                fail(j, ANTI_AFFINITY_REASON)
    for p, k in placed:
        for t in pod_terms(p).required_anti:
            for j in range(n):
                if t.matches(pod) and _same(ssn, t.topology_key, j, k):
                    fail(j, EXISTING_ANTI_AFFINITY_REASON)
    return out


def _normalised(raw: list[int] | None, mask: list[bool]) -> list[int]:
    """Min-max over the scored nodes, truncated toward zero; 0 elsewhere and when they are all alike."""
    scored = [r for r, on in zip(raw or [], mask, strict=False) if on]
    if raw is None or not scored or max(scored) == min(scored):
        return [0] * len(mask)
    lo, hi = min(scored), max(scored)
    return [int(100.0 * ((r - lo) / (hi - lo))) if on else 0 for r, on in zip(raw, mask, strict=True)]


@pytest.mark.parametrize("seed", range(12))
def test_term_index_equals_a_walk_over_the_placed_pods(seed: int) -> None:
    rng = random.Random(seed)
    ssn = session(_objects(rng, replicas=seed % 2 == 1), conf("interpodaffinity"))[0]
    hard_weight, ignore = rng.choice([0, 1, 7]), rng.random() < 0.3
    check = InterPodAffinityCheck(ssn, hard_weight=hard_weight, ignore_existing_preferred=ignore)
    tasks = list(ssn.tasks.values())
    incoming = [t for t in tasks if not t.node_name]
    for step in range(40):
        if step:  # the first round reads the index as the session opened it
            random_placement_step(rng, ssn, tasks)
        for task in rng.sample(incoming, 4):
            raw = check.raw_score(task)
            want = _walk_score(ssn, task.pod, hard_weight, ignore)
            assert (None if raw is None else raw.tolist()) == want, (step, task.key)
            every = rng.random() < 0.4   # every node scored: the normalised score is kept with the raw one
            mask = [every or rng.random() < 0.8 for _ in ssn.nodes]
            ssn.score_mask = np.array(mask, dtype=np.bool_)
            assert check.score(task).tolist() == _normalised(want, mask), (step, task.key)
            ssn.score_mask = None
            res = check.filter(task)
            got = ["" if res.passed[j] else res.found(j)[0][1] for j in range(len(ssn.nodes))]
            assert got == _walk_filter(ssn, task.pod), (step, task.key)
            assert all(res.found(j)[0][0] is (Code.UNRESOLVABLE if got[j] == AFFINITY_REASON else Code.UNSCHEDULABLE)
                       for j in range(len(ssn.nodes)) if got[j])


def test_kept_extremes_are_looked_for_past_the_first_nodes() -> None:
    """The nodes holding the placed terms' highest score are many (every node with none of their pods): a scored
    mask holding only one far down their list still has the extremes of every node, and its normalisation is the
    one over every node times the mask; without the lowest one it has not."""
    raw = np.zeros(40, dtype=np.int64)
    raw[5] = -3
    kept = _KeptScore((0, 0), raw)
    mask = np.zeros(40, dtype=np.bool_)
    mask[[5, 30]] = True
    assert kept.extremes_among(mask)
    assert np.multiply(kept.normalised(), mask).tolist() == _min_max(raw, mask).tolist()
    mask[5] = False
    assert not kept.extremes_among(mask)
    assert not kept.extremes_among(np.arange(40) == 5)
