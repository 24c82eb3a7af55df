"""A session's tasks, jobs, per-node task maps and node accounting carried from one session to the next, and
brought up to date by what changed since: the pods, nodes and PodGroups the scheduler cache's change log names,
and the objects the previous session touched (docs/design/scheduler.md §2.1).

Why a *base* and a rollback rather than a copy per session: the carried state is kept equal to what a session built
from the same snapshot with nothing carried holds as it opens (:func:`.build.build_state`).  Sessions work on it
in place — copying 11,000 tasks and their jobs every session is the cost this module removes — and every way a
session changes it is noted: a task or group of one that has anything set on it joins a watch list
(:class:`~.api.Tracked`), and every node row whose tasks change is in the node arrays' change log.  The next
session makes those objects anew from their pods before applying the cache's changes, so the correctness
argument is local: an object neither touched nor named by the cache is what a rebuild would make of it.  The node
accounting matrices are the one exception: small next to the tasks, the session gets a copy of the base.

Nodes coming or going lay the rows out anew (a node's info, task map and accounting move to its new row).  What
cannot be followed one object at a time — the resource columns, PriorityClasses, a PodGroup named like a pod's group
of one, a change log that no longer reaches back — makes the state anew from the snapshot, with the same code that
applies a new pod; pods sharing a uid are not carried at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from common.objects import PodGroupView, PodView

from .api import GroupJob, JobInfo, NodeInfo, SingleJob, TaskInfo, TaskStatus, touch_quietly, untouch
from .arrays import NodeArrays, allocation_matrix, resource_columns
from .changes import Changes
from .inplay import JobsInPlay, needs_look
from .memo import SessionMemo
from .snapshot import DEFAULT_QUEUE, Snapshot, podgroup_job_args
from .template import TaskTemplate

if TYPE_CHECKING:
    from .runs import CarriedRuns

__all__ = ["CarriedParts", "CarriedState", "Rebuild", "open_carried", "opened_state"]

IntArray = npt.NDArray[np.int64]
_Batch = tuple[list[int], list[IntArray], list[TaskStatus]]
_KEY = "session.carried"


class Rebuild(Exception):
    """The changes since the carried state cannot be applied one object at a time: make it anew."""


class _Pod:
    """One pod of the carried state: its view and template, the task made from them (None for a finished pod of
    another scheduler, which a session ignores), its group of one, the node row it counts on (-1: none), its
    place in the cache's pod order, and the job its task names."""

    __slots__ = ("pod", "template", "task", "job", "row", "seq", "job_arg")

    def __init__(self, pod: PodView, template: TaskTemplate, seq: int) -> None:
        self.pod = pod
        self.template = template
        self.task: TaskInfo | None = None
        self.job: SingleJob | None = None
        self.row = -1
        self.seq = seq
        self.job_arg = ""


class CarriedState:
    """What a renewing session opens from (see the module docstring); made by :meth:`build`, brought up to date by
    :meth:`update`.  Tasks and groups of one are given to the session as they are; ``base`` is the node accounting
    of every pod as the cache shows it, copied for each session."""

    def __init__(self, snap: Snapshot, memo: SessionMemo, scheduler_name: str) -> None:
        self.sched = scheduler_name
        self.log = snap.changes
        self.generation = snap.generation
        self.claim = memo.claimed_epoch
        self.classes = snap.priority_classes
        self.default_priority = snap.global_default_priority()
        self.node_names = [v.name for v in snap.nodes]
        self.node_row = {name: i for i, name in enumerate(self.node_names)}
        self.node_name_sets = {frozenset(v.allocatable) for v in snap.nodes}
        self.podgroup_keys = set(snap.podgroups)
        self.columns = _columns(snap)
        self.col = {c: j for j, c in enumerate(self.columns)}
        self.base = NodeArrays(self.columns, allocation_matrix(self.col, [v.allocatable for v in snap.nodes]))
        self.nodes = [NodeInfo(v, i, self.base) for i, v in enumerate(snap.nodes)]
        self.node_by_name = {n.name: n for n in self.nodes}
        self.on_node: list[dict[str, TaskInfo]] = [{} for _ in self.nodes]
        self.pods: dict[str, _Pod] = {}
        self.by_uid: dict[str, _Pod] = {}
        self.by_job: dict[str, _Pod] = {}
        self.tasks: dict[str, TaskInfo] = {}
        self.single_jobs: dict[str, JobInfo] = {}
        # the groups of one that may need a look (inplay.needs_look), by uid, with their place in the pods' order,
        # and those without a schedule_start (made anew since enqueue last stamped them)
        self.in_play: dict[str, int] = {}
        self.unstamped: set[str] = set()
        self.grouped: dict[str, dict[str, TaskInfo]] = {}
        # this scheduler's pods naming a PodGroup, by job and pod key, whether the PodGroup exists or not
        self.by_group: dict[str, dict[str, _Pod]] = {}
        self.reorder = False   # tasks joined the session's tasks out of the pods' order
        self.podgroup_jobs: dict[str, GroupJob] = {}
        self.dirty_groups: set[str] = set()   # PodGroup jobs to make anew: their PodGroup or members changed
        self.name_counts: dict[frozenset[str], int] = {}
        self.watch: list[Any] = []          # carried tasks and jobs touched since they were made
        self.session_arrays: NodeArrays | None = None   # the copy the last session got, with its change log
        self.dirty_rows: set[int] = set()   # rows whose base task map changed since the session copies were made
        self.fresh: set[str] = set()        # groups of one made (anew) while opening this session
        self.gone: set[str] = set()         # while opening: jobs dropped (groups of one, PodGroups) since the last
        self.redo: dict[int, _Pod] = {}     # while opening: pods whose objects the last session touched
        self.seq = 0
        self.vectors = memo.table("session.vectors")
        if memo.value("session.columns") != self.columns:
            # task vectors are laid out on the columns: those made for other columns are of no use
            memo.table("session.pod").clear()
            self.vectors.clear()
            memo.set_value("session.columns", self.columns)
        self.batch: _Batch | None = None    # while building or updating: what to add to the node accounting at once
        self.templates: dict[str, tuple[PodView, TaskTemplate]] = {}   # while building: reusable templates
        # the rows whose accounting or node view may differ from what the previous claiming session opened with,
        # and whether any node view does (None: not known, the state made anew or its rows laid out anew)
        self.moved: set[int] | None = None
        self.views_moved = False
        self.runs: CarriedRuns | None = None   # allocate's kept states per pod signature (.runs), carried along

    # ---- making ---------------------------------------------------------------------------------------------------

    @classmethod
    def build(cls, snap: Snapshot, memo: SessionMemo, scheduler_name: str,
              previous: CarriedState | None = None) -> CarriedState:
        """The state of ``snap`` made from nothing: every pod appended in the cache's order (with the templates of
        ``previous`` for the pod objects it holds, when they were made for the same columns)."""
        assert snap.pod_by_key is not None
        state = cls(snap, memo, scheduler_name)
        if previous is not None and previous.columns == state.columns:
            state.templates = {key: (rec.pod, rec.template) for key, rec in previous.pods.items()}
        batch: _Batch = ([], [], [])
        state.batch = batch
        for key, pod in snap.pod_by_key.items():
            state._append(key, pod)
        state.batch = None
        state.templates = {}
        state.base.add_many(*batch)
        state._check_columns()
        return state

    def follows(self, snap: Snapshot, memo: SessionMemo, scheduler_name: str) -> Changes | None:
        """The changes from this state's snapshot to ``snap`` when they can be applied, else None (another cache or
        scheduler name, a log that no longer reaches back, or task vectors laid out anew by another session)."""
        if (self.sched != scheduler_name or snap.changes is None or snap.changes is not self.log
                or memo.value("session.columns") != self.columns):
            return None
        changes = snap.changes.between(self.generation, snap.generation)
        if changes is None or "PriorityClass" in changes:
            return None
        return changes

    def update(self, snap: Snapshot, memo: SessionMemo, changes: Changes) -> None:
        """Undo what the last session did to the carried objects, then apply ``changes`` (:class:`Rebuild` when
        they cannot be applied one object at a time)."""
        self.vectors = memo.table("session.vectors")
        self.fresh = set()
        self.gone = set()
        self.redo = {}
        self.moved, self.views_moved = set(), False
        self._settled()
        self._touched()
        self._update_nodes(snap, changes.get("Node", {}))
        # the tasks placed below are added to the node accounting at once, at the end (as a rebuild adds them)
        batch: _Batch = ([], [], [])
        self.batch = batch
        for key in changes.get("PodGroup", {}):
            if key in snap.podgroups and key not in self.podgroup_keys:
                self._podgroup_came(key)
            elif key in self.podgroup_keys and key not in snap.podgroups:
                self._podgroup_went(key)
            else:
                self.dirty_groups.add(key)
        self._update_pods(snap, changes.get("Pod", {}))
        for rec in list(self.redo.values()):
            self._make(rec)
        self.batch = None
        self.base.add_many(*batch)
        self._check_columns()
        if self.reorder:
            self.tasks = {}
            for rec in self.pods.values():
                if rec.job_arg and rec.task is not None:
                    self.tasks[rec.template.uid] = rec.task
            self.reorder = False
        self.generation = snap.generation

    def _podgroup_came(self, key: str) -> None:
        """The pods naming a new PodGroup join its job (and the session's tasks, at their place in the order)."""
        if key in self.single_jobs:
            raise Rebuild(f"PodGroup {key} has the name of a pod's group of one")
        self.podgroup_keys.add(key)
        self.dirty_groups.add(key)
        members = self.grouped[key] = {}
        for rec in self.by_group.get(key, {}).values():
            rec.job_arg = key
            self._make(rec)
            assert rec.task is not None
            members[rec.template.uid] = rec.task
            self.reorder = True

    def _podgroup_went(self, key: str) -> None:
        """The pods of a PodGroup that went belong to no job (nor to the session's tasks) any more."""
        recs = self.by_group.get(key, {})
        if len(self.grouped.get(key, {})) != len(recs):
            raise Rebuild(f"a pod's group of one was in PodGroup {key}")
        self.podgroup_keys.discard(key)
        self.podgroup_jobs.pop(key, None)
        self.gone.add(key)
        self.grouped.pop(key, None)
        for rec in recs.values():
            rec.job_arg = ""
            self._make(rec)
            assert rec.task is not None
            del self.tasks[rec.template.uid]

    def _check_columns(self) -> None:
        names: set[str] = set()
        names.update(*self.node_name_sets)
        names.update(*(s for s, n in self.name_counts.items() if n > 0))
        if resource_columns(names) != self.columns:
            raise Rebuild("the resource columns changed")

    # ---- what the last session did --------------------------------------------------------------------------------

    def _settled(self) -> None:
        """Drop from :attr:`in_play` the groups of one the last session left settled, and from :attr:`unstamped`
        those it stamped: those it did not touch are as it left them (a touched one is made anew by the end of
        :meth:`update`, and put back as it is then)."""
        jobs = self.single_jobs
        for uid in [uid for uid in self.in_play if not needs_look(jobs[uid])]:
            del self.in_play[uid]
        self.unstamped = {uid for uid in self.unstamped if jobs[uid].schedule_start is None}

    def _touched(self) -> None:
        """Note the pods whose task or group of one the last session touched (:attr:`redo`: made anew from the pod
        by the end of :meth:`update`, when a change of the pod does not do it first), and the node rows whose task
        maps it changed (given their carried maps again)."""
        watched = list(self.watch)
        self.watch.clear()   # the same list: every carried object joins it when touched
        for obj in watched:
            if isinstance(obj, GroupJob):
                if self.podgroup_jobs.get(obj.uid) is not obj:
                    raise Rebuild("a touched PodGroup job is no longer carried")
                self.dirty_groups.add(obj.uid)
                continue
            rec = self.by_uid.get(obj.uid) if isinstance(obj, TaskInfo) else self.by_job.get(obj.uid)
            if rec is None or (rec.task is not obj and rec.job is not obj):
                raise Rebuild("a touched object is no longer carried")
            self.redo[id(rec)] = rec
        if self.session_arrays is not None:
            self.dirty_rows.update(self.session_arrays.changes)

    # ---- pods -----------------------------------------------------------------------------------------------------

    def _update_pods(self, snap: Snapshot, changed: dict[str, bool]) -> None:
        """Drop the pods that went, remake those that changed in place, append the new ones in the cache's order."""
        by_key = snap.pod_by_key
        assert by_key is not None
        pods = self.pods
        for key, removed in changed.items():
            rec = pods.get(key)
            if rec is None:
                continue
            pod = by_key.get(key)
            if removed or pod is None:
                self._drop(key, rec)
            elif pod is not rec.pod:
                self._replace(rec, pod)
        # pods present before and after keep their place in the cache's order; the others follow them
        tail = snap.pods[len(pods):]
        for pod in tail:
            key = pod.key
            if key in pods or key not in changed:
                raise Rebuild(f"pod {key} is not where the cache's order puts it")
            self._append(key, pod)

    def _template(self, pod: PodView) -> TaskTemplate:
        return TaskTemplate.of(pod, self.col, self.vectors)

    def _append(self, key: str, pod: PodView) -> None:
        hit = self.templates.get(key)
        rec = _Pod(pod, hit[1] if hit is not None and hit[0] is pod else self._template(pod), self.seq)
        self.seq += 1
        self.pods[key] = rec
        self._count(rec.template.names, 1)
        t = rec.template
        ours = t.scheduler_name == self.sched
        if t.terminal and not ours:
            return
        if t.uid in self.by_uid:
            raise Rebuild(f"two pods with uid {t.uid}")
        self.by_uid[t.uid] = rec
        if ours and t.grouped:
            self.by_group.setdefault(t.job_id, {})[key] = rec
        joins = ours and t.job_id in self.podgroup_keys
        rec.job_arg = t.job_id if joins or (ours and not t.grouped) else ""
        self._make(rec)
        task = rec.task
        assert task is not None
        if joins:
            self.grouped.setdefault(t.job_id, {})[t.uid] = task
        elif rec.job is not None:
            self.single_jobs[t.job_id] = rec.job
            self.by_job[t.job_id] = rec
        if rec.job_arg:
            self.tasks[t.uid] = task
        self._place(rec)

    def _make(self, rec: _Pod) -> None:
        """The record's task (and group of one) as a session builds them from its pod, made anew in place."""
        t = rec.template
        self.redo.pop(id(rec), None)
        if rec.task is not None:
            touch_quietly(rec.task)   # remade below without joining the watch list
        task = t.task(rec.pod, rec.job_arg, rec.task)
        untouch(task, self.watch)
        rec.task = task
        if rec.job_arg and rec.job is None:   # a PodGroup's member
            self.dirty_groups.add(rec.job_arg)
        if rec.job_arg and not t.grouped and t.job_id not in self.podgroup_keys:
            priority = t.single_priority(self.classes, self.default_priority)
            if rec.job is not None:
                touch_quietly(rec.job)
            job = JobInfo.single(t.job_id, t.job_name, rec.pod.namespace, DEFAULT_QUEUE, priority, t.creation_time,
                                 task, rec.job)
            assert isinstance(job, SingleJob)
            untouch(job, self.watch)
            rec.job = job
            self.fresh.add(t.job_id)
            self.unstamped.add(t.job_id)
            if needs_look(job):
                self.in_play[t.job_id] = rec.seq
            else:
                self.in_play.pop(t.job_id, None)

    def _replace(self, rec: _Pod, pod: PodView) -> None:
        """A pod that changed in place (bound, started, finished, relabelled): its task remade, its place kept."""
        old = rec.template
        t = old.rebound(rec.pod, pod) or self._template(pod)
        if (t.uid != old.uid or t.job_id != old.job_id or t.grouped != old.grouped or t.scheduler_name !=
                old.scheduler_name or (rec.task is None) != (t.terminal and t.scheduler_name != self.sched)):
            raise Rebuild(f"pod {pod.key} changed what it belongs to")
        self._unplace(rec)
        self._count(old.names, -1)
        self._count(t.names, 1)
        rec.pod, rec.template = pod, t
        if rec.task is not None:
            self._make(rec)
            self._place(rec)

    def _drop(self, key: str, rec: _Pod) -> None:
        self.redo.pop(id(rec), None)
        self._unplace(rec)
        self._count(rec.template.names, -1)
        del self.pods[key]
        t = rec.template
        if rec.task is None:
            return
        del self.by_uid[t.uid]
        self.tasks.pop(t.uid, None)
        if rec.job is not None:
            del self.single_jobs[t.job_id]
            del self.by_job[t.job_id]
            self.in_play.pop(t.job_id, None)
            self.unstamped.discard(t.job_id)
            self.gone.add(t.job_id)
        members = self.grouped.get(t.job_id)
        if members is not None and members.pop(t.uid, None) is not None:
            self.dirty_groups.add(t.job_id)
        named = self.by_group.get(t.job_id)
        if named is not None and named.pop(key, None) is not None and not named:
            del self.by_group[t.job_id]

    def _count(self, names: frozenset[str], delta: int) -> None:
        self.name_counts[names] = self.name_counts.get(names, 0) + delta

    # ---- nodes ----------------------------------------------------------------------------------------------------

    def _place(self, rec: _Pod) -> None:
        """Count the record's task on its node, as a rebuild would: at its place in the pod order."""
        t = rec.template
        if not t.node_name or t.terminal or rec.task is None:
            return
        row = self.node_row.get(t.node_name)
        if row is None:
            return
        task = rec.task
        here = self.on_node[row]
        if here and self.by_uid[next(reversed(here))].seq > rec.seq:
            here[t.uid] = task
            ordered = sorted(here.items(), key=lambda item: self.by_uid[item[0]].seq)
            here.clear()
            here.update(ordered)
        else:
            here[t.uid] = task
        if self.batch is None:
            self.base.add(row, t.vector, t.status, t.nonzero)
        else:
            self.batch[0].append(row)
            self.batch[1].append(t.packed)
            self.batch[2].append(t.status)
        rec.row = row
        self.dirty_rows.add(row)

    def _unplace(self, rec: _Pod) -> None:
        row = rec.row
        if row < 0:
            return
        t = rec.template
        del self.on_node[row][t.uid]
        self.base.remove(row, t.vector, t.status, t.nonzero)
        rec.row = -1
        self.dirty_rows.add(row)

    def _update_nodes(self, snap: Snapshot, changed: dict[str, bool]) -> None:
        """Nodes changed in place (labels, taints, allocatable): their views and allocatable rows; nodes added or
        gone (or no longer Ready): every row laid out anew (:meth:`_relayout`)."""
        if not changed:
            return
        names = [v.name for v in snap.nodes]
        if names != self.node_names:
            self.moved = None
            self._relayout(snap, names)
        else:
            base = self.base
            for name in changed:
                row = self.node_row.get(name)
                if row is None or snap.nodes[row] is self.nodes[row].view:
                    continue
                view = self.nodes[row].view = snap.nodes[row]
                base.allocatable[row] = allocation_matrix(self.col, [view.allocatable])[0]
                base.idle[row] = base.allocatable[row] - base.used[row]
                self._viewed(row)
        self.node_name_sets = {frozenset(v.allocatable) for v in snap.nodes}

    def _viewed(self, row: int) -> None:
        """Note a node whose view changed in place (its labels, taints, allocatable ...)."""
        if self.moved is not None:
            self.moved.add(row)
        self.views_moved = True

    def _relayout(self, snap: Snapshot, names: list[str]) -> None:
        """The rows of ``snap``'s nodes: a node still there keeps its node info, task map and accounting at its new
        row; the pods of a node gone count nowhere, those of a node come count on it."""
        self._restore_rows()   # the task maps the last session changed, by the rows they had
        old_names, old_row, old = self.node_names, self.node_row, self.base
        row = {name: i for i, name in enumerate(names)}
        kept_new = [i for i, name in enumerate(names) if name in old_row]
        kept_old = [old_row[names[i]] for i in kept_new]
        base = NodeArrays(self.columns, allocation_matrix(self.col, [v.allocatable for v in snap.nodes]))
        for field in ("used", "releasing", "pipelined", "nonzero_requested", "task_count"):
            getattr(base, field)[kept_new] = getattr(old, field)[kept_old]
        base.idle[:] = base.allocatable - base.used
        nodes: list[NodeInfo] = []
        on_node: list[dict[str, TaskInfo]] = []
        for i, view in enumerate(snap.nodes):
            j = old_row.get(view.name)
            if j is None:
                nodes.append(NodeInfo(view, i, base))
                on_node.append({})
            else:
                node = self.nodes[j]
                node.index, node.view = i, view
                nodes.append(node)
                on_node.append(self.on_node[j])
        self.base, self.nodes, self.on_node, self.node_names, self.node_row = base, nodes, on_node, names, row
        self.node_by_name = {n.name: n for n in nodes}
        came = row.keys() - old_row.keys()
        for rec in self.pods.values():
            if rec.row >= 0:
                rec.row = row.get(old_names[rec.row], -1)
            elif came and rec.template.node_name in came:
                self._place(rec)

    def _restore_rows(self) -> None:
        """Give the node rows whose task maps changed since the last session was given them their carried maps."""
        for row in self.dirty_rows:
            tasks = self.nodes[row].tasks
            tasks.clear()
            tasks.update(self.on_node[row])
        self.dirty_rows.clear()

    # ---- what a session gets --------------------------------------------------------------------------------------

    def session_parts(self, snap: Snapshot) -> tuple[NodeArrays, dict[str, JobInfo], dict[str, TaskInfo],
                                                     JobsInPlay]:
        """The session's copy of the node accounting (every node info pointed at it, the task maps the last
        session changed given back), its jobs (PodGroups' made anew, then the groups of one), its tasks and the
        jobs that may need a look (every PodGroup's, the groups of one in :attr:`in_play`)."""
        arrays = self.base.copy()
        if self.moved is not None:
            self.moved.update(self.base.changes)
        self.base.changes.clear()
        for node in self.nodes:
            node.arrays = arrays
        self._restore_rows()
        self.session_arrays = arrays
        jobs: dict[str, JobInfo] = {}
        dirty = self.dirty_groups
        carried = self.podgroup_jobs
        for key, pg in snap.podgroups.items():
            job = carried.get(key)
            jobs[key] = self._podgroup_job(pg, snap) if job is None or key in dirty else job
        dirty.clear()
        for key in jobs.keys() & self.single_jobs.keys():
            raise Rebuild(f"PodGroup {key} has the name of a pod's group of one")
        head = list(jobs.values())
        jobs.update(self.single_jobs)
        return arrays, jobs, dict(self.tasks), JobsInPlay(jobs, head, dict(self.in_play), self._rank,
                                                          list(self.unstamped))

    def _rank(self, uid: str) -> int | None:
        """The place of the group of one ``uid`` in the pods' order (None: no such job)."""
        rec = self.by_job.get(uid)
        return None if rec is None else rec.seq

    def _podgroup_job(self, pg: PodGroupView, snap: Snapshot) -> GroupJob:
        """The PodGroup's job as a session builds it, with its members in the pods' order, made anew in place."""
        args = podgroup_job_args(pg, snap)
        job = self.podgroup_jobs.get(pg.key)
        if job is None:
            job = self.podgroup_jobs[pg.key] = GroupJob(*args)
        else:
            touch_quietly(job)   # made anew below without joining the watch list
            job.renew(*args)
        members = self.grouped.get(pg.key)
        if members:
            job.add_tasks(members.values())
        untouch(job, self.watch)
        return job


def _columns(snap: Snapshot) -> list[str]:
    names: set[str] = set()
    for n in snap.nodes:
        names.update(n.allocatable)
    for p in snap.pods:
        names.update(p.requests)
    return resource_columns(names)


@dataclass(slots=True)
class CarriedParts:
    """What a renewing session opens from, out of the carried state.  ``changed``: the jobs other than the groups
    of one carried as the previous claiming session had them, nothing set on them or their tasks since (those
    are ``SessionState.kept_jobs``); ``gone``: a superset of the jobs that session had and this one has not (None:
    not known, nothing was carried).  Every task and job is handed over untouched, with ``watch`` as its list;
    ``in_play``: the jobs an action may have anything to do with (:mod:`.inplay`)."""

    arrays: NodeArrays
    nodes: list[NodeInfo]
    node_by_name: dict[str, NodeInfo]
    node_names: list[str]
    jobs: dict[str, JobInfo]
    tasks: dict[str, TaskInfo]
    changed: set[str]
    gone: set[str] | None
    watch: list[Any]   # the carried objects touched since they were handed over (each joins it when first touched)
    in_play: JobsInPlay


def open_carried(snap: Snapshot, memo: SessionMemo, scheduler_name: str) -> CarriedParts | None:
    """The carried state brought up to ``snap``, or made anew from it, for the session holding the memo's claim;
    None when it cannot be carried: ``snap`` has no change log to follow (not from a scheduler cache), or pods
    share a uid (then the session is built pod by pod, :func:`.build.build_state`)."""
    state: CarriedState | None = memo.value(_KEY)
    memo.set_value(_KEY, None)   # taken: a failure below leaves nothing half updated for the next session
    if snap.changes is None or snap.pod_by_key is None:
        return None
    parts = None
    if state is not None:
        changes = state.follows(snap, memo, scheduler_name)
        if changes is not None:
            try:
                state.update(snap, memo, changes)
                parts = state.session_parts(snap)
            except Rebuild:
                parts = None
    carried = parts is not None and state is not None and state.claim == memo.previous_claim
    if parts is None:
        try:
            state = CarriedState.build(snap, memo, scheduler_name, state)
            parts = state.session_parts(snap)
        except Rebuild:
            return None
    assert state is not None
    if not carried:   # what moved is told against the previous claiming session's opening only
        state.moved = None
    state.claim = memo.claimed_epoch
    memo.set_value(_KEY, state)
    arrays, jobs, tasks, in_play = parts
    if carried:
        # the jobs are the PodGroups' and the groups of one; those of the latter not kept were made anew
        changed = set(snap.podgroups)
        changed.update(k for k in state.fresh if k in jobs)
        gone: set[str] | None = set(state.gone)
    else:
        changed, gone = set(jobs), None
    return CarriedParts(arrays, list(state.nodes), dict(state.node_by_name), list(state.node_names), jobs, tasks,
                        changed, gone, state.watch, in_play)


def opened_state(memo: SessionMemo) -> CarriedState | None:
    """The carried state the session holding the memo's claim opened from, if it opened from one."""
    state: CarriedState | None = memo.value(_KEY)
    return state if state is not None and state.claim == memo.claimed_epoch else None
