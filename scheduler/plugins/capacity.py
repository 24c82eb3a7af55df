"""capacity: explicit per-queue quotas — ``deserved`` (entitlement), ``capability`` (hard cap) and ``guarantee``
(never reclaimed below) — optionally as a queue tree through ``spec.parent`` (docs/design/scheduler.md §4.6).

Unlike proportion, a queue may borrow idle capacity up to its (real) capability, and what it holds beyond its
deserved share is what other queues can reclaim.  In hierarchical mode (``enableHierarchy: true``) only leaf queues
hold jobs, allocation and admission must fit the leaf and every ancestor, and reclaim prefers victims in queues
that share a deeper ancestor with the reclaimer.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from common.resources import Resources
from scheduler.batch.args import CapacityArgs
from scheduler.batch.capacity import (
    ROOT,
    HierarchyError,
    QueueLimits,
    QueueQuota,
    allocatable,
    capacity_queue_order,
    capacity_share,
    common_depth,
    compute_limits,
    preemptive,
    reclaim_victims,
)
from scheduler.batch.proportion import enqueue_shortfall, quota_message
from scheduler.batch.queue_usage import deduct_gated, queue_usage
from scheduler.framework.api import JobInfo, QueueInfo, TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import PERMIT, REJECT, EventHandler, Session

__all__ = ["Capacity"]

NAME = "capacity"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("ancestorReclaimLevel",)
log = logging.getLogger(__name__)


class Capacity:
    name = NAME

    def __init__(self, args: CapacityArgs) -> None:
        self.args = args
        self.hierarchy = False
        self.limits: dict[str, QueueLimits] = {}
        # per queue, including every descendant's (in flat mode just the queue's own)
        self.allocated: dict[str, Resources] = {}
        self.inqueue: dict[str, Resources] = {}
        self.elastic: dict[str, Resources] = {}
        self.reserved: dict[str, Resources] = {}
        self.leaf_allocated: dict[str, Resources] = {}
        self.broken = ""   # why the plugin refuses everything this session (a malformed tree)

    def _path(self, queue: str) -> tuple[str, ...]:
        lim = self.limits.get(queue)
        if lim is None:
            return ()
        return tuple(q for q in lim.path if q != ROOT) if self.hierarchy else (queue,)

    def _add(self, table: dict[str, Resources], queue: str, amount: Resources, sign: int = 1) -> None:
        for q in self._path(queue):
            current = table.get(q, Resources())
            table[q] = current + amount if sign > 0 else current - amount

    def share(self, queue: str) -> float:
        lim = self.limits.get(queue)
        return capacity_share(self.allocated.get(queue, Resources()), lim.deserved if lim else Resources())

    def _order_key(self, ssn: Session, queue: str) -> tuple[int, float, bool]:
        q = ssn.queues.get(queue)
        lim = self.limits.get(queue)
        return (q.priority if q else 0, self.share(queue), bool(lim and lim.deserved))

    def on_session_open(self, ssn: Session) -> None:
        opt = ssn.conf.plugin(NAME)
        self.hierarchy = bool(opt is not None and opt.hierarchy)
        self.broken = ""
        quotas = [QueueQuota(q.name, q.deserved, q.guarantee, q.capability, q.parent) for q in ssn.queues.values()]
        try:
            self.limits = compute_limits(ssn.total_resource, quotas, hierarchy=self.hierarchy)
        except HierarchyError as exc:
            self.broken = str(exc)
            self.limits = compute_limits(ssn.total_resource, quotas, hierarchy=False)
            self.hierarchy = False
        self.allocated, self.inqueue, self.elastic, self.reserved, self.leaf_allocated = {}, {}, {}, {}, {}
        for name, u in queue_usage(ssn.jobs.values(), ssn.queues).items():
            if self.hierarchy and not self.limits[name].leaf:
                self.broken = f"queue {name} holds jobs but is not a leaf of the queue hierarchy"
            self.leaf_allocated[name] = u.allocated
            self._add(self.allocated, name, u.allocated)
            self._add(self.inqueue, name, u.inqueue)
            self._add(self.elastic, name, u.elastic)
            self._add(self.reserved, name, u.reserved)
        if self.broken:
            log.error("capacity: %s; nothing is admitted or allocated by capacity this session", self.broken)
        self._register(ssn)

    def _register(self, ssn: Session) -> None:
        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            lq, rq = left.name, right.name
            if self.hierarchy:
                lp, rp = self._path(lq), self._path(rq)
                for a, b in zip(lp, rp, strict=False):
                    if a != b:
                        lq, rq = a, b
                        break
            return capacity_queue_order(self._order_key(ssn, lq), self._order_key(ssn, rq))

        def victim_queue_order(left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
            lim_p = self.limits.get(preemptor.name)
            lim_l, lim_r = self.limits.get(left.name), self.limits.get(right.name)
            if lim_p is None or lim_l is None or lim_r is None:
                return 0
            dl, dr = common_depth(lim_l, lim_p), common_depth(lim_r, lim_p)
            return 0 if dl == dr else (-1 if dl > dr else 1)

        def fits_capability(queue: QueueInfo, request: Resources) -> bool:
            for q in self._path(queue.name):
                if allocatable(self.allocated.get(q, Resources()), request, self.limits[q].real_capability,
                               self.reserved.get(q, Resources())):
                    return False
            return True

        def may_allocate(queue: QueueInfo, task: TaskInfo) -> bool:
            if self.broken or not queue.is_open or queue.name not in self.limits:
                return False
            if self.hierarchy and not self.limits[queue.name].leaf:
                return False
            return fits_capability(queue, task.resreq)

        def may_preempt(queue: QueueInfo, task: TaskInfo) -> bool:
            if self.broken or not queue.is_open or queue.name not in self.limits:
                return False
            if self.hierarchy and not self.limits[queue.name].leaf:
                return False
            path = self._path(queue.name)
            if not fits_capability(queue, task.resreq):
                return False
            levels = 1 + (self.args.ancestor_reclaim_level if self.hierarchy else 0)
            for q in reversed(path[-levels:]):
                if preemptive(self.limits[q], self.allocated.get(q, Resources()), task.resreq):
                    return True
            return False

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            ordered = sorted(reclaimees, key=functools.cmp_to_key(ssn.victim_order(reclaimer)))
            known = [t for t in ordered if t.job in ssn.jobs and ssn.jobs[t.job].queue in self.limits]
            cands = [(ssn.jobs[t.job].queue, t.resreq) for t in known]
            chosen = reclaim_victims(reclaimer.resreq, cands, self.leaf_allocated, self.limits)
            return [known[i] for i in chosen], PERMIT

        def enqueueable(job: JobInfo) -> int:
            queue = ssn.queues.get(job.queue)
            if queue is None or not queue.is_open or job.queue not in self.limits:
                return REJECT
            if self.broken:
                job.job_fit_error = f"capacity: {self.broken}"
                return REJECT
            if self.hierarchy and not self.limits[job.queue].leaf:
                job.job_fit_error = f"queue {job.queue} is not a leaf queue; jobs may only be submitted to leaves"
                return REJECT
            if not job.min_resources:
                return PERMIT
            for q in self._path(job.queue):
                short = enqueue_shortfall(job.min_resources, self.allocated.get(q, Resources()),
                                          self.inqueue.get(q, Resources()), self.elastic.get(q, Resources()),
                                          self.limits[q].real_capability)
                if short:
                    msg = quota_message(short)
                    job.job_fit_error = msg if q == job.queue else f"{msg} (in ancestor queue {q})"
                    return REJECT
            return PERMIT

        def enqueued(job: JobInfo) -> None:
            self._add(self.inqueue, job.queue, deduct_gated(job.min_resources, job))

        def handler(sign: int) -> Callable[[TaskInfo], None]:
            def fn(task: TaskInfo) -> None:
                job = ssn.jobs.get(task.job)
                if job is None or job.queue not in self.limits:
                    return
                self._add(self.allocated, job.queue, task.resreq, sign)
                cur = self.leaf_allocated.get(job.queue, Resources())
                self.leaf_allocated[job.queue] = cur + task.resreq if sign > 0 else cur - task.resreq
            return fn

        ssn.add_queue_order_fn(NAME, queue_order)
        if self.hierarchy:
            ssn.add_victim_queue_order_fn(NAME, victim_queue_order)
        ssn.add_allocatable_fn(NAME, may_allocate)
        ssn.add_preemptive_fn(NAME, may_preempt)
        ssn.add_reclaimable_fn(NAME, reclaimable)
        ssn.add_job_enqueueable_fn(NAME, enqueueable)
        ssn.add_job_enqueued_fn(NAME, enqueued)
        ssn.add_event_handler(EventHandler(allocate=handler(1), deallocate=handler(-1)))

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Capacity:
    return Capacity(CapacityArgs.from_raw(args))
