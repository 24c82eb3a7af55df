"""Victim safety and selection shared by preempt/reclaim plugins (docs/design/scheduler.md §4.2, §4.3).

* conformance never lets system-critical or ``kube-system`` pods be evicted;
* a pod (or its PodGroup) annotated/labelled ``volcano.sh/preemptable: "false"`` is never a victim;
* priority only evicts strictly lower priority;
* ``minimal_victims`` keeps the fewest victims that free enough for the preemptor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.resources import Resources
from scheduler.batch.quota import sum_resources

__all__ = [
    "CRITICAL_PRIORITY_CLASSES",
    "PREEMPTABLE_KEY",
    "VictimFacts",
    "conformance_allows",
    "preemptable_flag",
    "priority_allows",
    "minimal_victims",
]

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
PREEMPTABLE_KEY = "volcano.sh/preemptable"
SYSTEM_NAMESPACE = "kube-system"


@dataclass(frozen=True, slots=True)
class VictimFacts:
    """What the safety rules look at for one candidate victim."""

    namespace: str
    priority_class_name: str
    job_id: str
    job_priority: int
    task_priority: int


def conformance_allows(victim: VictimFacts) -> bool:
    """False for system-critical pods and anything in ``kube-system``."""
    return victim.priority_class_name not in CRITICAL_PRIORITY_CLASSES and victim.namespace != SYSTEM_NAMESPACE


def preemptable_flag(annotations: Mapping[str, str], labels: Mapping[str, str], default: bool = True) -> bool:
    """``volcano.sh/preemptable`` from annotations, then labels; anything but "false" keeps the default."""
    for source in (annotations, labels):
        raw = source.get(PREEMPTABLE_KEY)
        if raw is not None:
            text = str(raw).strip().lower()
            if text == "false":
                return False
            if text == "true":
                return True
    return default


def priority_allows(preemptor: VictimFacts, victim: VictimFacts) -> bool:
    """Other job: victim's job priority strictly lower; same job: victim's task priority strictly lower."""
    if victim.job_id != preemptor.job_id:
        return victim.job_priority < preemptor.job_priority
    return victim.task_priority < preemptor.task_priority


def minimal_victims(need: Mapping[str, int], free: Mapping[str, int], victims: Sequence[Resources]) -> list[int] | None:
    """Fewest victims (indices, in given order) whose requests plus ``free`` cover ``need``.

    Victims are taken greedily in order until the preemptor fits; then each chosen one whose removal
    still leaves enough is dropped again (last first), so no victim in the answer is unnecessary.
    Returns None when even every victim is not enough.  ``pods`` is compared like any dimension.
    """

    def fits(chosen: Sequence[int]) -> bool:
        freed = sum_resources([free, *(victims[i] for i in chosen)])
        return all(amount <= freed.get(name, 0) for name, amount in need.items() if amount > 0)

    chosen: list[int] = []
    if not fits(chosen):
        for index in range(len(victims)):
            chosen.append(index)
            if fits(chosen):
                break
        else:
            return None
    for index in reversed(list(chosen)):
        trial = [i for i in chosen if i != index]
        if fits(trial):
            chosen = trial
    return chosen

