"""Shared steps of preempt and reclaim: the preemptor's eligibility, node candidates, and evicting victims in
victim order on one node until the preemptor fits (docs/design/scheduler.md §3.4-§3.5)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from scheduler.framework.api import NodeInfo, TaskInfo, TaskStatus
from scheduler.framework.evaluate import evaluate_nodes, pre_predicate
from scheduler.framework.session import PriorityQueue, Session
from scheduler.framework.statement import Statement

__all__ = ["may_preempt", "candidate_nodes", "covers", "evict_until_fits"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def may_preempt(ssn: Session, task: TaskInfo) -> bool:
    """``preemptionPolicy: Never`` opts out; a pod already nominated waits while lower-priority victims terminate."""
    if task.never_preempts:
        return False
    node = ssn.node_by_name.get(task.nominated_node) if task.nominated_node else None
    if node is not None:
        for t in node.tasks.values():
            if t.status is TaskStatus.RELEASING and t.priority < task.priority:
                return False
    return pre_predicate(ssn, task) is None


def candidate_nodes(ssn: Session, task: TaskInfo) -> BoolArray:
    """Every node except those where the preemptor is unresolvable (predicates say evictions cannot help)."""
    mask = evaluate_nodes(ssn, task, mode="preempt").feasible
    job = ssn.jobs.get(task.job)
    errors = job.fit_errors.get(task.uid) if job is not None else None
    if errors is not None:
        for name in errors.unresolvable():
            node = ssn.node_by_name.get(name)
            if node is not None:
                mask[node.index] = False
    return mask


def covers(ssn: Session, task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """``ValidateVictims``: future idle plus every victim's request must cover the preemptor."""
    free = ssn.arrays.future_idle_row(node.index).copy()
    for v in victims:
        free += v.vector
    return bool(ssn.arrays.fits(task.vector, free[None, :])[0])


def fits_now(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    return bool(ssn.arrays.fits(task.vector, ssn.arrays.future_idle_row(node.index)[None, :])[0])


def evict_until_fits(ssn: Session, task: TaskInfo, node: NodeInfo, victims: list[TaskInfo],
                     fits: Callable[[], bool], reason: str) -> Statement | None:
    """Evict victims one by one (checking before each) until ``fits()``; pipeline the preemptor there."""
    stmt = Statement(ssn)
    pq: PriorityQueue[TaskInfo] = PriorityQueue(ssn.victim_order(task), victims)
    evicted = 0
    while not fits():
        if pq.empty():
            stmt.discard()
            return None
        stmt.evict(pq.pop(), reason)
        evicted += 1
    stmt.pipeline(task, node, eviction_occurred=evicted > 0)
    return stmt
