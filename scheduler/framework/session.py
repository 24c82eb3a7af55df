"""One scheduling cycle: the snapshot turned into tasks/jobs/nodes/queues, the callbacks plugins registered, and
the tier-voting rules that combine them (docs/design/scheduler.md §2.1, §2.6).

Actions only call the session's combined entry points (``job_ready``, ``preemptable``, ``evaluate`` ...); they
never look at individual plugins.  External effects (binds, evictions) go through a :class:`SessionSink`.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from common.clock import Clock
from common.objects import NodeView
from common.resources import Resources
from scheduler.conf import SchedulerConf

from .api import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus, compare_tasks
from .arrays import NodeArrays
from .build import build_state
from .keyed import KeyedQueue, OrderedQueue
from .memo import SessionMemo
from .plugin import Arguments, Plugin, plugin_builders
from .sampling import NodeSampling
from .snapshot import DEFAULT_SCHEDULER_NAME, Snapshot
from .status import FilterResult, FitErrors, Status

if TYPE_CHECKING:
    from .evaluate import FitChecks
    from .runs import RowsKey, RowsMoved, RowsOf, RowsSince

__all__ = ["Session", "SessionSink", "EventHandler", "ValidateResult", "PriorityQueue", "ABSTAIN", "PERMIT",
           "REJECT", "ExplainRecord"]

log = logging.getLogger(__name__)

ABSTAIN, PERMIT, REJECT = 0, 1, -1
T = TypeVar("T")
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class SessionSink(Protocol):
    """Where committed operations go: the engine's binder/evictor, or a recorder for ``explain``."""

    def bind(self, task: TaskInfo, node: str) -> bool:
        """True when the binding was accepted; on False the session releases the node again."""
        ...

    def evict(self, task: TaskInfo, reason: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class EventHandler:
    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


@dataclass(frozen=True, slots=True)
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class ExplainRecord:
    """Per pending pod: filter outcome and plugin scores per node, as seen when it was considered."""

    node: str | None = None
    filter: dict[str, dict[str, str]] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    total: dict[str, float] = field(default_factory=dict)
    message: str = ""


class PriorityQueue(Generic[T]):
    """A heap ordered by a three-way comparison that may consult live plugin state (Volcano's util.PriorityQueue)."""

    def __init__(self, cmp: Callable[[T, T], int], items: Iterable[T] = ()) -> None:
        self._cmp = cmp
        self._seq = itertools.count()
        self._heap: list[_Entry[T]] = []
        for it in items:
            self.push(it)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, _Entry(item, next(self._seq), self._cmp))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def __len__(self) -> int:
        return len(self._heap)

    def empty(self) -> bool:
        return not self._heap


class _Entry(Generic[T]):
    __slots__ = ("item", "seq", "cmp")

    def __init__(self, item: T, seq: int, cmp: Callable[[T, T], int]) -> None:
        self.item, self.seq, self.cmp = item, seq, cmp

    def __lt__(self, other: _Entry[T]) -> bool:
        c = self.cmp(self.item, other.item)
        return c < 0 if c != 0 else self.seq < other.seq


Order = Callable[[Any, Any], int]
_FLAGS = {
    "job_order": "enableJobOrder", "task_order": "enableTaskOrder", "queue_order": "enableQueueOrder",
    "job_ready": "enableJobReady", "job_pipelined": "enableJobPipelined", "job_starving": "enableJobStarving",
    "job_enqueueable": "enableJobEnqueued", "job_enqueued": "enableJobEnqueued", "predicate": "enablePredicate",
    "pre_predicate": "enablePredicate", "vector_predicate": "enablePredicate", "best_node": "enableBestNode",
    "node_order": "enableNodeOrder", "vector_score": "enableNodeOrder", "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable", "preemptive": "enablePreemptive", "overused": "enabledOverused",
    "allocatable": "enabledAllocatable", "reserved_nodes": "enableReservedNodes", "target_job": "enableTargetJob",
}


class Session:
    def __init__(self, snapshot: Snapshot, conf: SchedulerConf, *, clock: Clock, sink: SessionSink,
                 scheduler_name: str = DEFAULT_SCHEDULER_NAME, seed: int = 0, explain: bool = False,
                 uid: str = "", memo: SessionMemo | None = None, renew: bool = False,
                 node_sampling: NodeSampling | None = None) -> None:
        self.snapshot = snapshot
        # allocate's and preempt's feasible-node search limit (None: every node is checked)
        self.node_sampling = node_sampling
        # what earlier sessions of the same scheduler derived from objects this snapshot still holds
        self.memo = memo if memo is not None else SessionMemo()
        self.memo.rotate()
        # whether this session takes over (renews in place) the task/job/node objects the previous one left
        self.renewing = renew and self.memo.claim(self)
        self.conf = conf
        self.clock = clock
        self.now = clock.now()
        self.sink = sink
        self.uid = uid or f"session-{int(self.now * 1000)}"
        self.scheduler_name = scheduler_name
        self.rng = np.random.default_rng(seed)
        self.action_names = set(conf.actions)
        self.explain: dict[str, ExplainRecord] | None = {} if explain else None
        self.evicted: list[str] = []
        self.fns: dict[str, dict[str, Any]] = {k: {} for k in (
            *_FLAGS, "victim_queue_order", "job_valid", "job_order_key", "vector_predicate_rows",
            "vector_score_rows", "vector_predicate_rows_key", "vector_score_rows_key", "vector_predicate_rows_moved",
            "vector_score_rows_moved", "vector_predicate_rows_since", "vector_score_rows_since")}
        self.event_handlers: list[EventHandler] = []
        self._tier_cache: dict[str, list[list[tuple[str, Any]]]] = {}
        self._enabled_cache: dict[str, list[tuple[str, Any]]] = {}
        self.plugins: dict[str, Plugin] = {}
        self.action_arguments: Mapping[str, Any] = {}
        # the nodes the current score_nodes call scores: normalising scorers (kube NormalizeScore) range over these
        self.score_mask: npt.NDArray[np.bool_] | None = None
        # that mask and how many nodes it holds, once counted (scoring_count)
        self.score_count: tuple[npt.NDArray[np.bool_], int] | None = None
        # the resource checks of this session's pod shapes, kept per shape by the evaluation (evaluate.fits_now)
        self.fit_checks: FitChecks | None = None
        self._node_views: list[NodeView] | None = None
        try:
            self._build(snapshot)
            self._open_plugins()
        except BaseException:
            self.memo.release(self)   # nobody gets this session to release it
            raise

    # ---- building ----------------------------------------------------------------------------------------------

    def _build(self, snap: Snapshot) -> None:
        built = build_state(snap, self.memo, renewing=self.renewing, scheduler_name=self.scheduler_name)
        self.arrays: NodeArrays = built.arrays
        self.nodes: list[NodeInfo] = built.nodes
        self.node_by_name: dict[str, NodeInfo] = built.node_by_name
        self.node_names: list[str] = built.node_names
        self.total_resource: Resources = built.total_resource
        self.queues: dict[str, QueueInfo] = built.queues
        self.jobs: dict[str, JobInfo] = built.jobs
        self.tasks: dict[str, TaskInfo] = built.tasks
        self.missing_queue: dict[str, str] = built.missing_queue
        # the jobs other than the groups of one taken over as the previous claiming session had them (all of them
        # unless renewing), and a superset of those it had and this one has not (None: not known)
        self.changed_jobs: set[str] = built.changed_jobs
        self.gone_jobs: set[str] | None = built.gone_jobs
        # the tasks and jobs touched since the session was built, when it was opened from the carried state (every
        # one handed over untouched joins this list when first touched); None: read each object's flag
        self.watched: list[Any] | None = built.watched
        self._in_play = built.in_play
        self._kept_jobs: set[str] | None = None

    def jobs_in_play(self) -> Sequence[JobInfo]:
        """In the order of :attr:`jobs`, the jobs an action or the session's close may have anything to do with
        (:mod:`.inplay`): every job but groups of one that are settled and stamped (their tasks neither pending,
        waiting nor moved), which every action passes over; every job when the session was not opened from the
        carried state.  What the session touched is in play as soon as it is."""
        if self._in_play is None or self.watched is None:
            return list(self.jobs.values())
        return self._in_play.jobs(self.watched)

    def unstamped_jobs(self) -> Sequence[JobInfo]:
        """The jobs that may have no ``schedule_start`` (enqueue stamps them): every job when the session was not
        opened from the carried state."""
        if self._in_play is None:
            return list(self.jobs.values())
        return self._in_play.unstamped()

    def job_queue_names(self) -> list[str]:
        """Every queue holding a job, in the order of its first job."""
        if self._in_play is None:
            return list(dict.fromkeys(job.queue for job in self.jobs.values()))
        return self._in_play.queue_names()

    @property
    def kept_jobs(self) -> set[str]:
        """The groups of one this session took over exactly as the previous claiming session had them (empty
        unless renewing): the jobs not in :attr:`changed_jobs`, worked out when first asked for (a walk over every
        job, which a reader of ``changed_jobs`` and ``gone_jobs`` spares)."""
        if self._kept_jobs is None:
            self._kept_jobs = self.jobs.keys() - self.changed_jobs
        return self._kept_jobs

    def _open_plugins(self) -> None:
        builders = plugin_builders()
        for tier in self.conf.tiers:
            for opt in tier.plugins:
                builder = builders.get(opt.name)
                if builder is None:
                    continue
                plugin = builder(Arguments(opt.arguments, weight=opt.weight))
                self.plugins[opt.name] = plugin
                plugin.on_session_open(self)

    def close(self) -> None:
        for plugin in self.plugins.values():
            plugin.on_session_close(self)

    def release(self) -> None:
        """Drop the plugins and every function and handler they registered, once nothing reads the session.

        Those refer back to the session (a closure over it, or over a plugin that holds it), so a finished session
        would otherwise live on in reference cycles, with its snapshot, tasks and nodes, until the cyclic garbage
        collector finds it; released, it is freed as soon as the last reference to it goes.
        """
        self.plugins.clear()
        for fns in self.fns.values():
            fns.clear()
        self.event_handlers.clear()
        self._tier_cache.clear()
        self._enabled_cache.clear()

    # ---- registration -------------------------------------------------------------------------------------------

    def _add(self, kind: str, plugin: str, fn: Any) -> None:
        self.fns[kind][plugin] = fn
        self._tier_cache.pop(kind, None)
        self._enabled_cache.pop(kind, None)

    def add_job_order_fn(self, plugin: str, fn: Callable[[JobInfo, JobInfo], int],
                         key: Callable[[JobInfo], Any] | None = None) -> None:
        """``key`` (optional): a job's key whose order is ``fn``'s (:mod:`.keyed`), for queues read by keys."""
        self._add("job_order", plugin, fn)
        if key is None:
            self.fns["job_order_key"].pop(plugin, None)
        else:
            self.fns["job_order_key"][plugin] = key

    def add_task_order_fn(self, plugin: str, fn: Callable[[TaskInfo, TaskInfo], int]) -> None:
        self._add("task_order", plugin, fn)

    def add_queue_order_fn(self, plugin: str, fn: Callable[[QueueInfo, QueueInfo], int]) -> None:
        self._add("queue_order", plugin, fn)

    def add_victim_queue_order_fn(self, plugin: str, fn: Callable[[QueueInfo, QueueInfo, QueueInfo], int]) -> None:
        self._add("victim_queue_order", plugin, fn)

    def add_predicate_fn(self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], list[Status]]) -> None:
        self._add("predicate", plugin, fn)

    def add_pre_predicate_fn(self, plugin: str, fn: Callable[[TaskInfo], Status | None]) -> None:
        self._add("pre_predicate", plugin, fn)

    def add_vector_predicate_fn(self, plugin: str, fn: Callable[[TaskInfo], FilterResult],
                                rows: RowsOf | None = None, rows_key: RowsKey | None = None,
                                rows_moved: RowsMoved | None = None, rows_since: RowsSince | None = None) -> None:
        """``rows`` (optional): the filter's passes on some nodes for a pod, where a node's depends on that node
        alone (:mod:`.runs`: allocate then evaluates pods of a signature seen before node by node); ``rows_key``:
        what those rows read of the pod's labels (without it, the labels are part of the pod's signature);
        ``rows_moved``: whether placing or removing a pod may change those rows for other pods on other nodes than
        its own (without it: any pod may); ``rows_since``: the nodes whose rows may have changed since the
        previous claiming session opened (without it, no kept row outlives a session)."""
        self._add("vector_predicate", plugin, fn)
        self._add_rows("vector_predicate_rows", plugin, rows, rows_key, rows_moved, rows_since)

    def _add_rows(self, kind: str, plugin: str, rows: RowsOf | None, key: RowsKey | None,
                  moved: RowsMoved | None, since: RowsSince | None) -> None:
        for table, value in ((kind, rows), (f"{kind}_key", key), (f"{kind}_moved", moved),
                             (f"{kind}_since", since)):
            if value is None or rows is None:
                self.fns[table].pop(plugin, None)
            else:
                self.fns[table][plugin] = value

    def add_node_order_fn(self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], float]) -> None:
        self._add("node_order", plugin, fn)

    def add_vector_score_fn(self, plugin: str, fn: Callable[[TaskInfo], IntArray | FloatArray],
                            rows: RowsOf | None = None, rows_key: RowsKey | None = None,
                            rows_moved: RowsMoved | None = None, rows_since: RowsSince | None = None) -> None:
        """A score for every node, already normalised and weighted as it should enter the sum: integers (kube's
        scorers) or floats (Volcano's node-order scores, summed as floats).  ``rows``, ``rows_key``,
        ``rows_moved`` and ``rows_since`` (optional): the score on some nodes for a pod (integers), as
        :meth:`add_vector_predicate_fn` takes them."""
        self._add("vector_score", plugin, fn)
        self._add_rows("vector_score_rows", plugin, rows, rows_key, rows_moved, rows_since)

    def add_best_node_fn(self, plugin: str, fn: Callable[[TaskInfo, Mapping[str, float]], str | None]) -> None:
        self._add("best_node", plugin, fn)

    def add_preemptable_fn(self, plugin: str,
                           fn: Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo] | None, int]]) -> None:
        self._add("preemptable", plugin, fn)

    def add_reclaimable_fn(self, plugin: str,
                           fn: Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo] | None, int]]) -> None:
        self._add("reclaimable", plugin, fn)

    def add_overused_fn(self, plugin: str, fn: Callable[[QueueInfo], bool]) -> None:
        self._add("overused", plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        self._add("allocatable", plugin, fn)

    def add_preemptive_fn(self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        self._add("preemptive", plugin, fn)

    def add_job_ready_fn(self, plugin: str, fn: Callable[[JobInfo], bool]) -> None:
        self._add("job_ready", plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_pipelined", plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_enqueueable", plugin, fn)

    def add_job_enqueued_fn(self, plugin: str, fn: Callable[[JobInfo], None]) -> None:
        self._add("job_enqueued", plugin, fn)

    def add_job_starving_fn(self, plugin: str, fn: Callable[[JobInfo], bool]) -> None:
        self._add("job_starving", plugin, fn)

    def add_job_valid_fn(self, plugin: str, fn: Callable[[JobInfo], ValidateResult | None]) -> None:
        self._add("job_valid", plugin, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    # ---- iteration over enabled callbacks -------------------------------------------------------------------------

    def _tiers(self, kind: str) -> list[list[tuple[str, Any]]]:
        cached = self._tier_cache.get(kind)
        if cached is None:
            cached = self._tier_cache[kind] = self._build_tiers(kind)
        return cached

    def _build_tiers(self, kind: str) -> list[list[tuple[str, Any]]]:
        flag = _FLAGS.get(kind)
        fns = self.fns[kind]
        out: list[list[tuple[str, Any]]] = []
        for tier in self.conf.tiers:
            row = []
            for opt in tier.plugins:
                if flag is not None and not opt.enabled(flag):
                    continue
                fn = fns.get(opt.name)
                if fn is not None:
                    row.append((opt.name, fn))
            out.append(row)
        return out

    def enabled(self, kind: str) -> list[tuple[str, Any]]:
        cached = self._enabled_cache.get(kind)
        if cached is None:
            cached = self._enabled_cache[kind] = [pair for row in self._tiers(kind) for pair in row]
        return cached

    # ---- orders -------------------------------------------------------------------------------------------------

    def _first_nonzero(self, kind: str, *args: Any) -> int:
        for _, fn in self.enabled(kind):
            c = int(fn(*args))
            if c != 0:
                return c
        return 0

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        c = self._first_nonzero("job_order", left, right)
        if c:
            return c
        if left.creation_time != right.creation_time:
            return -1 if left.creation_time < right.creation_time else 1
        return -1 if left.uid < right.uid else (1 if left.uid > right.uid else 0)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        c = self._first_nonzero("task_order", left, right)
        return c if c else compare_tasks(left, right)

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        c = self._first_nonzero("queue_order", left, right)
        if c:
            return c
        if left.creation_time != right.creation_time:
            return -1 if left.creation_time < right.creation_time else 1
        return -1 if left.name < right.name else (1 if left.name > right.name else 0)

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        for _, fn in self.enabled("victim_queue_order"):
            c = int(fn(left, right, preemptor))
            if c:
                return c
        return -self.queue_order(left, right)

    # ---- job votes ----------------------------------------------------------------------------------------------

    def _all_true(self, kind: str, *args: Any) -> bool:
        for _, fn in self.enabled(kind):   # a loop, not all() over a generator: asked several times per pod
            if not fn(*args):
                return False
        return True

    def job_ready(self, job: JobInfo) -> bool:
        return self._all_true("job_ready", job)

    def _vote(self, kind: str, job: JobInfo) -> bool:
        for row in self._tiers(kind):
            permitted = False
            for _, fn in row:
                v = int(fn(job))
                if v < 0:
                    return False
                if v > 0:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for _, fn in self.enabled("job_enqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        for row in self._tiers("job_starving"):
            if not row:
                continue
            for _, fn in row:
                if not fn(job):
                    return False
            return True
        return False

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        for _, fn in self.enabled("job_valid"):
            res: ValidateResult | None = fn(job)
            if res is not None and not res.passed:
                return res
        return None

    # ---- queue votes --------------------------------------------------------------------------------------------

    def overused(self, queue: QueueInfo) -> bool:
        for _, fn in self.enabled("overused"):
            if fn(queue):
                return True
        return False

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self._all_true("allocatable", queue, task)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self._all_true("preemptive", queue, task)

    # ---- victims (docs/design/scheduler.md §2.6: intersection inside a tier, an empty list passes on) ----------------

    def _victims(self, kind: str, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        for row in self._tiers(kind):
            result: dict[str, TaskInfo] | None = None
            initialised = False
            for _, fn in row:
                victims, abstain = fn(preemptor, candidates)
                if abstain == 0:
                    continue
                if not victims:
                    result, initialised = None, False
                    break
                ids = {v.uid: v for v in victims}
                if not initialised:
                    result, initialised = ids, True
                else:
                    assert result is not None
                    result = {k: v for k, v in result.items() if k in ids}
                    if not result:
                        result, initialised = None, False
            if result is not None:
                return list(result.values())
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims("reclaimable", reclaimer, candidates)

    def victim_order(self, preemptor: TaskInfo) -> Callable[[TaskInfo, TaskInfo], int]:
        """Volcano's victims priority queue order: popped first = evicted first (docs/design/scheduler.md §2.6)."""
        pjob = self.jobs.get(preemptor.job)

        def cmp(left: TaskInfo, right: TaskInfo) -> int:
            if left.job == right.job:
                return -self.task_order(left, right)
            lj, rj = self.jobs.get(left.job), self.jobs.get(right.job)
            if lj is None or rj is None:
                return -1 if lj is None else 1
            if pjob is None or (lj.queue == rj.queue):
                c = -self.job_order(lj, rj)
                return c if c else -self.task_order(left, right)
            lq, rq, pq = self.queues.get(lj.queue), self.queues.get(rj.queue), self.queues.get(pjob.queue)
            if lq is None or rq is None or pq is None:
                return 0
            return self.victim_queue_order(lq, rq, pq)
        return cmp

    # ---- statement primitives (in-session effects) -----------------------------------------------------------------

    def fire_allocate(self, task: TaskInfo) -> None:
        for h in self.event_handlers:
            if h.allocate is not None:
                h.allocate(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for h in self.event_handlers:
            if h.deallocate is not None:
                h.deallocate(task)

    def set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, status)
        else:
            task.status = status

    def place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus) -> None:
        self.set_status(task, status)
        task.node_name = node.name
        node.add_task(task)
        self.fire_allocate(task)

    def unplace(self, task: TaskInfo) -> None:
        node = self.node_by_name.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        self.set_status(task, TaskStatus.PENDING)
        # handlers still see the node the task leaves (per-node/per-group accounting needs it), as in Volcano
        self.fire_deallocate(task)
        task.node_name = ""

    def mark_releasing(self, task: TaskInfo) -> None:
        node = self.node_by_name.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        self.set_status(task, TaskStatus.RELEASING)
        if node is not None:
            node.add_task(task)
        self.fire_deallocate(task)

    def unmark_releasing(self, task: TaskInfo, status: TaskStatus = TaskStatus.RUNNING) -> None:
        node = self.node_by_name.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        self.set_status(task, status)
        if node is not None:
            node.add_task(task)
        self.fire_allocate(task)

    def dispatch(self, task: TaskInfo) -> None:
        """Send the bind for an Allocated task (status Binding in this session)."""
        node = self.node_by_name[task.node_name]
        was = task.status
        self.set_status(task, TaskStatus.BINDING)
        node.restatus(task, was)
        if not self.sink.bind(task, task.node_name):
            self.unplace(task)
            task.last_fit_message = task.last_fit_message or f"binding {task.key} to {node.name} failed"

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Allocate outside a statement (backfill) and bind the job's allocated tasks once it is ready."""
        self.place(task, node, TaskStatus.ALLOCATED)
        job = self.jobs.get(task.job)
        if job is not None and self.job_ready(job):
            for t in job.tasks_in(TaskStatus.ALLOCATED):
                self.dispatch(t)

    def evict_now(self, task: TaskInfo, reason: str) -> bool:
        self.mark_releasing(task)
        if self.sink.evict(task, reason):
            self.evicted.append(task.key)
            return True
        self.unmark_releasing(task)
        return False

    # ---- helpers for actions ------------------------------------------------------------------------------------

    def job_queue(self) -> PriorityQueue[JobInfo]:
        return PriorityQueue(self.job_order)

    def settled_job_queue(self) -> OrderedQueue[JobInfo]:
        """A job queue for a caller that changes a job only while it is out of the queue: read by keys when every
        enabled job-order plugin gives one (the same order, :mod:`.keyed`), else :meth:`job_queue`."""
        keys = self.fns["job_order_key"]
        parts = [keys.get(name) for name, _ in self.enabled("job_order")]
        if any(k is None for k in parts):
            return self.job_queue()
        fns: list[Callable[[JobInfo], Any]] = [k for k in parts if k is not None]
        if len(fns) == 3:   # the default conf's priority, gang and drf: the same tuple without a list per push
            k0, k1, k2 = fns
            return KeyedQueue(lambda job: (k0(job), k1(job), k2(job), job.creation_time, job.uid))
        return KeyedQueue(lambda job: (*[k(job) for k in fns], job.creation_time, job.uid))

    def task_queue(self, tasks: Iterable[TaskInfo] = ()) -> PriorityQueue[TaskInfo]:
        return PriorityQueue(self.task_order, tasks)

    def queue_queue(self) -> PriorityQueue[QueueInfo]:
        return PriorityQueue(self.queue_order)

    def sorted_tasks(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        return sorted(tasks, key=functools.cmp_to_key(self.task_order))

    def scoring_mask(self) -> npt.NDArray[np.bool_]:
        """The nodes the current ``score_nodes`` call scores (every node outside one), for kube's NormalizeScore."""
        mask = self.score_mask
        if mask is None or len(mask) != len(self.nodes):
            return np.ones(len(self.nodes), dtype=np.bool_)
        return mask

    def scoring_count(self) -> int:
        """How many nodes :meth:`scoring_mask` holds: counted once per mask (the scorers of a pod each ask)."""
        mask = self.score_mask
        if mask is None or len(mask) != len(self.nodes):
            return len(self.nodes)
        kept = self.score_count
        if kept is None or kept[0] is not mask:
            kept = self.score_count = (mask, int(np.count_nonzero(mask)))
        return kept[1]

    def node_views(self) -> list[NodeView]:
        """The nodes' views in node order: the snapshot's node list, from which the session's nodes are made
        position by position (not a list made anew: a pass over every node); shared between callers, so
        read-only."""
        views = self._node_views
        if views is None or len(views) != len(self.nodes):
            nodes = self.snapshot.nodes
            views = self._node_views = nodes if len(nodes) == len(self.nodes) else [n.view for n in self.nodes]
        return views

    def record_fit_errors(self, task: TaskInfo, errors: FitErrors) -> None:
        job = self.jobs.get(task.job)
        if job is not None:
            job.fit_errors[task.uid] = errors
        task.last_fit_message = errors.message()
        if self.explain is not None:
            rec = self.explain.setdefault(task.key, ExplainRecord())
            rec.message = task.last_fit_message
