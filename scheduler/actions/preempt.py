"""preempt: starving jobs take resources from lower-ranked jobs of the same queue, then tasks of a job from that
job's own tasks (docs/design/scheduler.md §3.4).  Preemptors are pipelined, not bound: the next cycle binds them once the
victims are gone."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from scheduler.framework.api import PREEMPTABLE_STATUS, JobInfo, QueueInfo, TaskInfo, TaskStatus
from scheduler.framework.evaluate import evaluate_nodes, score_nodes, single_node
from scheduler.framework.plugin import register_action
from scheduler.framework.session import PriorityQueue, Session
from scheduler.framework.statement import Statement

from .victims import candidate_nodes, covers, evict_until_fits, may_preempt

__all__ = ["Preempt"]

VictimFilter = Callable[[TaskInfo], bool]


class Preempt:
    name = "preempt"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = ssn.queue_queue()
        seen: set[str] = set()
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        under_request: dict[str, list[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending() or ssn.job_valid(job) is not None or job.queue not in ssn.queues:
                continue
            if not ssn.job_starving(job):
                continue
            pending = [t for t in job.tasks_in(TaskStatus.PENDING) if not t.gated]
            if not pending:
                continue
            tasks[job.uid] = ssn.task_queue(pending)
            jobs.setdefault(job.queue, ssn.job_queue()).push(job)
            under_request.setdefault(job.queue, []).append(job)
            if job.queue not in seen:
                seen.add(job.queue)
                queues.push(ssn.queues[job.queue])

        while not queues.empty():
            queue = queues.pop()
            jq = jobs.get(queue.name)
            while jq is not None and not jq.empty():
                job = jq.pop()
                stmt = Statement(ssn)
                tq = tasks[job.uid]
                while ssn.job_starving(job) and not tq.empty():
                    task = tq.pop()
                    if task.status is not TaskStatus.PENDING:
                        continue
                    self._preempt(ssn, stmt, task, _between_jobs(ssn, task, queue.name))
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()
            for job in under_request.get(queue.name, []):
                for task in ssn.sorted_tasks(job.tasks_in(TaskStatus.PENDING)):
                    stmt = Statement(ssn)
                    if not self._preempt(ssn, stmt, task, _within_job(ssn, task)):
                        stmt.discard()
                        break
                    stmt.commit()

    def _preempt(self, ssn: Session, stmt: Statement, task: TaskInfo, accept: VictimFilter) -> bool:
        if not may_preempt(ssn, task):
            return False
        job = ssn.jobs[task.job]
        queue = ssn.queues[job.queue]
        mask = candidate_nodes(ssn, task)
        if not mask.any():
            return False
        totals = score_nodes(ssn, task, mask)
        order = sorted(np.flatnonzero(mask).tolist(), key=lambda i: -float(totals[i]))
        for i in order:
            node = ssn.nodes[i]
            preemptees = [t for t in node.tasks.values() if accept(t)]
            victims = ssn.preemptable(task, preemptees)
            if not covers(ssn, task, node, victims):
                continue

            def fits(node_index: int = i) -> bool:
                if not ssn.allocatable(queue, task):
                    return False
                ev = evaluate_nodes(ssn, task, mode="allocate", candidates=single_node(len(ssn.nodes), node_index))
                return bool(ev.feasible[node_index])

            node_stmt = evict_until_fits(ssn, task, node, victims, fits, "preempt")
            if node_stmt is not None:
                stmt.merge(node_stmt)
                return True
        return False


def _base_ok(preemptor: TaskInfo, victim: TaskInfo) -> bool:
    if victim.status not in PREEMPTABLE_STATUS or not victim.preemptable:
        return False
    return not (preemptor.best_effort and not victim.best_effort)


# Deliberate safety rule on top of the plugins' votes: Volcano's tier voting can hand the decision to a voter that
# ignores priority (docs/design/scheduler.md §2.6 quirk), so a preemptor could evict an equal- or higher-priority pod.
# Here a victim must always rank strictly lower: by job priority between jobs, by task priority inside a job.


def _between_jobs(ssn: Session, preemptor: TaskInfo, queue: str) -> VictimFilter:
    pjob = ssn.jobs[preemptor.job]

    def accept(victim: TaskInfo) -> bool:
        job = ssn.jobs.get(victim.job)
        return (_base_ok(preemptor, victim) and job is not None and job.queue == queue
                and victim.job != preemptor.job and job.priority < pjob.priority)
    return accept


def _within_job(ssn: Session, preemptor: TaskInfo) -> VictimFilter:
    def accept(victim: TaskInfo) -> bool:
        return (_base_ok(preemptor, victim) and victim.job == preemptor.job and victim.job in ssn.jobs
                and victim.priority < preemptor.priority)
    return accept


@register_action("preempt")
def _factory() -> Preempt:
    return Preempt()
