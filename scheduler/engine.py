"""The scheduler: cache → session → actions → binder → write-back, once per period (docs/design/scheduler.md §2.1).

``Scheduler.run_once()`` is what the daemon loops over, what the simulator calls on its simulated clock, and what
the wire tests drive against the kube emulator.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from common.clock import Clock
from common.cluster import Cluster
from common.objects import NodeMetricView
from scheduler.batch.writeback import podgroup_phase_after
from scheduler.conf import ConfHolder, SchedulerConf
from scheduler.framework.api import TaskStatus
from scheduler.framework.memo import SessionMemo
from scheduler.framework.plugin import actions
from scheduler.framework.sampling import NodeSampling
from scheduler.framework.session import Session
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME, Snapshot
from scheduler.loadaware.freshness import NodeMetricFreshness

from .binder import Binder, EventLimiter
from .cache import SchedulerCache
from .gcpacing import CollectorPacing
from .writeback import WriteBack, WriteBackStats, pending_message

__all__ = ["Scheduler", "SessionResult", "SchedulerMetrics"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SessionResult:
    placements: dict[str, str | None] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    bind_failures: dict[str, str] = field(default_factory=dict)
    pending_messages: dict[str, str] = field(default_factory=dict)
    podgroup_phases: dict[str, str] = field(default_factory=dict)
    duration_seconds: float = 0.0
    writeback: WriteBackStats | None = None


@dataclass(frozen=True, slots=True)
class _Quiet:
    """A session that found nothing to do: no pod left pending or bound, nothing evicted, every PodGroup Running or
    Completed.  While the cache holds what that session's snapshot held (``generation``) and the conf is the same
    object, another session would find nothing to do either, so none is opened; the freshness gauges still follow
    the clock from the nodes and NodeMetrics it saw."""

    generation: int
    conf: SchedulerConf
    node_names: Sequence[str]
    node_metrics: Mapping[str, NodeMetricView]


_SETTLED_PHASES = frozenset({"Running", "Completed"})
# the statuses of a task reported as left pending (placement None, with its message)
_REPORTED_PENDING = frozenset({TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED})


class SchedulerMetrics:
    """Declared once per scheduler instance, in its own registry (no global state between instances)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.session_seconds = Histogram("loadwise_scheduler_session_duration_seconds",
                                         "Wall time of one scheduling session", registry=r,
                                         buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
        self.attempts = Counter("loadwise_scheduler_schedule_attempts_total",
                                "Pending pods considered, by result", ["result"], registry=r)
        self._attempt_results: dict[str, Counter] = {}
        self.evictions = Counter("loadwise_scheduler_evictions_total", "Preemption/reclaim evictions accepted",
                                 registry=r)
        self.bind_failures = Counter("loadwise_scheduler_bind_failures_total", "Bindings rejected by the API",
                                     registry=r)
        self.pending = Gauge("loadwise_scheduler_pending_pods", "Pods left pending after the last session",
                             registry=r)
        self.is_leader = Gauge("loadwise_scheduler_leader", "1 while this replica holds the lease", registry=r)
        self.conf_reload_errors = Counter("loadwise_scheduler_conf_reload_errors_total",
                                          "Scheduler conf files rejected (the previous conf kept running)",
                                          registry=r)
        self.freshness = NodeMetricFreshness(r)
        self.queue_allocated = Gauge("loadwise_scheduler_queue_allocated", "Resources allocated to a queue",
                                     ["queue", "resource"], registry=r)

    def attempt(self, result: str) -> Counter:
        """The ``schedule_attempts_total`` child of ``result`` (made on first use, then kept: ``labels()`` is slow)."""
        child = self._attempt_results.get(result)
        if child is None:
            child = self._attempt_results[result] = self.attempts.labels(result)
        return child


class Scheduler:
    def __init__(self, cluster: Cluster, conf: SchedulerConf | ConfHolder, *, clock: Clock,
                 scheduler_name: str = DEFAULT_SCHEDULER_NAME, seed: int = 0,
                 metrics: SchedulerMetrics | None = None, sleep: Callable[[float], None] = time.sleep,
                 write_back: bool = True, node_sampling: NodeSampling | None = None,
                 gc_pacing: CollectorPacing | None = None) -> None:
        self.cluster = cluster
        # Volcano's feasible-node search limit and its rotating start, kept from session to session
        self.node_sampling = node_sampling if node_sampling is not None else NodeSampling()
        self.holder = conf if isinstance(conf, ConfHolder) else None
        self._conf = conf if isinstance(conf, SchedulerConf) else None
        self.clock = clock
        self.scheduler_name = scheduler_name
        self.seed = seed
        self.sessions = 0
        self.metrics = metrics or SchedulerMetrics()
        self.cache = SchedulerCache(cluster, clock)
        self.events = EventLimiter(cluster, clock.now)
        self.binder = Binder(cluster, self.cache, self.events, sleep=sleep)
        self.writeback = WriteBack(cluster, self.events) if write_back else None
        # derived values sessions reuse for objects the cache did not replace (see scheduler.framework.memo)
        self.memo = SessionMemo()
        # the daemon's: freezes what outlives each session (scheduler.gcpacing); None leaves the collector alone
        self.gc_pacing = gc_pacing
        self._started = False
        self._quiet: _Quiet | None = None

    @property
    def conf(self) -> SchedulerConf:
        if self.holder is not None:
            return self.holder.conf
        assert self._conf is not None
        return self._conf

    def start(self) -> None:
        if not self._started:
            self.cache.start()
            self._started = True
            if self.gc_pacing is not None:
                self.gc_pacing.checkpoint()   # the objects the informers' first list made live on

    def stop(self) -> None:
        self.cache.stop()
        self._started = False
        if self.gc_pacing is not None:
            self.gc_pacing.stop()

    def open_session(self, snapshot: Snapshot | None = None, *, explain: bool = False,
                     renew: bool = False) -> Session:
        """A session over the cache's snapshot (or ``snapshot``).  ``renew``: it may take over the task/job/node
        objects of the previous session; the caller must then ``self.memo.release`` it once nothing reads it."""
        self._reload_conf()
        snap = snapshot if snapshot is not None else self.cache.snapshot()
        self.sessions += 1
        return Session(snap, self.conf, clock=self.clock, sink=self.binder, scheduler_name=self.scheduler_name,
                       seed=self.seed + self.sessions, explain=explain, uid=f"session-{self.sessions}",
                       memo=self.memo, renew=renew, node_sampling=self.node_sampling)

    def _reload_conf(self) -> None:
        if self.holder is not None:
            rejected = self.holder.rejected
            self.holder.maybe_reload()
            if self.holder.rejected > rejected:  # once per rejected file, not once per session while it stays
                self.metrics.conf_reload_errors.inc(self.holder.rejected - rejected)

    def run_once(self) -> SessionResult:
        """One session, or none when nothing changed since one that found nothing to do (:class:`_Quiet`)."""
        self.start()
        t0 = time.perf_counter()
        self.binder.reset()
        self._reload_conf()
        quiet = self._quiet
        if quiet is not None and quiet.conf is self.conf and self.cache.unchanged_since(quiet.generation):
            return self._skip(quiet, t0)
        self._quiet = None
        generation = self.cache.generation   # read before the snapshot: a change in between only costs a session
        ssn = self.open_session(renew=True)
        try:
            result = self._run(ssn, t0)
            if self._settled(result):
                self._quiet = _Quiet(generation, ssn.conf, ssn.node_names, ssn.snapshot.node_metrics)
            return result
        finally:
            # the result holds no task/job object: the next session may renew them
            self.memo.release(ssn)
            ssn.release()
            if self.gc_pacing is not None:
                self.gc_pacing.checkpoint()

    def _skip(self, quiet: _Quiet, t0: float) -> SessionResult:
        """The session not opened: it counts (its seed is used up, as an opened one's would be) and is timed."""
        self.sessions += 1
        self.metrics.freshness.update(quiet.node_names, quiet.node_metrics, self.clock.now(),
                                      self._expiration(quiet.conf))
        result = SessionResult(duration_seconds=time.perf_counter() - t0)
        self.metrics.session_seconds.observe(result.duration_seconds)
        return result

    @staticmethod
    def _settled(result: SessionResult) -> bool:
        return not (result.placements or result.evictions or result.bind_failures) and all(
            phase in _SETTLED_PHASES for phase in result.podgroup_phases.values())

    def _run(self, ssn: Session, t0: float) -> SessionResult:
        self._update_freshness(ssn)
        registry = actions()
        for name in ssn.conf.actions:
            registry[name]().execute(ssn)
        ssn.close()
        result = SessionResult()
        if self.writeback is not None:
            result.writeback = self.writeback.write(ssn)
        stats = self.binder.reset()
        bound = dict(stats.bound)
        pending = scheduled = 0
        for job in ssn.jobs_in_play():   # the others are settled groups of one: nothing to report
            # only a task left Pending/Pipelined/Allocated, or bound in this session (Binding), is reported
            if job.may_be_unsettled():
                for task in job.tasks.values():
                    pod = task.pod
                    if pod.node_name or pod.terminal:
                        continue
                    key = pod.key
                    if key in bound:
                        result.placements[key] = bound[key]
                        scheduled += 1
                    elif task.status in _REPORTED_PENDING:
                        result.placements[key] = None
                        result.pending_messages[key] = pending_message(ssn, job, task)[1]
                        pending += 1
            if job.podgroup is not None:
                result.podgroup_phases[job.uid] = podgroup_phase_after(job).value
        # the attempts counted once per session, not once per pod
        if scheduled:
            self.metrics.attempt("scheduled").inc(scheduled)
        if pending:
            self.metrics.attempt("unschedulable").inc(pending)
        result.evictions = list(ssn.evicted)
        result.bind_failures = dict(stats.failed)
        self.metrics.evictions.inc(len(ssn.evicted))
        self.metrics.bind_failures.inc(len(stats.failed))
        self.metrics.pending.set(pending)
        result.duration_seconds = time.perf_counter() - t0
        self.metrics.session_seconds.observe(result.duration_seconds)
        return result

    @staticmethod
    def _expiration(conf: SchedulerConf) -> int:
        opt = conf.plugin("loadaware")
        if opt is not None:
            raw = opt.arguments.get("nodeMetricExpirationSeconds")
            if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
                return raw
        return 180

    def _update_freshness(self, ssn: Session) -> None:
        self.metrics.freshness.update(ssn.node_names, ssn.snapshot.node_metrics, ssn.now, self._expiration(ssn.conf))

    def run_forever(self, stop: threading.Event, *, period: float = 1.0,
                    is_leader: Callable[[], bool] = lambda: True) -> None:
        """One session per period; a slow session delays the next rather than overlapping it."""
        self.start()
        while not stop.is_set():
            started = time.monotonic()
            if is_leader():
                self.metrics.is_leader.set(1)
                try:
                    self.run_once()
                except Exception:   # a failing session must not kill the daemon; the next one starts afresh
                    log.exception("scheduling session failed")
            else:
                self.metrics.is_leader.set(0)
            stop.wait(max(0.0, period - (time.monotonic() - started)))
