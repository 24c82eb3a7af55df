from __future__ import annotations

import random

import pytest

from common.resources import Resources as R
from scheduler.batch.victims import (
    VictimFacts,
    conformance_allows,
    minimal_victims,
    preemptable_flag,
    priority_allows,
)


def facts(ns: str = "default", pc: str = "", job: str = "j", jp: int = 0, tp: int = 0) -> VictimFacts:
    return VictimFacts(ns, pc, job, jp, tp)


def test_conformance() -> None:
    assert conformance_allows(facts())
    assert not conformance_allows(facts(ns="kube-system"))
    assert not conformance_allows(facts(pc="system-node-critical"))
    assert not conformance_allows(facts(pc="system-cluster-critical"))


@pytest.mark.parametrize(
    ("annotations", "labels", "expected"),
    [({}, {}, True), ({"volcano.sh/preemptable": "false"}, {}, False), ({}, {"volcano.sh/preemptable": "False"}, False),
     ({"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}, True)],
)
def test_preemptable_flag(annotations: dict[str, str], labels: dict[str, str], expected: bool) -> None:
    assert preemptable_flag(annotations, labels) is expected


def test_priority_strictly_lower() -> None:
    pre = facts(job="p", jp=10, tp=5)
    assert priority_allows(pre, facts(job="v", jp=9))
    assert not priority_allows(pre, facts(job="v", jp=10))
    assert priority_allows(pre, facts(job="p", tp=4))
    assert not priority_allows(pre, facts(job="p", tp=5))


def test_minimal_victims() -> None:
    need = R(cpu=3000)
    victims = [R(cpu=1000), R(cpu=500), R(cpu=2000), R(cpu=4000)]
    # greedy takes 0,1,2 (3500 >= 3000) then drops 1 (0+2 = 3000 still fits)
    assert minimal_victims(need, R(), victims) == [0, 2]
    assert minimal_victims(need, R(cpu=3000), victims) == []
    assert minimal_victims(R(cpu=99999), R(), victims) is None


@pytest.mark.parametrize("seed", range(300))
def test_minimal_victims_never_keeps_an_unneeded_victim(seed: int) -> None:
    rng = random.Random(seed)
    victims = [R(cpu=rng.randint(1, 8) * 250, memory=rng.randint(0, 4)) for _ in range(rng.randint(0, 8))]
    need = R(cpu=rng.randint(1, 16) * 250, memory=rng.randint(0, 6))
    free = R(cpu=rng.randint(0, 4) * 250, memory=rng.randint(0, 2))
    chosen = minimal_victims(need, free, victims)
    if chosen is None:
        return
    def covers(ids: list[int]) -> bool:
        got = free + sum((victims[i] for i in ids), R())
        return got["cpu"] >= need["cpu"] and got["memory"] >= need["memory"]
    assert covers(chosen)
    for i in chosen:
        assert not covers([j for j in chosen if j != i])
