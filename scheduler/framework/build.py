"""Turning a snapshot into a session's tasks, jobs, nodes and queues (docs/design/scheduler.md §2.1), reusing what earlier
sessions of the same scheduler derived from objects the snapshot still holds (:mod:`.memo`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import is_
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from common.objects import NodeView, PodGroupView, PodView
from common.resources import Resources

from .api import JobInfo, NodeInfo, QueueInfo, SingleJob, TaskInfo, TaskStatus, untouch
from .arrays import NodeArrays, allocation_matrix, resource_columns
from .carried import CarriedParts, open_carried
from .inplay import JobsInPlay
from .memo import SessionMemo
from .snapshot import DEFAULT_QUEUE, Snapshot, podgroup_job_args
from .template import TaskTemplate

__all__ = ["SessionState", "build_state"]

T = TypeVar("T")
IntArray = npt.NDArray[np.int64]


@dataclass(slots=True)
class SessionState:
    arrays: NodeArrays
    nodes: list[NodeInfo]
    node_by_name: dict[str, NodeInfo]
    node_names: list[str]
    total_resource: Resources
    queues: dict[str, QueueInfo]
    jobs: dict[str, JobInfo]
    tasks: dict[str, TaskInfo]
    missing_queue: dict[str, str]
    # the jobs other than the groups of one this session took over exactly as the previous claiming session had them
    # (the same object, nothing set on it or its task since: what that session derived from one of them alone still
    # holds; every job when not renewing); a few per session at steady state, where the kept ones are most
    changed_jobs: set[str]
    # a superset of the jobs the previous claiming session had and this one has not (None: not known)
    gone_jobs: set[str] | None
    # when every task and job was handed over untouched with this watch list: those touched since, as they are
    # first touched (None: look at each task's flag)
    watched: list[Any] | None
    # with ``watched``: the jobs an action may have anything to do with (None: every job may)
    in_play: JobsInPlay | None = None


class _PodEntry:
    """What sessions keep per pod object: its task template and, for the session allowed to renew them, the task
    (and the group-of-one job) it made last, with the epoch of the session that last took them."""

    __slots__ = ("template", "task", "job", "epoch")

    def __init__(self, template: TaskTemplate) -> None:
        self.template = template
        self.task: TaskInfo | None = None
        self.job: JobInfo | None = None
        self.epoch = -1


class _Renewable(Generic[T]):
    __slots__ = ("obj", "epoch")

    def __init__(self, obj: T, epoch: int) -> None:
        self.obj = obj
        self.epoch = epoch


def _total_allocatable(memo: SessionMemo, snap: Snapshot) -> Resources:
    """``snap.total_allocatable()``, reused while the snapshot holds the very same node objects."""
    return memo.for_objects("total-allocatable", snap.nodes, snap.total_allocatable)


def _allocatable(memo: SessionMemo, snap: Snapshot, columns: Sequence[str]) -> IntArray:
    """The nodes' allocatable matrix on ``columns``, reused while the snapshot holds the very same node objects in
    the same order and the columns are the same (read-only: NodeArrays copies it)."""
    key = tuple(columns)
    hit = memo.value("session.allocatable")
    nodes = snap.nodes
    if hit is not None and hit[0] == key and len(hit[1]) == len(nodes) and all(map(is_, hit[1], nodes)):
        matrix: IntArray = hit[2]
        return matrix
    matrix = allocation_matrix({c: j for j, c in enumerate(columns)}, [n.allocatable for n in nodes])
    matrix.flags.writeable = False
    memo.set_value("session.allocatable", (key, tuple(nodes), matrix))
    return matrix


def build_state(snap: Snapshot, memo: SessionMemo, *, renewing: bool, scheduler_name: str) -> SessionState:
    """The session's tasks, jobs, nodes and queues for ``snap``; with ``renewing`` (only the session holding the
    memo's claim may ask for that), the state carried from the previous session brought up to date by the cache's
    changes (:mod:`.carried`), or else the previous session's task, job and node objects made anew in place."""
    if renewing:
        parts = open_carried(snap, memo, scheduler_name)
        if parts is not None:
            return _carried_state(snap, memo, parts)
    columns, found = _columns(snap, memo)
    arrays = NodeArrays(columns, _allocatable(memo, snap, columns))
    nodes = _node_infos(snap.nodes, arrays, memo, renewing)
    node_by_name = {n.name: n for n in nodes}
    queues = _queue_infos(snap)
    jobs: dict[str, JobInfo] = {}
    for pg in snap.podgroups.values():
        jobs[pg.key] = _podgroup_job(pg, snap, memo, renewing)
    builder = _TaskBuilder(snap, memo, arrays, node_by_name, jobs, renewing, scheduler_name)
    tasks = builder.build(found)
    missing_queue = _missing_queues(jobs, queues)
    kept = builder.kept - missing_queue.keys()   # those were just given a fit error
    return SessionState(arrays, nodes, node_by_name, [n.name for n in nodes], _total_allocatable(memo, snap), queues,
                        jobs, tasks, missing_queue, jobs.keys() - kept, None, None)


def _carried_state(snap: Snapshot, memo: SessionMemo, parts: CarriedParts) -> SessionState:
    queues = _queue_infos(snap)
    jobs = parts.jobs
    # a group of one is in the default queue, which always exists: only PodGroups' queues may be missing
    missing_queue = _missing_queues({k: jobs[k] for k in snap.podgroups if k in jobs}, queues)
    return SessionState(parts.arrays, parts.nodes, parts.node_by_name, parts.node_names,
                        _total_allocatable(memo, snap), queues, jobs, parts.tasks, missing_queue,
                        parts.changed | missing_queue.keys(), parts.gone, parts.watch, parts.in_play)


def _columns(snap: Snapshot, memo: SessionMemo) -> tuple[list[str], list[_PodEntry | None]]:
    """The resource columns of the session and each pod's memo entry (None where it has none yet); the pod entries
    and task vectors are dropped when the columns changed, since they are laid out on them."""
    names: set[str] = set()
    for n in snap.nodes:
        names.update(n.allocatable)
    pod_table = memo.table("session.pod")
    pods = snap.pods
    found: list[_PodEntry | None] = list(map(pod_table.get, pods))
    # templates of one shape share their set of names: each distinct set is added once
    names.update(*{e.template.names for e in found if e is not None})
    for p, e in zip(pods, found, strict=True):
        if e is None:
            names.update(p.requests)
    columns = resource_columns(names)
    if memo.value("session.columns") != columns:
        # task vectors are laid out on the columns: templates made for other columns are of no use
        pod_table.clear()
        memo.table("session.vectors").clear()
        memo.set_value("session.columns", columns)
        found = [None] * len(pods)
    return columns, found


def _queue_infos(snap: Snapshot) -> dict[str, QueueInfo]:
    """The snapshot's queues, with the default queue added when the cluster has none of that name."""
    queues = {name: QueueInfo.from_view(q) for name, q in snap.queues.items()}
    if DEFAULT_QUEUE not in queues:
        queues[DEFAULT_QUEUE] = QueueInfo(DEFAULT_QUEUE, 1, Resources(), Resources(), Resources(), True, 0, "",
                                          "Open", 0.0)
    return queues


def _missing_queues(jobs: dict[str, JobInfo], queues: dict[str, QueueInfo]) -> dict[str, str]:
    """Job uid -> queue name for the jobs whose queue does not exist, each marked with a fit error saying so."""
    missing_queue: dict[str, str] = {}
    for job in list(jobs.values()):
        if job.queue not in queues:
            missing_queue[job.uid] = job.queue
            job.job_fit_error = f"queue {job.queue!r} of job {job.uid} does not exist"
    return missing_queue


class _TaskBuilder:
    """One pass over the snapshot's pods: each becomes a task (the previous session's, taken over or renewed in
    place when ``renewing``), joins its job (a PodGroup's, or a group of one made here) and, when it runs on a
    known node, that node; the node arrays and PodGroup jobs get their tasks at once at the end."""

    def __init__(self, snap: Snapshot, memo: SessionMemo, arrays: NodeArrays, node_by_name: dict[str, NodeInfo],
                 jobs: dict[str, JobInfo], renewing: bool, scheduler_name: str) -> None:
        self.snap = snap
        self.pod_table = memo.table("session.pod")
        self.vectors = memo.table("session.vectors")
        self.epoch = memo.epoch
        self.previous_claim = memo.previous_claim
        self.kept: set[str] = set()
        self.arrays = arrays
        self.node_by_name = node_by_name
        self.jobs = jobs
        self.renewing = renewing
        self.sched = scheduler_name
        # job_priority(None, pod, snap) for groups of one, from the template's copy of its inputs
        self.classes = snap.priority_classes
        self.default_priority = snap.global_default_priority()
        self.tasks: dict[str, TaskInfo] = {}
        # tasks on a node, added to the node arrays at once after the loop
        self.rows: list[int] = []
        self.packed: list[IntArray] = []
        self.statuses: list[TaskStatus] = []
        # the tasks of jobs made before their tasks (PodGroups), added to them at once after the loop
        self.grouped: dict[str, list[TaskInfo]] = {}

    def build(self, found: list[_PodEntry | None]) -> dict[str, TaskInfo]:
        """The session's tasks by uid, for the snapshot's pods and their memo entries ``found``."""
        col = self.arrays.col
        take_over = self._take_over if self.renewing else None
        for pod, e in zip(self.snap.pods, found, strict=True):
            if e is None:
                e = self.pod_table.put(pod, _PodEntry(TaskTemplate.of(pod, col, self.vectors)))
            elif take_over is not None and take_over(e):
                continue
            self._add(pod, e)
        self.arrays.add_many(self.rows, self.packed, self.statuses)
        jobs = self.jobs
        for jid, members in self.grouped.items():
            jobs[jid].add_tasks(members)
        return self.tasks

    def _take_over(self, e: _PodEntry) -> bool:
        """What :meth:`_add` does for the commonest pod of a renewing session — this scheduler's, not terminal,
        without a PodGroup, its task and group of one left untouched by the previous session — in one go; False
        (with nothing done) for any other pod."""
        t = e.template
        task, job = e.task, e.job
        jid = t.job_id
        if (task is None or e.epoch == self.epoch or t.terminal or t.grouped or t.scheduler_name != self.sched
                or getattr(task, "_touched", True) is not False or task.job is not jid or jid in self.jobs
                or not isinstance(job, SingleJob)):
            return False
        priority = t.single_priority(self.classes, self.default_priority)
        if not job.take_over(priority):
            return False
        if e.epoch == self.previous_claim:
            self.kept.add(jid)
        e.epoch = self.epoch
        self.jobs[jid] = job
        self.tasks[task.uid] = task
        if task.node_name:
            self._place(task, t.packed)
        return True

    def _place(self, task: TaskInfo, packed: IntArray) -> None:
        """Count a bound task on its node (one row of the session's node accounting); unknown nodes are skipped."""
        node = self.node_by_name.get(task.node_name)
        if node is not None:
            node.tasks[task.uid] = task
            self.rows.append(node.index)
            self.packed.append(packed)
            self.statuses.append(task.status)

    def _add(self, pod: PodView, e: _PodEntry) -> None:
        t = e.template
        ours = t.scheduler_name == self.sched
        terminal = t.terminal
        if terminal and not ours:
            return
        # the previous session's objects for this pod, unless another task of this session already took them
        old = self.renewing and e.epoch != self.epoch
        job_arg = t.job_id if ours else ""
        task, kept = self._task(pod, e, job_arg, old)
        if ours:
            self._join_job(pod, e, task, kept, old)
        if task.node_name and not terminal:
            self._place(task, t.packed)

    def _task(self, pod: PodView, e: _PodEntry, job_arg: str, old: bool) -> tuple[TaskInfo, bool]:
        """The pod's task and whether it is the previous session's, taken over as it is: that happens when nothing
        changed it (it was made from this very template and pod); otherwise it is made anew in place."""
        prev = e.task if old else None
        kept = prev is not None and getattr(prev, "_touched", True) is False and prev.job is job_arg
        if kept and prev is not None:
            task = prev
        else:
            task = e.template.task(pod, job_arg, prev)
            if self.renewing:
                untouch(task)   # as made: the next session may take it over as it is while nothing sets it
        if self.renewing:
            e.task, e.epoch = task, self.epoch
        return task, kept

    def _join_job(self, pod: PodView, e: _PodEntry, task: TaskInfo, kept: bool, old: bool) -> None:
        """Puts this scheduler's task in its job: its PodGroup's (at the end), or a group of one made (or taken
        over) here; a task whose PodGroup is missing belongs to no job and is not one of the session's tasks."""
        t = e.template
        jid = t.job_id
        job = self.jobs.get(jid)
        if job is None and not t.grouped:
            job = self._single_job(pod, e, task, kept, old)
        elif job is not None:
            members = self.grouped.get(jid)
            if members is None:
                members = self.grouped[jid] = []
            members.append(task)
        if job is not None:
            self.tasks[task.uid] = task
        else:
            task.job = ""

    def _single_job(self, pod: PodView, e: _PodEntry, task: TaskInfo, kept: bool, old: bool) -> JobInfo:
        """The group of one of a pod without a PodGroup, taken over when its task was and nothing changed the job
        either, else made (anew in place when ``renewing``)."""
        t = e.template
        priority = t.single_priority(self.classes, self.default_priority)
        job = e.job if old else None
        if not (kept and isinstance(job, SingleJob) and job.take_over(priority)):
            job = JobInfo.single(t.job_id, t.job_name, pod.namespace, DEFAULT_QUEUE, priority, t.creation_time,
                                 task, job)
            if self.renewing and isinstance(job, SingleJob):
                untouch(job)
        if self.renewing:
            e.job = job
        self.jobs[t.job_id] = job
        return job


def _node_infos(views: Sequence[NodeView], arrays: NodeArrays, memo: SessionMemo, renewing: bool) -> list[NodeInfo]:
    if not renewing:
        return [NodeInfo(v, i, arrays) for i, v in enumerate(views)]
    table = memo.table("session.node")
    epoch = memo.epoch
    out: list[NodeInfo] = []
    for i, v in enumerate(views):
        e: _Renewable[NodeInfo] | None = table.get(v)
        if e is None:
            e = table.put(v, _Renewable(NodeInfo(v, i, arrays), epoch))
        elif e.epoch == epoch:   # the same view twice in one snapshot
            out.append(NodeInfo(v, i, arrays))
            continue
        else:
            e.obj.renew(v, i, arrays)
            e.epoch = epoch
        out.append(e.obj)
    return out

def _podgroup_job(pg: PodGroupView, snap: Snapshot, memo: SessionMemo, renewing: bool) -> JobInfo:
    args = podgroup_job_args(pg, snap)
    if not renewing:
        return JobInfo(*args)
    table = memo.table("session.podgroup")
    epoch = memo.epoch
    e: _Renewable[JobInfo] | None = table.get(pg)
    if e is None:
        e = table.put(pg, _Renewable(JobInfo(*args), epoch))
    elif e.epoch == epoch:
        return JobInfo(*args)
    else:
        e.obj.renew(*args)
        e.epoch = epoch
    return e.obj
