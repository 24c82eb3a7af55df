"""Repeated sessions of water-filling + queue-ordered allocation + reclaim converge to the fair share."""

from __future__ import annotations

import random

import pytest

from common.resources import Resources as R
from scheduler.batch.proportion import (
    QueueDemand,
    allocatable,
    elastic,
    enqueue_shortfall,
    inqueue_reserved,
    queue_share,
    quota_message,
    reclaim_victims,
    water_fill,
)

TASK = R(cpu=100, pods=1)
SESSIONS = 60


def run_sessions(total: R, weights: dict[str, int], demand: dict[str, int], start: dict[str, int]) -> dict[str, int]:
    """Tasks per queue after SESSIONS rounds; ``demand`` is the number of tasks each queue wants."""
    running = dict(start)
    for _ in range(SESSIONS):
        queues = [
            QueueDemand(name, weights[name], TASK.scale(demand[name]), allocated=TASK.scale(running[name]))
            for name in weights
        ]
        deserved = water_fill(total, queues)
        # reclaim: one task per session from every queue above its deserved, if someone is starved
        free = total["cpu"] // TASK["cpu"] - sum(running.values())
        starved = any(running[q] < demand[q] and allocatable(TASK.scale(running[q]), TASK, deserved[q]) == [] for q in weights)
        if free == 0 and starved:
            candidates = [(q, TASK) for q in sorted(weights) for _ in range(running[q])]
            allocated = {q: TASK.scale(running[q]) for q in weights}
            for index in reclaim_victims(candidates, allocated, deserved)[:len(weights)]:
                running[candidates[index][0]] -= 1
        # allocate: smallest share first, one task per turn while it fits its deserved and the cluster
        progress = True
        while progress:
            progress = False
            order = sorted(weights, key=lambda q: (queue_share(TASK.scale(running[q]), deserved[q]), q))
            for q in order:
                free = total["cpu"] // TASK["cpu"] - sum(running.values())
                if free <= 0 or running[q] >= demand[q]:
                    continue
                if allocatable(TASK.scale(running[q]), TASK, deserved[q]):
                    continue
                running[q] += 1
                progress = True
                break
    return running


@pytest.mark.parametrize("seed", range(40))
def test_converges_to_weighted_fair_share(seed: int) -> None:
    rng = random.Random(seed)
    slots = rng.randint(10, 60)
    total = R(cpu=slots * 100, pods=1000)
    names = [f"q{i}" for i in range(rng.randint(2, 4))]
    weights = {n: rng.randint(1, 4) for n in names}
    demand = {n: rng.randint(slots // 4, slots * 2) for n in names}
    # start from an unfair placement: the first queue holds everything it can
    start = dict.fromkeys(names, 0)
    start[names[0]] = min(demand[names[0]], slots)
    final = run_sessions(total, weights, demand, start)
    # reference: exact max-min weighted fair share by water-filling on real numbers
    fair: dict[str, float] = dict.fromkeys(names, 0.0)
    left, active = float(slots), set(names)
    while active and left > 1e-9:
        w = sum(weights[n] for n in active)
        give = {n: left * weights[n] / w for n in active}
        for n in list(active):
            take = min(give[n], demand[n] - fair[n])
            fair[n] += take
            left -= take
            if fair[n] >= demand[n] - 1e-9:
                active.discard(n)
    for n in names:
        assert abs(final[n] - fair[n]) <= len(names) + 1, (final, fair)
    assert sum(final.values()) >= min(slots, sum(demand.values())) - len(names)


def test_admission_helpers() -> None:
    assert inqueue_reserved(R(cpu=4000, memory=10), R(cpu=1000, memory=20)) == R(cpu=3000)
    assert elastic(R(cpu=5000), R(cpu=4000)) == R(cpu=1000)
    cap = R(cpu=8000, memory=100)
    assert enqueue_shortfall(R(cpu=4000), R(cpu=2000), R(cpu=1000), R(), cap) == []
    assert enqueue_shortfall(R(cpu=4000), R(cpu=4000), R(cpu=1000), R(), cap) == ["cpu"]
    assert enqueue_shortfall(R(cpu=4000), R(cpu=4000), R(cpu=1000), R(cpu=1000), cap) == []
    assert enqueue_shortfall(R(), R(cpu=99999), R(), R(), cap) == []
    assert quota_message(["cpu"]) == "queue resource quota insufficient: insufficient cpu"
