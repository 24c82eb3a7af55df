"""Session-level model of tasks, jobs, nodes and queues (docs/design/scheduler.md §2.2-§2.7).

A *task* is one pod, a *job* is a PodGroup (or a pod's group of one), a *queue* is a Queue object.  Node
accounting (idle/used/releasing/pipelined) lives in :class:`scheduler.framework.arrays.NodeArrays` so that every
node can be evaluated with vector arithmetic; :class:`NodeInfo` is a thin per-node view over it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, is_not, or_
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from common.objects import NodeView, PodGroupView, PodView, QueueView
from common.resources import PODS, Resources
from common.slots import slot_filler

if TYPE_CHECKING:
    from .arrays import NodeArrays
    from .status import FitErrors

__all__ = [
    "TaskStatus",
    "ALLOCATED_STATUS",
    "SCHEDULED_STATUS",
    "PREEMPTABLE_STATUS",
    "COMPLETED_STATUS",
    "PREEMPTABLE_KEY",
    "TASK_SPEC_KEY",
    "TASK_PRIORITY_KEY",
    "task_status_of",
    "Tracked",
    "untouch",
    "touch_quietly",
    "is_untouched",
    "TaskInfo",
    "JobInfo",
    "SingleJob",
    "NotedJob",
    "GroupJob",
    "NodeInfo",
    "QueueInfo",
    "compare_tasks",
    "is_best_effort",
]

PREEMPTABLE_KEY = "volcano.sh/preemptable"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_PRIORITY_KEY = "volcano.sh/task-priority"
_T = TypeVar("_T")


class TaskStatus(enum.Enum):
    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    # Members are singletons compared by identity, so the identity hash is consistent with equality; Enum's own
    # hash (of the member name) runs in Python and statuses are hashed in every task-index lookup.
    __hash__ = object.__hash__


ALLOCATED_STATUS = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
SCHEDULED_STATUS = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.SUCCEEDED, TaskStatus.FAILED})
PREEMPTABLE_STATUS = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
COMPLETED_STATUS = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
_NO_RESOURCES = Resources()
_READY_STATUS = frozenset({TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED,
                           TaskStatus.SUCCEEDED})
_VALID_STATUS = ALLOCATED_STATUS | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING}
_UNSETTLED_STATUS = frozenset({TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED, TaskStatus.BINDING})
# per status, the (ready, waiting, pending, valid, unsettled) counts of a job holding one task of that status (what
# JobInfo._tally adds for it)
_SINGLE_COUNTS = {s: (int(s in _READY_STATUS), int(s not in _READY_STATUS and s is TaskStatus.PIPELINED),
                      int(s not in _READY_STATUS and s is TaskStatus.PENDING), int(s in _VALID_STATUS),
                      int(s in _UNSETTLED_STATUS)) for s in TaskStatus}
_NO_COUNTS = (0, 0, 0, 0, 0)
# statuses whose request occupies the node (everything except Pending, Pipelined and the terminal ones)
_ON_NODE = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING,
                      TaskStatus.RELEASING, TaskStatus.UNKNOWN})


def task_status_of(pod: PodView) -> TaskStatus:
    """The pod's task status as Volcano derives it (docs/design/scheduler.md §2.4)."""
    if pod.phase == "Running":
        return TaskStatus.RELEASING if pod.deleting else TaskStatus.RUNNING
    if pod.phase == "Pending":
        if pod.deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if pod.node_name else TaskStatus.PENDING
    if pod.phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if pod.phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def is_best_effort(req: Mapping[str, int]) -> bool:
    """Volcano's ``IsEmpty``: no cpu, memory or scalar request; the implicit ``pods: 1`` does not count."""
    return all(v <= 0 for k, v in req.items() if k != PODS)


def pod_flag(pod: PodView, key: str) -> str | None:
    """An annotation of the pod, or else the label of that name (how Volcano reads its task flags)."""
    if key in pod.annotations:
        return pod.annotations[key]
    return pod.labels.get(key)


class Tracked:
    """Notes that any attribute of the object was set: a session may then take over an object the previous session
    left as it is — instead of making it anew — only while nothing set anything on it since the session before
    made it (:func:`is_untouched`, :func:`untouch`).  An object untouched with a watch list joins that list when
    it is first touched, so whoever carries it learns which objects to make anew without looking at every one."""

    __slots__ = ("_touched", "_watch")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _touched_new(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if getattr(self, "_touched", True) is False:   # an object never untouched counts as touched
            _note(self)


def _touched_new(cls: type[_T]) -> _T:
    """A new object of ``cls``, touched (as one never untouched counts): with the flag set, the hook's look-up of
    it while ``__init__`` sets each field finds it, instead of failing (a raised and caught AttributeError per
    field made an object cost several times its fields)."""
    obj = object.__new__(cls)
    object.__setattr__(obj, "_touched", True)
    return obj


def _note(obj: Tracked | NotedJob) -> None:
    """``obj`` is touched: the first time since :func:`untouch`, it joins its watch list (if it has one)."""
    if getattr(obj, "_touched", True) is False:
        watch: list[Any] | None = getattr(obj, "_watch", None)
        if watch is not None:
            watch.append(obj)
        object.__setattr__(obj, "_touched", True)


def touch_quietly(obj: Tracked | NotedJob) -> None:
    """Mark ``obj`` touched without joining its watch list: for whoever is about to make it anew in place."""
    object.__setattr__(obj, "_touched", True)


def untouch(obj: Tracked | NotedJob, watch: list[Any] | None = None) -> None:
    """Clear the note: ``obj`` is as it was made; ``watch`` (optional) is the list it joins once touched again."""
    object.__setattr__(obj, "_touched", False)
    object.__setattr__(obj, "_watch", watch)


def is_untouched(obj: Tracked | NotedJob) -> bool:
    """Nothing set an attribute of ``obj`` since :func:`untouch`."""
    return getattr(obj, "_touched", True) is False


@dataclass(slots=True, eq=False)
class TaskInfo(Tracked):
    """One pod inside a session.  Mutable: status and node change as actions work.  Every field is an immutable
    value (the vector is read-only), so setting attributes is the only way to change a task, and
    :class:`Tracked` notes it."""

    uid: str
    job: str
    pod: PodView
    resreq: Resources
    status: TaskStatus
    node_name: str
    priority: int
    preemptable: bool
    role: str
    best_effort: bool
    vector: npt.NDArray[np.int64] = field(repr=False)
    nonzero: tuple[int, int] = (0, 0)
    nominated_node: str = ""
    eviction_occurred: bool = False
    last_fit_message: str = ""

    @property
    def name(self) -> str:
        return self.pod.name

    @property
    def namespace(self) -> str:
        return self.pod.namespace

    @property
    def key(self) -> str:
        return self.pod.key

    @property
    def gated(self) -> bool:
        """Held back by a kube scheduling gate: not a scheduling candidate yet."""
        return bool((self.pod.raw.get("spec") or {}).get("schedulingGates"))

    @property
    def never_preempts(self) -> bool:
        """``preemptionPolicy: Never``: the pod waits instead of evicting anything."""
        return (self.pod.raw.get("spec") or {}).get("preemptionPolicy") == "Never"

    @classmethod
    def filled(cls, values: tuple[Any, ...], renew: TaskInfo | None = None) -> TaskInfo:
        """``TaskInfo(*values)`` (every field given, in order), or ``renew`` made so in place (noted, as setting its
        fields would note it), each slot set directly instead of through the :class:`Tracked` hook: a session
        makes a task per new pod."""
        if renew is None:
            task: TaskInfo = _touched_new(cls)
        else:
            task = renew
            _note(task)
        _fill_task(task, *values)
        return task

    @classmethod
    def from_pod(cls, pod: PodView, job: str, columns: Mapping[str, int]) -> TaskInfo:
        from .template import TaskTemplate

        return TaskTemplate.of(pod, columns).task(pod, job)


_fill_task = slot_filler(TaskInfo)
_INDEX_RE = re.compile(r"^-?\d+$")


def _name_index(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) >= 3 and _INDEX_RE.match(parts[-1]):
        return int(parts[-1])
    return None


def compare_tasks(left: TaskInfo, right: TaskInfo) -> int:
    """Volcano's default task order: name index suffix, then creation time, then uid (docs/design/scheduler.md §2.6)."""
    li, ri = _name_index(left.name), _name_index(right.name)
    if li is not None and ri is not None and li != ri:
        return -1 if li < ri else 1
    lt, rt = left.pod.creation_time or 0.0, right.pod.creation_time or 0.0
    if lt != rt:
        return -1 if lt < rt else 1
    if left.uid != right.uid:
        return -1 if left.uid < right.uid else 1
    return 0


@dataclass(slots=True, eq=False)
class JobInfo:
    """A PodGroup and its tasks, with the task-status index Volcano's readiness checks count over (docs/design/scheduler.md §2.7)."""

    uid: str
    name: str
    namespace: str
    queue: str
    priority: int
    min_available: int
    min_task_member: Mapping[str, int]
    min_resources: Resources
    podgroup: PodGroupView | None
    phase: str
    creation_time: float
    preemptable: bool = True
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    index: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    allocated: Resources = field(default_factory=Resources)
    fit_errors: dict[str, FitErrors] = field(default_factory=dict)
    job_fit_error: str = ""
    unschedulable: bool = False   # gang marked it unschedulable in this session
    schedule_start: float | None = None
    # counts the readiness checks read on every comparison, kept current by add_task/update_task_status
    _ready: int = field(default=0, init=False, repr=False)
    _waiting: int = field(default=0, init=False, repr=False)
    _valid: int = field(default=0, init=False, repr=False)
    _pending_best_effort: int = field(default=0, init=False, repr=False)
    _pending: int = field(default=0, init=False, repr=False)
    # tasks Pending, Pipelined, Allocated or Binding, and whether any task changed status since the job was made
    _unsettled: int = field(default=0, init=False, repr=False)
    _moved: bool = field(default=False, init=False, repr=False)

    def renew(self, uid: str, name: str, namespace: str, queue: str, priority: int, min_available: int,
              min_task_member: Mapping[str, int], min_resources: Resources, podgroup: PodGroupView | None, phase: str,
              creation_time: float, preemptable: bool = True) -> None:
        """Make this job what ``JobInfo(<the same arguments>)`` would be, without tasks, reusing its containers: for a
        session that takes over the objects of the previous one once nothing uses them (scheduler.framework.memo).
        The task index may keep empty buckets, which read as absent."""
        self.uid, self.name, self.namespace, self.queue, self.priority = uid, name, namespace, queue, priority
        self.min_available, self.min_task_member, self.min_resources = min_available, min_task_member, min_resources
        self.podgroup, self.phase, self.creation_time, self.preemptable = podgroup, phase, creation_time, preemptable
        self.tasks.clear()
        for bucket in self.index.values():
            bucket.clear()
        self.allocated = _NO_RESOURCES
        if self.fit_errors:
            self.fit_errors.clear()
        self.job_fit_error = ""
        self.unschedulable = False
        self.schedule_start = None
        self._ready = self._waiting = self._valid = self._pending_best_effort = self._pending = self._unsettled = 0
        self._moved = False

    @classmethod
    def single(cls, uid: str, name: str, namespace: str, queue: str, priority: int, creation_time: float,
               task: TaskInfo, renew: JobInfo | None = None) -> JobInfo:
        """The group of one of a pod without a PodGroup, holding ``task``: ``minAvailable`` 1, Pending while its
        task is, else Running.  ``renew`` is the previous such job of the pod, made anew in place (noted, as setting
        its fields would note it).  What ``SingleJob(...)`` and ``add_task(task)`` make, with each slot set directly
        instead of through the hook that notes changes: this runs for every new pod, and for most pods in a session
        made from nothing."""
        if renew is None:
            job: JobInfo = _touched_new(SingleJob)
            tasks: dict[str, TaskInfo] = {}
            index: dict[TaskStatus, dict[str, TaskInfo]] = {}
            fit_errors: dict[str, FitErrors] = {}
            members: Mapping[str, int] = {}
        else:
            job = renew
            if isinstance(job, NotedJob):
                _note(job)
            tasks, index, fit_errors, members = job.tasks, job.index, job.fit_errors, job.min_task_member
            tasks.clear()
            for old in index.values():
                old.clear()
            if fit_errors:
                fit_errors.clear()
            if members:
                members = {}
        status = task.status
        tasks[task.uid] = task
        bucket = index.get(status)
        if bucket is None:
            bucket = index[status] = {}
        bucket[task.uid] = task
        # the counts _tally(task, status, 1) gives a job without tasks
        ready, waiting, pending, valid, unsettled = _SINGLE_COUNTS[status]
        best_effort = 1 if status is TaskStatus.PENDING and task.best_effort else 0
        allocated = task.resreq if status in ALLOCATED_STATUS else _NO_RESOURCES
        phase = "Pending" if status is TaskStatus.PENDING else "Running"
        values = (uid, name, namespace, queue, priority, 1, members, _NO_RESOURCES, None, phase, creation_time, True,
                  tasks, index, allocated, fit_errors, "", False, None,
                  ready, waiting, valid, best_effort, pending, unsettled, False)
        _fill_job(job, *values)
        return job

    # ---- bookkeeping --------------------------------------------------------------------------------------------

    def _tally(self, task: TaskInfo, status: TaskStatus, delta: int) -> None:
        if status in _READY_STATUS:
            self._ready += delta
        elif status is TaskStatus.PIPELINED:
            self._waiting += delta
        elif status is TaskStatus.PENDING:
            self._pending += delta
            if task.best_effort:
                self._pending_best_effort += delta
        if status in _VALID_STATUS:
            self._valid += delta
        if status in _UNSETTLED_STATUS:
            self._unsettled += delta

    def _put(self, task: TaskInfo, status: TaskStatus) -> None:
        bucket = self.index.get(status)
        if bucket is None:
            bucket = self.index[status] = {}
        prev = bucket.get(task.uid)
        if prev is not None:
            self._tally(prev, status, -1)
        bucket[task.uid] = task
        self._tally(task, status, 1)

    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        status = task.status
        self._put(task, status)
        if status in ALLOCATED_STATUS:
            # Resources() + x has x's entries in x's order, and values are immutable: x itself will do
            self.allocated = self.allocated + task.resreq if self.allocated else task.resreq

    def add_tasks(self, tasks: Iterable[TaskInfo]) -> None:
        """``add_task`` of each task in turn, with the allocated total summed once at the end: the same entries in
        the same order, as long as no request is negative (then no entry of a partial sum drops out at zero;
        otherwise the total is summed task by task, as ``add_task`` does)."""
        total: dict[str, int] | None = None
        first: Resources | None = None
        allocated: list[TaskInfo] = []
        negative = False
        job_tasks, index = self.tasks, self.index
        # _put of each task, its _tally(task, status, 1) counted per status and added once at the end
        added: dict[TaskStatus, int] = {}
        best_effort_pending = 0
        for task in tasks:
            uid, status = task.uid, task.status
            job_tasks[uid] = task
            bucket = index.get(status)
            if bucket is None:
                bucket = index[status] = {}
            prev = bucket.get(uid)
            if prev is not None:
                self._tally(prev, status, -1)
            bucket[uid] = task
            added[status] = added.get(status, 0) + 1
            if status is TaskStatus.PENDING and task.best_effort:
                best_effort_pending += 1
            if status not in ALLOCATED_STATUS:
                continue
            allocated.append(task)
            if first is None and not self.allocated:
                first = task.resreq
                continue
            if total is None:
                total = (first or self.allocated).as_dict()
                negative = any(v < 0 for v in total.values())
            for k, v in task.resreq.as_dict().items():
                total[k] = total.get(k, 0) + v
                negative = negative or v < 0
        for status, n in added.items():
            ready, waiting, pending, valid, unsettled = _SINGLE_COUNTS[status]
            self._ready += n * ready
            self._waiting += n * waiting
            self._pending += n * pending
            self._valid += n * valid
            self._unsettled += n * unsettled
        if best_effort_pending:
            self._pending_best_effort += best_effort_pending
        if negative:
            for task in allocated:
                self.allocated = self.allocated + task.resreq if self.allocated else task.resreq
        elif total is not None:
            self.allocated = Resources(total)
        elif first is not None:
            self.allocated = first

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move ``task`` to ``status``: the index, counts and allocated total changed by what the move changes
        (on a job that notes changes every field set costs a call, so only those that change are set)."""
        if not self._moved:
            self._moved = True
        uid, old, index = task.uid, task.status, self.index
        bucket = index.get(old)
        prev = bucket.pop(uid, None) if bucket is not None else None
        task.status = status
        target = index.get(status)
        if target is None:
            target = index[status] = {}
        stale = target.get(uid)
        if stale is not None:
            self._tally(stale, status, -1)
        target[uid] = task
        self._shift(prev, old, task, status)
        was_on, now_on = old in ALLOCATED_STATUS, status in ALLOCATED_STATUS
        if was_on and not now_on:
            self.allocated = self.allocated - task.resreq
        elif now_on and not was_on:
            self.allocated = self.allocated + task.resreq if self.allocated else task.resreq

    def _shift(self, prev: TaskInfo | None, old: TaskStatus, task: TaskInfo, status: TaskStatus) -> None:
        """``_tally(prev, old, -1)`` (when ``prev`` was indexed) and ``_tally(task, status, 1)``, each count set
        once and only when it changes."""
        r0, w0, p0, v0, u0 = _SINGLE_COUNTS[old] if prev is not None else _NO_COUNTS
        r1, w1, p1, v1, u1 = _SINGLE_COUNTS[status]
        if r1 != r0:
            self._ready += r1 - r0
        if w1 != w0:
            self._waiting += w1 - w0
        if p1 != p0:
            self._pending += p1 - p0
        if v1 != v0:
            self._valid += v1 - v0
        if u1 != u0:
            self._unsettled += u1 - u0
        b0 = prev is not None and prev.best_effort and old is TaskStatus.PENDING
        b1 = task.best_effort and status is TaskStatus.PENDING
        if b1 != b0:
            self._pending_best_effort += int(b1) - int(b0)

    def count(self, *statuses: TaskStatus) -> int:
        n = 0
        for s in statuses:
            bucket = self.index.get(s)
            if bucket:
                n += len(bucket)
        return n

    def tasks_in(self, *statuses: TaskStatus) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        for s in statuses:
            bucket = self.index.get(s)
            if bucket:
                out.extend(bucket.values())
        return out

    # ---- readiness (docs/design/scheduler.md §2.7) -------------------------------------------------------------------

    @property
    def key(self) -> str:
        return self.uid

    def ready_task_num(self) -> int:
        """Bound, Binding, Running, Allocated and Succeeded tasks."""
        return self._ready

    def waiting_task_num(self) -> int:
        return self._waiting

    def pending_task_num(self) -> int:
        return self._pending

    def may_be_unsettled(self) -> bool:
        """Whether a task may be Pending, Pipelined, Allocated or Binding, or have changed status since the job was
        made (False: every task is where the session found it, none waiting for a node)."""
        return self._unsettled > 0 or self._moved

    def pending_best_effort_num(self) -> int:
        return self._pending_best_effort

    def valid_task_num(self) -> int:
        """Allocated, Binding, Bound, Running, Succeeded, Pipelined and Pending tasks."""
        return self._valid

    def is_ready(self) -> bool:
        return self._ready + self._pending_best_effort >= self.min_available

    def is_pipelined(self) -> bool:
        return self._waiting + self._ready + self._pending_best_effort >= self.min_available

    def is_starving(self) -> bool:
        return self._waiting + self._ready < self.min_available

    def is_pending(self) -> bool:
        """Not admitted yet.  A pod's group of one (no PodGroup object) starts Pending like the PodGroup Volcano's
        controller would create for it, and is admitted by enqueue (or by allocate when enqueue is not configured)."""
        return self.phase in ("", "Pending")

    def task_min_total(self) -> int:
        return sum(self.min_task_member.values())

    def _roles_permissive(self) -> bool:
        return self.min_available < self.task_min_total()

    def _role_counts(self, statuses: Iterable[TaskStatus], *, empty_pending: bool = False) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in statuses:
            for t in self.index.get(s, {}).values():
                counts[t.role] = counts.get(t.role, 0) + 1
        if empty_pending:
            for t in self.index.get(TaskStatus.PENDING, {}).values():
                if t.best_effort:
                    counts[t.role] = counts.get(t.role, 0) + 1
        return counts

    def check_task_valid(self) -> bool:
        if not self.min_task_member:   # no role minimum to check (permissive or not, the answer is yes)
            return True
        if self._roles_permissive():
            return True
        counts = self._role_counts([*ALLOCATED_STATUS, TaskStatus.SUCCEEDED, TaskStatus.PIPELINED,
                                    TaskStatus.PENDING])
        return all(counts.get(role, 0) >= m for role, m in self.min_task_member.items() if m > 0)

    def check_task_ready(self) -> bool:
        if not self.min_task_member:
            return True
        if self._roles_permissive():
            return True
        counts = self._role_counts([*ALLOCATED_STATUS, TaskStatus.SUCCEEDED], empty_pending=True)
        return all(counts.get(role, 0) >= m for role, m in self.min_task_member.items() if m > 0)

    def check_task_pipelined(self) -> bool:
        if not self.min_task_member:
            return True
        if self._roles_permissive():
            return True
        counts = self._role_counts([*ALLOCATED_STATUS, TaskStatus.SUCCEEDED, TaskStatus.PIPELINED],
                                   empty_pending=True)
        return all(counts.get(role, 0) >= m for role, m in self.min_task_member.items() if m > 0)

    def need_continue_allocating(self, failed_roles: set[str]) -> bool:
        """Whether allocation should go on after a task failed predicates (docs/design/scheduler.md §2.7)."""
        if self.min_available == len(self.tasks):
            return False
        if self.min_available < self.task_min_total():
            pending_ok = sum(1 for t in self.index.get(TaskStatus.PENDING, {}).values() if t.role not in failed_roles)
            return self.ready_task_num() + pending_ok >= self.min_available
        counts = self._role_counts([*ALLOCATED_STATUS, TaskStatus.SUCCEEDED], empty_pending=True)
        for role in failed_roles:
            m = self.min_task_member.get(role, 0)
            if m > 0 and counts.get(role, 0) < m:
                return False
        return True

    def elastic(self) -> Resources:
        return (self.allocated - self.min_resources).clamp_nonnegative()

    def inqueue_resource(self) -> Resources:
        """Positive part of minResources − allocated, over the dimensions minResources names."""
        out = {k: v - self.allocated.get(k, 0) for k, v in self.min_resources.items()}
        return Resources({k: v for k, v in out.items() if v > 0})

    def total_request(self) -> Resources:
        total = Resources()
        for t in self.tasks.values():
            total = total + t.resreq
        return total


_fill_job = slot_filler(JobInfo)


class NotedJob(JobInfo):
    """A job noting any change made to it, as :class:`Tracked` does: setting an attribute, or adding tasks.  Its
    other containers change only through its methods (``tasks`` and ``index``), or along with a task, which is
    noted (``fit_errors``: ``Session.record_fit_errors`` sets the task's message), or never (``min_task_member``).

    Enqueue stamps ``schedule_start`` on every job, every session (bypassing the note, which would cost a Python
    call per job): that is not noted either way."""

    __slots__ = ("_touched", "_watch")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _touched_new(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name != "schedule_start" and getattr(self, "_touched", True) is False:
            _note(self)

    def add_task(self, task: TaskInfo) -> None:
        _note(self)
        JobInfo.add_task(self, task)

    def add_tasks(self, tasks: Iterable[TaskInfo]) -> None:
        _note(self)
        JobInfo.add_tasks(self, tasks)


class GroupJob(NotedJob):
    """A PodGroup's job that notes changes (:class:`NotedJob`), for a session carrying it to the next."""

    __slots__ = ()


class SingleJob(NotedJob):
    """The group of one of a pod without a PodGroup (:meth:`JobInfo.single`), noting changes (:class:`NotedJob`);
    ``fit_errors`` and ``min_task_member`` are empty when it is made, and a session taking it over as it is checks
    them.  A session taking it over clears ``schedule_start`` again."""

    __slots__ = ()

    def take_over(self, priority: int) -> bool:
        """Whether the job is still what :meth:`JobInfo.single` made of its (untouched) task with this
        ``priority``: then it is made so again (``schedule_start`` cleared) and the caller may take it as it is."""
        if getattr(self, "_touched", True) or self.priority != priority or self.fit_errors or self.min_task_member:
            return False
        object.__setattr__(self, "schedule_start", None)
        return True


class NodeInfo:
    """A node inside a session: its object, tasks and a view of its accounting row in the node arrays."""

    __slots__ = ("name", "index", "view", "tasks", "arrays")

    def __init__(self, view: NodeView, index: int, arrays: NodeArrays) -> None:
        self.name = view.name
        self.index = index
        self.view = view
        self.tasks: dict[str, TaskInfo] = {}
        self.arrays = arrays

    def renew(self, view: NodeView, index: int, arrays: NodeArrays) -> NodeInfo:
        """``NodeInfo(view, index, arrays)``, made in place from a node info nothing uses any more."""
        self.name = view.name
        self.index = index
        self.view = view
        self.tasks.clear()
        self.arrays = arrays
        return self

    def _row(self, matrix: npt.NDArray[np.int64]) -> Resources:
        return self.arrays.to_resources(matrix[self.index])

    @property
    def allocatable(self) -> Resources:
        return self._row(self.arrays.allocatable)

    @property
    def idle(self) -> Resources:
        return self._row(self.arrays.idle)

    @property
    def used(self) -> Resources:
        return self._row(self.arrays.used)

    @property
    def releasing(self) -> Resources:
        return self._row(self.arrays.releasing)

    @property
    def pipelined(self) -> Resources:
        return self._row(self.arrays.pipelined)

    @property
    def future_idle(self) -> Resources:
        return self._row(self.arrays.future_idle_row(self.index))

    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.arrays.add(self.index, task.vector, task.status, task.nonzero)

    def remove_task(self, task: TaskInfo) -> None:
        if self.tasks.pop(task.uid, None) is not None:
            self.arrays.remove(self.index, task.vector, task.status, task.nonzero)

    def restatus(self, task: TaskInfo, was: TaskStatus) -> None:
        """``remove_task`` of ``task`` as it was in status ``was``, then ``add_task`` of it as it is now: the same
        task order and change log, with the accounting left as it is when both statuses count alike (Allocated
        to Binding, a bind's move: the removal and the addition would cancel out exactly)."""
        uid, i = task.uid, self.index
        present = self.tasks.pop(uid, None) is not None
        self.tasks[uid] = task
        if present and _accounted_alike(was, task.status):
            self.arrays.changes += (i, i)
            return
        if present:
            self.arrays.remove(i, task.vector, was, task.nonzero)
        self.arrays.add(i, task.vector, task.status, task.nonzero)

    def pods(self) -> list[PodView]:
        return [t.pod for t in self.tasks.values() if t.status in _ON_NODE]


# the statuses the node arrays account apart (pipelined, releasing): any other two count alike when both are on the
# node or both are off it
_APART = frozenset({TaskStatus.PIPELINED, TaskStatus.RELEASING})


def _accounted_alike(a: TaskStatus, b: TaskStatus) -> bool:
    """Whether a task adds the same to the node arrays in status ``a`` as in ``b``."""
    return a is b or (a not in _APART and b not in _APART and (a in _ON_NODE) == (b in _ON_NODE))


@dataclass(slots=True, eq=False)
class QueueInfo:
    name: str
    weight: int
    capability: Resources
    deserved: Resources
    guarantee: Resources
    reclaimable: bool
    priority: int
    parent: str
    state: str
    creation_time: float
    view: QueueView | None = None

    @property
    def uid(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        return self.state in ("", "Open")

    @classmethod
    def from_view(cls, q: QueueView) -> QueueInfo:
        created = (q.raw.get("metadata") or {}).get("creationTimestamp")
        from common.clock import parse_rfc3339

        t = parse_rfc3339(created, field=f"Queue {q.name}: metadata.creationTimestamp") if created else 0.0
        return cls(name=q.name, weight=q.weight, capability=q.capability, deserved=q.deserved,
                   guarantee=q.guarantee, reclaimable=q.reclaimable, priority=q.priority, parent=q.parent,
                   state=q.state, creation_time=t, view=q)


def on_node(status: TaskStatus) -> bool:
    return status in _ON_NODE


# the counts behind JobInfo's pending_best_effort_num, waiting_task_num and may_be_unsettled, read by C loops
_PENDING_BEST_EFFORT = attrgetter("_pending_best_effort")
_WAITING = attrgetter("_waiting")
_UNSETTLED = attrgetter("_unsettled")
_MOVED = attrgetter("_moved")
_PODGROUP = attrgetter("podgroup")


def with_backfill_work(jobs: Collection[JobInfo]) -> Iterator[JobInfo]:
    """The jobs (in order) with a pending best-effort task or a waiting one, sifted out by C loops: at steady state
    most jobs are bound groups of one, and a Python call per job is most of a walk's cost."""
    return compress(jobs, map(or_, map(_PENDING_BEST_EFFORT, jobs), map(_WAITING, jobs)))


def unsettled_or_grouped(jobs: Collection[JobInfo]) -> Iterator[JobInfo]:
    """The jobs (in order) that may be unsettled or have a PodGroup, sifted out by C loops; a superset of those
    whose ``may_be_unsettled()`` is true (a caller asks it again)."""
    unsettled = map(or_, map(_UNSETTLED, jobs), map(_MOVED, jobs))
    return compress(jobs, map(or_, unsettled, map(is_not, map(_PODGROUP, jobs), repeat(None))))
