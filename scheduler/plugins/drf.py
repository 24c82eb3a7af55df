"""drf: dominant resource fairness between jobs, optionally hierarchical between queues (docs/design/scheduler.md §4.4).

Flat mode orders jobs by their dominant share of the cluster (``pods`` included, as Volcano does) and lets a
preemptor evict a task only while the preemptor, with its new task, would not be ahead of the victim's job.  With
``enableHierarchy: true`` queues are placed in a weighted tree (annotations ``volcano.sh/hierarchy`` and
``volcano.sh/hierarchy-weights``) whose shares order queues and decide cross-queue reclaim.  Event handlers keep
the jobs' allocations (and the tree) current after every allocate, pipeline and eviction in the session; a job's
share is computed from its allocation when read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from operator import attrgetter

from common.resources import Resources
from scheduler.batch.drf import DrfCandidate, drf_victims, job_share
from scheduler.batch.hdrf import HdrfTree, QueuePath, parse_queue_path
from scheduler.framework.api import JobInfo, QueueInfo, TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import PERMIT, EventHandler, Session

__all__ = ["Drf"]

NAME = "drf"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ()
log = logging.getLogger(__name__)


def _sign(x: float) -> int:
    return -1 if x < 0 else (1 if x > 0 else 0)


def _annotations(queue: QueueInfo) -> Mapping[str, str]:
    if queue.view is None:
        return {}
    return (queue.view.raw.get("metadata") or {}).get("annotations") or {}


_UID = attrgetter("uid")
_ALLOCATED = attrgetter("allocated")
# what a claiming session leaves the next: the cluster total, the jobs' shares and their allocations
_Carried = tuple[Resources, dict[str, float], dict[str, Resources]]


class Drf:
    name = NAME

    def __init__(self) -> None:
        self.total = Resources()
        self.allocated: dict[str, Resources] = {}
        self._share: dict[str, float] = {}
        # the jobs whose allocation moved since their share was computed: computed when the shares are next read
        # (allocate reads a job's share only when it pushes the job, and a placed group of one is never pushed again)
        self._stale: set[str] = set()
        self.tree: HdrfTree | None = None
        self.paths: dict[str, QueuePath] = {}
        self.requests: dict[str, Resources] = {}

    @property
    def share(self) -> dict[str, float]:
        """Every job's dominant share, as of its current allocation."""
        if self._stale:
            for job_id in self._stale:
                self._share[job_id] = job_share(self.allocated[job_id], self.total)
            self._stale.clear()
        return self._share

    def _update(self, job_id: str) -> None:
        self._stale.add(job_id)

    def on_session_open(self, ssn: Session) -> None:
        self.total = ssn.total_resource
        carried: _Carried | None = ssn.memo.carried(NAME) if ssn.renewing else None
        self.allocated = self._open_allocated(ssn, carried)
        self._stale.clear()
        self._share = self._open_shares(ssn, carried)
        if ssn.renewing:
            # handed over as the session moves them, not copied: every job whose allocation (and so share) it moves
            # is one the next claiming session does not take over as it was, and sets anew
            ssn.memo.carry(NAME, (self.total, self._share, self.allocated))

        def job_order(left: JobInfo, right: JobInfo) -> int:
            ls, rs = self.share.get(left.uid, 0.0), self.share.get(right.uid, 0.0)
            return 0 if ls == rs else (-1 if ls < rs else 1)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            cands = [DrfCandidate(t.job, self.allocated.get(t.job, Resources()), t.resreq) for t in preemptees]
            chosen = drf_victims(self.allocated.get(preemptor.job, Resources()), preemptor.resreq, cands, self.total)
            return [preemptees[i] for i in chosen], PERMIT

        def on_allocate(task: TaskInfo) -> None:
            if task.job in self.allocated:
                self.allocated[task.job] = self.allocated[task.job] + task.resreq
                self._update(task.job)
                self._tree_job(ssn, task.job)

        def on_deallocate(task: TaskInfo) -> None:
            if task.job in self.allocated:
                self.allocated[task.job] = self.allocated[task.job] - task.resreq
                self._update(task.job)
                self._tree_job(ssn, task.job)

        ssn.add_job_order_fn(NAME, job_order, key=lambda job: self.share.get(job.uid, 0.0))   # lower share first
        ssn.add_preemptable_fn(NAME, preemptable)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))
        opt = ssn.conf.plugin(NAME)
        self.tree = None
        if opt is not None and opt.hierarchy:
            self._open_hierarchy(ssn)

    @staticmethod
    def _open_allocated(ssn: Session, carried: _Carried | None) -> dict[str, Resources]:
        """Every job's allocation at session open: what its Allocated, Binding, Bound and Running tasks request
        (JobInfo keeps it).  A claiming session takes the previous one's map over and sets only the jobs it did not
        take over as they were (new, remade, or moved by that session), dropping those gone; else C loops read every
        job."""
        jobs, gone = ssn.jobs, ssn.gone_jobs
        if carried is None or gone is None:
            values = jobs.values()
            return dict(zip(map(_UID, values), map(_ALLOCATED, values), strict=True))
        allocated = carried[2]
        for uid in gone:
            allocated.pop(uid, None)
        for uid in ssn.changed_jobs:
            allocated[uid] = jobs[uid].allocated
        return allocated

    def _open_shares(self, ssn: Session, carried: _Carried | None) -> dict[str, float]:
        """Every job's share at session open.  A claiming session starts from the previous one's shares (when the
        cluster total is the same) and computes only those of the jobs it did not take over as they were."""
        if carried is not None and carried[0] == self.total:
            share: dict[str, float] = carried[1]
            changed, gone = ssn.changed_jobs, ssn.gone_jobs
            # the shares of the jobs not kept, and of those gone, are made anew or dropped
            for uid in changed | (share.keys() - self.allocated.keys() if gone is None else gone):
                share.pop(uid, None)
            todo: Iterable[str] = [uid for uid in changed if uid in self.allocated]
        else:
            share, todo = {}, self.allocated
        shares: dict[Resources, float] = {}
        for uid in todo:
            alloc = self.allocated[uid]
            got = shares.get(alloc)
            if got is None:
                got = shares[alloc] = job_share(alloc, self.total)
            share[uid] = got
        return share

    # ---- hierarchical mode ----------------------------------------------------------------------------------------

    def _open_hierarchy(self, ssn: Session) -> None:
        self.tree = HdrfTree(self.total)
        self.paths = {}
        for q in ssn.queues.values():
            try:
                self.paths[q.name] = parse_queue_path(q.name, _annotations(q))
            except ValueError as exc:   # a bad annotation must not stop the session; the queue sits under root
                log.warning("%s", exc)
                self.paths[q.name] = parse_queue_path(q.name, {})
        self.requests = {}
        for job in ssn.jobs.values():
            if job.queue in self.paths:
                self.requests[job.uid] = job.total_request()
                self.tree.set_job(self.paths[job.queue], job.uid, self.allocated[job.uid], self.requests[job.uid])
        self.tree.refresh()
        tree = self.tree

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            lp, rp = self.paths.get(left.name), self.paths.get(right.name)
            if lp is None or rp is None:
                return 0
            return _sign(tree.compare_queues(lp, rp))

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            rjob = ssn.jobs.get(reclaimer.job)
            if rjob is None or rjob.queue not in self.paths or rjob.uid not in self.requests:
                return [], PERMIT
            me = (self.paths[rjob.queue], rjob.uid, reclaimer.resreq)
            victims: list[TaskInfo] = []
            for t in reclaimees:
                vjob = ssn.jobs.get(t.job)
                if vjob is None or vjob.queue not in self.paths or vjob.uid not in self.requests:
                    continue
                if tree.reclaim_allows(me, (self.paths[vjob.queue], vjob.uid, t.resreq)):
                    victims.append(t)
            return victims, PERMIT

        ssn.add_queue_order_fn(NAME, queue_order)
        ssn.add_reclaimable_fn(NAME, reclaimable)

    def _tree_job(self, ssn: Session, job_id: str) -> None:
        if self.tree is None or job_id not in self.requests:
            return
        job = ssn.jobs[job_id]
        self.tree.set_job(self.paths[job.queue], job_id, self.allocated[job_id], self.requests[job_id])
        self.tree.refresh()

    def on_session_close(self, ssn: Session) -> None:
        self.tree = None


@register_plugin(NAME)
def _build(args: Arguments) -> Drf:
    return Drf()
