"""backfill: place BestEffort tasks (no requests) that allocate left alone (specs/volcano.md §3.3)."""

from __future__ import annotations

import functools

from scheduler.framework.api import TaskInfo, TaskStatus
from scheduler.framework.evaluate import evaluate_nodes, pre_predicate, select_best
from scheduler.framework.plugin import register_action
from scheduler.framework.session import Session
from scheduler.framework.status import FitErrors

__all__ = ["Backfill"]


class Backfill:
    name = "backfill"

    def execute(self, ssn: Session) -> None:
        for task in self._candidates(ssn):
            if task.status is TaskStatus.PIPELINED:
                ssn.unplace(task)
            st = pre_predicate(ssn, task)
            if st is not None:
                ssn.record_fit_errors(task, FitErrors(total_nodes=len(ssn.nodes), error=st.reason))
                continue
            ev = evaluate_nodes(ssn, task, mode="backfill")
            if not ev.feasible.any():
                ssn.record_fit_errors(task, ev.fit_errors())
                continue
            node = select_best(ssn, task, ev.feasible)
            if node is None:
                continue
            if ssn.explain is not None:
                ssn.explain[task.key].node = node.name
            ssn.allocate(task, node)

    @staticmethod
    def _candidates(ssn: Session) -> list[TaskInfo]:
        queues = sorted((q for q in ssn.queues.values()), key=functools.cmp_to_key(ssn.queue_order))
        out: list[TaskInfo] = []
        for queue in queues:
            jobs = [j for j in ssn.jobs.values() if j.queue == queue.name and not j.is_pending()
                    and ssn.job_valid(j) is None]
            jobs.sort(key=functools.cmp_to_key(ssn.job_order))
            for job in jobs:
                tasks = [t for t in job.tasks_in(TaskStatus.PENDING, TaskStatus.PIPELINED)
                         if t.best_effort and not t.gated]
                out.extend(ssn.sorted_tasks(tasks))
        return out


@register_action("backfill")
def _factory() -> Backfill:
    return Backfill()
