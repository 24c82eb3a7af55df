"""backfill: place BestEffort tasks (no requests) that allocate left alone (docs/design/scheduler.md §3.3)."""

from __future__ import annotations

import functools

from scheduler.framework.api import JobInfo, TaskInfo, TaskStatus, with_backfill_work
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
        """Best-effort pending (or pipelined) tasks, queue by queue in queue order, job by job in job order.

        Only jobs that hold such a task are validated and sorted: the others contribute nothing, and since the job
        order is total (it ends on creation time and uid) the candidates' relative order is the same either way."""
        by_queue: dict[str, list[tuple[JobInfo, list[TaskInfo]]]] = {}
        for job in with_backfill_work(ssn.jobs_in_play()):
            if job.is_pending():
                continue
            tasks = [t for t in job.tasks_in(TaskStatus.PENDING, TaskStatus.PIPELINED) if t.best_effort and not t.gated]
            if tasks and ssn.job_valid(job) is None:
                by_queue.setdefault(job.queue, []).append((job, tasks))
        if not by_queue:
            return []
        queues = sorted((q for q in ssn.queues.values()), key=functools.cmp_to_key(ssn.queue_order))
        out: list[TaskInfo] = []
        for queue in queues:
            jobs = by_queue.get(queue.name)
            if not jobs:
                continue
            order = functools.cmp_to_key(ssn.job_order)
            jobs.sort(key=lambda pair: order(pair[0]))
            for _, tasks in jobs:
                out.extend(ssn.sorted_tasks(tasks))
        return out


@register_action("backfill")
def _factory() -> Backfill:
    return Backfill()
