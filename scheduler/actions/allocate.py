"""allocate: place pending tasks job by job, queue by queue (docs/design/scheduler.md §3.2).

A job is filled up to its gang minimum inside one statement; the statement is committed (bound) only when the job
is ready, kept in session memory when it is merely pipelined, and discarded otherwise.  Nodes where the task fits
what is idle now are preferred; nodes that fit only once releasing pods leave yield a pipelined task.  Pods of a
signature seen before are evaluated only on the nodes changed since its last pod (:mod:`scheduler.framework.runs`).
"""

from __future__ import annotations

from scheduler.framework.api import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from scheduler.framework.evaluate import evaluate_nodes, pre_predicate, select_best, single_node
from scheduler.framework.keyed import OrderedQueue
from scheduler.framework.plugin import register_action
from scheduler.framework.runs import SignatureRuns
from scheduler.framework.session import PriorityQueue, Session
from scheduler.framework.statement import Statement
from scheduler.framework.status import FitErrors

__all__ = ["Allocate"]


class Allocate:
    name = "allocate"

    def __init__(self, identical_runs: bool = True) -> None:
        """``identical_runs``: evaluate pods of a signature seen before on the nodes changed since (False: every
        pod on every node)."""
        self.identical_runs = identical_runs

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = ssn.queue_queue()
        jobs_by_queue: dict[str, OrderedQueue[JobInfo]] = {}
        worksheets: dict[str, PriorityQueue[TaskInfo]] = {}
        enqueue_configured = "enqueue" in ssn.action_names
        for job in ssn.jobs_in_play():   # the others have nothing pending, nor a phase to admit
            if job.is_pending():
                if enqueue_configured:
                    continue
                job.phase = "Inqueue"
            # a job without a pending task that needs resources has nothing to allocate, valid or not
            if job.pending_task_num() <= job.pending_best_effort_num():
                continue
            pending = [t for t in job.tasks_in(TaskStatus.PENDING) if not t.best_effort and not t.gated]
            if not pending or ssn.job_valid(job) is not None:
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            worksheets[job.uid] = ssn.task_queue(pending)
            if job.queue not in jobs_by_queue:
                # a job changes only while popped (placed, then pushed again): its order may be read once per push
                jobs_by_queue[job.queue] = ssn.settled_job_queue()
                queues.push(queue)
            jobs_by_queue[job.queue].push(job)

        run = SignatureRuns.carried(ssn) if self.identical_runs else None
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jq = jobs_by_queue.get(queue.name)
            if jq is None or jq.empty():
                continue
            job = jq.pop()
            tasks = worksheets[job.uid]
            stmt = self._allocate_tasks(ssn, queue, job, tasks, run)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                if not tasks.empty():
                    jq.push(job)
            queues.push(queue)
        if run is not None:
            run.settle()

    def _allocate_tasks(self, ssn: Session, queue: QueueInfo, job: JobInfo,
                        tasks: PriorityQueue[TaskInfo], run: SignatureRuns | None) -> Statement | None:
        stmt = Statement(ssn)
        failed_roles: set[str] = set()
        # a pod placed without the runs that changed more than its node for them: so would discarding it
        unasked = False
        while not tasks.empty():
            task = tasks.pop()
            if task.status is not TaskStatus.PENDING:
                continue
            if not ssn.allocatable(queue, task):
                continue
            if task.role and task.role in failed_roles:
                task.last_fit_message = (f"Task {task.name} with role spec {task.role} has already predicated "
                                         "failed, skip")
                continue
            st = pre_predicate(ssn, task)
            if st is not None:
                errors = FitErrors(total_nodes=len(ssn.nodes), error=st.reason)
                ssn.record_fit_errors(task, errors)
                if task.role:
                    failed_roles.add(task.role)
                if job.need_continue_allocating(failed_roles):
                    continue
                break
            node = self._nominated(ssn, task)
            placed = False
            fits: tuple[bool, bool] | None = None
            picked = run.pick(task) if node is None and run is not None else None
            if picked is not None:
                node, fits = picked[0], picked[1:]
            elif node is None:
                found = self._evaluated(ssn, task)
                if found is None:
                    if task.role:
                        failed_roles.add(task.role)
                    if job.need_continue_allocating(failed_roles | {task.role}):
                        continue
                    break
                node, fits = found
            if node is not None:
                fits_idle, fits_future = fits if fits is not None else self._fits(ssn, task, node)
                if fits_idle:
                    stmt.allocate(task, node)
                    placed = True
                elif fits_future:
                    stmt.pipeline(task, node)
                    placed = True
            if placed and picked is None and run is not None and run.moves(task):
                # placed without the runs, changing more than its node for the signatures kept
                run.forget()
                unasked = True
            if placed and ssn.job_ready(job):
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        if unasked and run is not None:
            run.forget()
        return None

    @staticmethod
    def _evaluated(ssn: Session, task: TaskInfo) -> tuple[NodeInfo | None, tuple[bool, bool] | None] | None:
        """Every node evaluated for the task: the best node and whether the task fits its idle and future idle
        resources; None when no node is feasible (the reasons recorded)."""
        ev = evaluate_nodes(ssn, task, mode="allocate")
        if not ev.feasible.any():
            ssn.record_fit_errors(task, ev.fit_errors())
            return None
        now_mask = ev.feasible & ev.fits_idle
        mask = now_mask if now_mask.any() else ev.feasible
        node = select_best(ssn, task, mask)
        if node is None:
            return None, None
        if ssn.explain is not None:
            ssn.explain[task.key].node = node.name
        # nothing changed the node arrays since the evaluation: its resource checks still hold
        return node, (bool(ev.fits_idle[node.index]), bool(ev.fits_future[node.index]))

    @staticmethod
    def _fits(ssn: Session, task: TaskInfo, node: NodeInfo) -> tuple[bool, bool]:
        """Whether the task fits the node's idle resources, and its future idle ones."""
        fits_idle = bool(ssn.arrays.fits(task.vector, ssn.arrays.idle[node.index:node.index + 1])[0])
        return fits_idle, fits_idle or bool(ssn.arrays.fits(
            task.vector, ssn.arrays.future_idle()[node.index:node.index + 1])[0])

    @staticmethod
    def _nominated(ssn: Session, task: TaskInfo) -> NodeInfo | None:
        """The pod's nominated node when it still exists and its future idle fits (set by an earlier preempt)."""
        name = task.nominated_node
        node = ssn.node_by_name.get(name) if name else None
        if node is None:
            return None
        ev = evaluate_nodes(ssn, task, mode="allocate", candidates=single_node(len(ssn.nodes), node.index))
        return node if ev.feasible[node.index] else None


@register_action("allocate")
def _factory() -> Allocate:
    return Allocate()
