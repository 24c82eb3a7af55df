"""Turning a snapshot into a session's tasks, jobs, nodes and queues (docs/design/scheduler.md §2.1), reusing what earlier
sessions of the same scheduler derived from objects the snapshot still holds (:mod:`.memo`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import is_
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from common.objects import NodeView, PodGroupView
from common.resources import Resources

from .api import JobInfo, NodeInfo, QueueInfo, SingleJob, TaskInfo, TaskStatus, untouch
from .arrays import NodeArrays, allocation_matrix, resource_columns
from .memo import SessionMemo
from .snapshot import DEFAULT_QUEUE, Snapshot, job_priority
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
    """The session's tasks, jobs, nodes and queues for ``snap``; with ``renewing``, the previous session's task,
    job and node objects are made anew in place (only the session holding the memo's claim may ask for that)."""
    epoch = memo.epoch
    names: set[str] = set()
    for n in snap.nodes:
        names.update(n.allocatable)
    pod_table = memo.table("session.pod")
    pods = snap.pods
    found: list[_PodEntry | None] = list(map(pod_table.get, pods))
    for p, e in zip(pods, found, strict=True):
        names.update(p.requests if e is None else e.template.names)
    columns = resource_columns(names)
    vectors = memo.table("session.vectors")
    if memo.value("session.columns") != columns:
        # task vectors are laid out on the columns: templates made for other columns are of no use
        pod_table.clear()
        vectors.clear()
        memo.set_value("session.columns", columns)
        found = [None] * len(pods)
    arrays = NodeArrays(columns, _allocatable(memo, snap, columns))
    nodes = _node_infos(snap.nodes, arrays, memo, renewing)
    node_by_name = {n.name: n for n in nodes}
    queues = {name: QueueInfo.from_view(q) for name, q in snap.queues.items()}
    if DEFAULT_QUEUE not in queues:
        queues[DEFAULT_QUEUE] = QueueInfo(DEFAULT_QUEUE, 1, Resources(), Resources(), Resources(), True, 0, "",
                                          "Open", 0.0)
    jobs: dict[str, JobInfo] = {}
    tasks: dict[str, TaskInfo] = {}
    missing_queue: dict[str, str] = {}
    col = arrays.col
    for pg in snap.podgroups.values():
        jobs[pg.key] = _podgroup_job(pg, snap, memo, renewing)
    # tasks on a node, added to the node arrays at once after the loop
    rows: list[int] = []
    packed: list[IntArray] = []
    statuses: list[TaskStatus] = []
    sched = scheduler_name
    # job_priority(None, pod, snap) for groups of one, from the template's copy of its inputs
    classes = snap.priority_classes
    default_priority = snap.global_default_priority()
    # the tasks of jobs made before their tasks (PodGroups), added to them at once after the loop
    grouped: dict[str, list[TaskInfo]] = {}
    for pod, e in zip(pods, found, strict=True):
        if e is None:
            e = pod_table.put(pod, _PodEntry(TaskTemplate.of(pod, col, vectors)))
        t = e.template
        ours = t.scheduler_name == sched
        terminal = t.terminal
        if terminal and not ours:
            continue
        jid = t.job_id
        # the previous session's objects for this pod, unless another task of this session already took them
        old = renewing and e.epoch != epoch
        job_arg = jid if ours else ""
        prev = e.task if old else None
        # the previous task is taken over as it is when nothing changed it (it was made from this very template
        # and pod), else made anew in place
        kept = prev is not None and getattr(prev, "_touched", True) is False and prev.job is job_arg
        if kept and prev is not None:
            task = prev
        else:
            task = t.task(pod, job_arg, prev)
            if renewing:
                untouch(task)   # as made: the next session may take it over as it is while nothing sets it
        if renewing:
            e.task, e.epoch = task, epoch
        if ours:
            job = jobs.get(jid)
            if job is None and not t.grouped:
                pc = classes.get(t.priority_class_name)
                priority = pc.value if pc is not None else (
                    t.spec_priority if t.spec_priority is not None else default_priority)
                job = e.job if old else None
                # likewise the group of one, when its task was taken over and nothing changed the job either
                if not (kept and isinstance(job, SingleJob) and job.take_over(priority)):
                    job = JobInfo.single(jid, t.job_name, pod.namespace, DEFAULT_QUEUE, priority, t.creation_time,
                                         task, job)
                    if renewing and isinstance(job, SingleJob):
                        untouch(job)
                if renewing:
                    e.job = job
                jobs[jid] = job
            elif job is not None:
                members = grouped.get(jid)
                if members is None:
                    members = grouped[jid] = []
                members.append(task)
            if job is not None:
                tasks[task.uid] = task
            else:
                task.job = ""
        if task.node_name and not terminal:
            node = node_by_name.get(task.node_name)
            if node is not None:
                node.tasks[task.uid] = task
                rows.append(node.index)
                packed.append(t.packed)
                statuses.append(task.status)
    arrays.add_many(rows, packed, statuses)
    for jid, members in grouped.items():
        jobs[jid].add_tasks(members)
    for job in list(jobs.values()):
        if job.queue not in queues:
            missing_queue[job.uid] = job.queue
            job.job_fit_error = f"queue {job.queue!r} of job {job.uid} does not exist"
    return SessionState(arrays, nodes, node_by_name, [n.name for n in nodes], _total_allocatable(memo, snap), queues,
                        jobs, tasks, missing_queue)


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
    args = (pg.key, pg.name, pg.namespace, pg.queue or DEFAULT_QUEUE, job_priority(pg, None, snap),
            pg.min_member, dict(pg.min_task_member), pg.min_resources, pg, pg.phase or "Pending",
            pg.creation_time or 0.0, pg.annotations.get("volcano.sh/preemptable", "true").lower() != "false")
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
