"""reclaim: starving jobs of a queue take back resources from Running tasks of reclaimable other queues
(docs/design/scheduler.md §3.5).  Nodes are tried in order without scoring; only resources are re-checked."""

from __future__ import annotations

import numpy as np

from scheduler.framework.api import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from scheduler.framework.evaluate import pre_predicate
from scheduler.framework.plugin import register_action
from scheduler.framework.session import PriorityQueue, Session
from scheduler.framework.statement import Statement

from .victims import candidate_nodes, covers, evict_until_fits, fits_now

__all__ = ["Reclaim"]


class Reclaim:
    name = "reclaim"

    def execute(self, ssn: Session) -> None:
        queues, jobs, tasks = self._starving(ssn)
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jq = jobs.get(queue.name)
            if jq is None or jq.empty():
                continue
            self._serve(ssn, queue, jq.pop(), tasks)
            if not jq.empty():
                queues.push(queue)

    @staticmethod
    def _starving(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]],
                                          dict[str, PriorityQueue[TaskInfo]]]:
        """The queues of running valid jobs, and per queue the starving jobs with their ungated pending tasks."""
        queues: PriorityQueue[QueueInfo] = ssn.queue_queue()
        seen: set[str] = set()
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending() or ssn.job_valid(job) is not None or job.queue not in ssn.queues:
                continue
            if job.queue not in seen:
                seen.add(job.queue)
                queues.push(ssn.queues[job.queue])
            if ssn.job_starving(job):
                pending = [t for t in job.tasks_in(TaskStatus.PENDING) if not t.gated]
                if pending:
                    jobs.setdefault(job.queue, ssn.job_queue()).push(job)
                    tasks[job.uid] = ssn.task_queue(pending)
        return queues, jobs, tasks

    def _serve(self, ssn: Session, queue: QueueInfo, job: JobInfo, tasks: dict[str, PriorityQueue[TaskInfo]]) -> None:
        """Reclaim for ``job``'s tasks while it starves; keep the evictions only if the job is then pipelined."""
        stmt = Statement(ssn)
        tq = tasks[job.uid]
        while ssn.job_starving(job) and not tq.empty():
            task = tq.pop()
            if task.status is not TaskStatus.PENDING or task.never_preempts:
                continue
            if not ssn.preemptive(queue, task) or pre_predicate(ssn, task) is not None:
                continue
            self._reclaim_for(ssn, stmt, task, queue)
        if ssn.job_pipelined(job):
            stmt.commit()
        else:
            stmt.discard()

    def _reclaim_for(self, ssn: Session, stmt: Statement, task: TaskInfo, queue: QueueInfo) -> bool:
        mask = candidate_nodes(ssn, task)
        for i in np.flatnonzero(mask).tolist():
            node = ssn.nodes[i]
            reclaimees = []
            for t in node.tasks.values():
                if t.status is not TaskStatus.RUNNING or not t.preemptable:
                    continue
                job = ssn.jobs.get(t.job)
                if job is None or job.queue == queue.name:
                    continue
                other = ssn.queues.get(job.queue)
                if other is None or not other.reclaimable:
                    continue
                reclaimees.append(t)
            if not reclaimees:
                continue
            victims = ssn.reclaimable(task, reclaimees)
            if not victims or not covers(ssn, task, node, victims):
                continue
            def fits(n: NodeInfo = node) -> bool:
                return fits_now(ssn, task, n)

            node_stmt = evict_until_fits(ssn, task, node, victims, fits, "reclaim")
            if node_stmt is not None:
                stmt.merge(node_stmt)
                return True
        return False


@register_action("reclaim")
def _factory() -> Reclaim:
    return Reclaim()
